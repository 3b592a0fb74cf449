package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestMatrixUpdatePythonPackaging is issue 43's items 10-12 through the
// CLI: the torch page holds an epoch release and a link whose name is not
// a wheel name, and the new release's metadata pins with markers the old
// regular expression misread. The run reads the page (warning about the
// one link), and the overlay resolves to the Linux x86_64 pins.
func TestMatrixUpdatePythonPackaging(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ix := newTorchIndex(t, db)
	nt := db.Torch[0]
	version := fmt.Sprintf("%d.%d.0", nt.Version.Major(), nt.Version.Minor()+1)
	v := nt.Variants[len(nt.Variants)-1]
	tag, cu := fmt.Sprintf("cu%d%d", v.CUDA.Major(), v.CUDA.Minor()), fmt.Sprintf("cu%d", v.CUDA.Major())
	ix.add("torch", version, tag,
		"nvidia-cudnn-"+cu+`==9.40.0.1; sys_platform == "linux" or sys_platform == "win32"`,       // kept
		"nvidia-nccl-"+cu+`==2.40.1; "x86_64" == platform_machine`,                                // kept
		"nvidia-cudnn-"+cu+`==1.0.0.1; os_name == "nt"`,                                           // dropped: Windows
		"nvidia-nccl-"+cu+`==9.9.9; platform_machine == "aarch64" and platform_system == "Linux"`) // dropped: aarch64 only
	ix.add("torchvision", "0.99.0", tag, "torch=="+version)
	ix.add("torchaudio", "2.99.0", tag, "torch=="+version)
	ix.add("torch", "1!"+version, tag) // an epoch: a valid wheel name, not a release the matrix holds
	const junk = "torch-2.7.1-cp313-.whl"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		ix.serve(rec, r)
		body := rec.Body.String()
		if r.URL.Path == "/whl/torch/" {
			body = strings.Replace(body, "</body>", `<a href="/whl/`+junk+`">junk</a></body>`, 1)
		}
		w.WriteHeader(rec.Code)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)

	file := filepath.Join(t.TempDir(), "upstream.yaml")
	_, errOut, code := run(t, "matrix", "update", "--only", "torch", "--torch-index-url", srv.URL+"/whl", "--file", file)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "warning: "+srv.URL+"/whl/torch/: skipped") || !strings.Contains(errOut, junk) {
		t.Errorf("stderr does not warn about %s:\n%s", junk, errOut)
	}
	out, errOut, code := run(t, "matrix", "resolve", "--matrix-file", file, "--torch", version, "-o", "json")
	if code != 0 {
		t.Fatalf("resolve with the overlay: exit %d: %s", code, errOut)
	}
	var s struct {
		Frameworks map[string]struct{ Version, CuDNN, NCCL string } `json:"frameworks"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if fw := s.Frameworks["torch"]; fw.Version != version || fw.CuDNN != "9.40.0.1" || fw.NCCL != "2.40.1" {
		t.Errorf("resolved torch %+v, want %s with cuDNN 9.40.0.1 and NCCL 2.40.1 (the Linux x86_64 pins)", fw, version)
	}
}

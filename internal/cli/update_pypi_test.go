package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// pypiTorchPage serves PyPI's simple page for torch on loopback in the
// real layout (no local label, absolute hrefs under /packages/, PEP 658
// data-core-metadata with the .metadata file beside each wheel): one
// Linux x86_64 wheel per release with the given Requires-Dist lines.
func pypiTorchPage(t *testing.T, releases map[string][]string) string {
	t.Helper()
	md := map[string]string{}
	var names []string
	for v, reqs := range releases {
		name := fmt.Sprintf("torch-%s-cp312-cp312-manylinux_2_28_x86_64.whl", v)
		body := fmt.Sprintf("Metadata-Version: 2.4\nName: torch\nVersion: %s\n", v)
		for _, r := range reqs {
			body += "Requires-Dist: " + r + "\n"
		}
		md["/packages/ab/cd/"+name+".metadata"] = body
		names = append(names, name)
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := md[r.URL.Path]; ok {
			fmt.Fprint(w, b)
			return
		}
		if r.URL.Path != "/simple/torch/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n")
		for _, n := range names {
			sum := sha256.Sum256([]byte(md["/packages/ab/cd/"+n+".metadata"]))
			h := hex.EncodeToString(sum[:])
			fmt.Fprintf(w, "    <a href=\"%s/packages/ab/cd/%s#sha256=%s\" data-requires-python=\"&gt;=3.10.0\" data-dist-info-metadata=\"sha256=%s\" data-core-metadata=\"sha256=%s\">%s</a><br />\n",
				srv.URL, n, strings.Repeat("ab", 32), h, h, n)
		}
		fmt.Fprint(w, "  </body>\n</html>\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMatrixUpdatePyPIDefault: matrix update --only torch-pypi reads which
// variant PyPI serves from the wheel's core metadata. --check lists a
// release whose row flags no variant (exit 1); the overlay written with
// --file flags it, and matrix list torch --matrix-file shows it; a release
// that agrees is not listed.
func TestMatrixUpdatePyPIDefault(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var agree string
	var none matrix.Torch
	for _, r := range db.Torch {
		flagged := false
		for _, v := range r.Variants {
			if v.PyPI && v.CUDA.Major() == 12 && agree == "" {
				agree = r.Version.String() + " cu" + matrix.CUDATag(v.CUDA) + " " + v.CUDA.Trunc(2).String()
			}
			flagged = flagged || v.PyPI
		}
		if !flagged && none.Version.IsZero() && r.Variants[0].CUDA.Major() == 12 {
			none = r
		}
	}
	f := strings.Fields(agree)
	if len(f) != 3 || none.Version.IsZero() {
		t.Fatal("the built-in data needs a release flagging a CUDA 12 variant as PyPI's and one flagging none (first variant CUDA 12)")
	}
	av, atag, acuda := f[0], f[1], f[2]
	nv, ncuda := none.Version.String(), none.Variants[0].CUDA.Trunc(2)
	ntag := "cu" + matrix.CUDATag(ncuda)
	url := pypiTorchPage(t, map[string][]string{
		nv: {`nvidia-cuda-runtime-cu12==` + ncuda.String() + `.105; platform_system == "Linux" and platform_machine == "x86_64"`},
		av: {`nvidia-cuda-runtime-cu12==` + acuda + `.1; platform_system == "Linux"`},
	})
	base := []string{"matrix", "update", "--only", "torch-pypi", "--pypi-url", url}
	out, errOut, code := run(t, append(base, "--check")...)
	if code != 1 || !strings.Contains(out, "torch-pypi: torch "+nv+": PyPI serves "+ntag) || strings.Contains(out, "torch "+av+":") {
		t.Fatalf("--check: exit %d, out %q, err %q; want exit 1 listing torch %s only (%s agrees on %s)", code, out, errOut, nv, av, atag)
	}
	file := filepath.Join(t.TempDir(), "o.yaml")
	if _, errOut, code := run(t, append(base, "--file", file)...); code != 0 {
		t.Fatalf("--file: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "pypi: true") || !strings.Contains(string(b), "nvidia-cuda-runtime-cu12=="+ncuda.String()+".105") {
		t.Fatalf("overlay lacks the flag or its note:\n%s", b)
	}
	out, errOut, code = run(t, "matrix", "list", "torch", "--matrix-file", file)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	release := ""
	for l := range strings.SplitSeq(out, "\n") {
		if l != "" && l[0] != ' ' {
			release = strings.Fields(l)[0]
		}
		if release == nv && strings.Contains(l, " "+ntag+" ") {
			if !strings.Contains(l, " default ") {
				t.Errorf("matrix list torch does not mark %s %s as PyPI's default: %q", nv, ntag, l)
			}
			return
		}
	}
	t.Errorf("no %s %s line in:\n%s", nv, ntag, out)
}

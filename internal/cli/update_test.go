package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/matrix"
)

// torchIndex serves PyTorch's all-variants pages on loopback in the real
// layout (hrefs /whl/cuXYZ/NAME-VER%2BcuXYZ-….whl#sha256=… with
// data-dist-info-metadata and data-core-metadata, the .metadata file
// beside each wheel), holding every torch row of db plus extra wheels.
type torchIndex struct {
	srv      *httptest.Server
	pages    map[string][]string // project -> wheel file names
	metadata map[string]string   // "/whl/cuXYZ/NAME" -> METADATA
	lie      map[string]bool     // wheel names whose page hash is wrong
}

func newTorchIndex(t *testing.T, db *matrix.DB) *torchIndex {
	ix := &torchIndex{pages: map[string][]string{}, metadata: map[string]string{}, lie: map[string]bool{}}
	for _, r := range db.Torch {
		for _, v := range r.Variants {
			ix.add("torch", r.Version.String(), fmt.Sprintf("cu%d%d", v.CUDA.Major(), v.CUDA.Minor()))
		}
	}
	ix.srv = httptest.NewServer(http.HandlerFunc(ix.serve))
	t.Cleanup(ix.srv.Close)
	return ix
}

func (ix *torchIndex) add(project, version, tag string, requires ...string) {
	name := fmt.Sprintf("%s-%s+%s-cp313-cp313-manylinux_2_28_x86_64.whl", project, version, tag)
	md := fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s+%s\n", project, version, tag)
	for _, r := range requires {
		md += "Requires-Dist: " + r + "\n"
	}
	ix.pages[project] = append(ix.pages[project], name)
	ix.metadata["/whl/"+tag+"/"+name] = md + "\nDescription.\n"
}

func (ix *torchIndex) serve(w http.ResponseWriter, r *http.Request) {
	if md, ok := ix.metadata[strings.TrimSuffix(r.URL.Path, ".metadata")]; ok && strings.HasSuffix(r.URL.Path, ".metadata") {
		fmt.Fprint(w, md)
		return
	}
	names, ok := ix.pages[strings.Trim(strings.TrimPrefix(r.URL.Path, "/whl/"), "/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	fmt.Fprint(w, "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n")
	for _, n := range names {
		tag, _, _ := strings.Cut(strings.Split(n, "+")[1], "-")
		sum := sha256.Sum256([]byte(ix.metadata["/whl/"+tag+"/"+n]))
		h := hex.EncodeToString(sum[:])
		if ix.lie[n] {
			h = strings.Repeat("0", 64)
		}
		fmt.Fprintf(w, "    <a href=\"/whl/%s/%s#sha256=%s\" data-dist-info-metadata=\"sha256=%s\" data-core-metadata=\"sha256=%s\">%s</a><br/>\n",
			tag, strings.ReplaceAll(n, "+", "%2B"), strings.Repeat("ab", 32), h, h, n)
	}
	fmt.Fprint(w, "  </body>\n</html>\n")
}

// addRelease adds a torch release two CUDA variants of the newest row
// and its companions; it returns the version and the variants' tags.
func (ix *torchIndex) addRelease(db *matrix.DB) (string, []string) {
	nt := db.Torch[0]
	version := fmt.Sprintf("%d.%d.0", nt.Version.Major(), nt.Version.Minor()+1)
	var tags []string
	for _, v := range []matrix.TorchVariant{nt.Variants[0], nt.Variants[len(nt.Variants)-1]} {
		tag := fmt.Sprintf("cu%d%d", v.CUDA.Major(), v.CUDA.Minor())
		tags = append(tags, tag)
		cu := fmt.Sprintf("cu%d", v.CUDA.Major())
		ix.add("torch", version, tag, "nvidia-cudnn-"+cu+"==9.40.0.1; platform_system == \"Linux\"", "nvidia-nccl-"+cu+"==2.40.1; platform_system == \"Linux\"")
		ix.add("torchvision", "0.99.0", tag, "torch=="+version)
		ix.add("torchaudio", "2.99.0", tag, "torch=="+version)
	}
	return version, tags
}

func TestMatrixUpdate(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ix := newTorchIndex(t, db)
	base := []string{"matrix", "update", "--only", "torch", "--torch-index-url", ix.srv.URL + "/whl"}
	version, tags := ix.addRelease(db)

	// --check lists exactly the added release and exits 1.
	out, errOut, code := run(t, append(base, "--check")...)
	if code != ExitFailed {
		t.Fatalf("--check exit %d, want 1\n%s", code, errOut)
	}
	want := fmt.Sprintf("torch: torch %s (%s) (%s/whl/torch/)\n", version, strings.Join(tags, ", "), ix.srv.URL)
	if out != want {
		t.Errorf("--check stdout = %q, want %q", out, want)
	}
	for _, s := range []string{"torch: reading " + ix.srv.URL + "/whl/torch/", "could not fill: torch " + version + " " + tags[0] + " status", "upstream has 1 rows the matrix lacks"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}

	// -o json says the same as JSON, and --check still exits 1.
	out, errOut, code = run(t, append(base, "--check", "-o", "json")...)
	var rep updateReport
	if err := json.Unmarshal([]byte(out), &rep); code != ExitFailed || err != nil || len(rep.Found) != 1 || rep.Found[0].What != fmt.Sprintf("torch %s (%s)", version, strings.Join(tags, ", ")) || len(rep.Unfilled) == 0 || rep.Incomplete == nil {
		t.Errorf("--check -o json: exit %d, %v, %+v\n%s", code, err, rep, errOut)
	}
	checkJSONContract(t, "matrix update --check -o json", "update-report.schema.json", out)

	// --file writes an overlay that resolve then uses; -o FILE, what
	// --file was before issue 46, is refused naming --file.
	file := filepath.Join(t.TempDir(), "upstream.yaml")
	if out, errOut, code := run(t, append(base, "-o", file)...); code != ExitInvalid || !strings.Contains(errOut, "-o is the output format (yaml or json), not the overlay file; write the overlay with --file "+file) || out != "" {
		t.Errorf("-o FILE: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("-o FILE wrote %s", file)
	}
	if _, errOut, code := run(t, append(base, "--file", file)...); code != 0 {
		t.Fatalf("--file exit %d: %s", code, errOut)
	}
	out, errOut, code = run(t, "matrix", "resolve", "--matrix-file", file, "--torch", version, "-o", "json")
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
		t.Errorf("resolved torch %+v", fw)
	}
	// With the overlay loaded, --check has nothing to report.
	out, errOut, code = run(t, append(base, "--check", "--matrix-file", file)...)
	if code != 0 || !strings.Contains(out, "the matrix has everything upstream publishes") {
		t.Errorf("--check with the overlay: exit %d\n%s%s", code, out, errOut)
	}

	// Without --file the overlay goes to stdout.
	out, _, code = run(t, base...)
	if code != 0 || !strings.Contains(out, "- version: "+version) {
		t.Errorf("stdout overlay: exit %d\n%s", code, out)
	}
}

func TestMatrixUpdateRefuses(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ix := newTorchIndex(t, db)
	version, tags := ix.addRelease(db)
	bad := fmt.Sprintf("torch-%s+%s-cp313-cp313-manylinux_2_28_x86_64.whl", version, tags[1])
	ix.lie[bad] = true
	file := filepath.Join(t.TempDir(), "upstream.yaml")
	_, errOut, code := run(t, "matrix", "update", "--only", "torch", "--torch-index-url", ix.srv.URL+"/whl", "--file", file)
	badURL := fmt.Sprintf("%s/whl/%s/%s.metadata", ix.srv.URL, tags[1], strings.ReplaceAll(bad, "+", "%2B"))
	if code != ExitInvalid || !strings.Contains(errOut, badURL) || !strings.Contains(errOut, "sha256 does not match") {
		t.Errorf("hash mismatch: exit %d, stderr does not name %s:\n%s", code, badURL, errOut)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("-o file exists after a failed run: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 0 {
		t.Errorf("left files behind: %v", entries)
	}

	// --wheel-archs reads the wheel itself (by range requests); a wheel the
	// index lists but does not serve is an error naming it, not a row.
	delete(ix.lie, bad)
	_, errOut, code = run(t, "matrix", "update", "--only", "torch", "--torch-index-url", ix.srv.URL+"/whl", "--wheel-archs", "--file", file)
	wheelURL := fmt.Sprintf("%s/whl/%s/torch-%s%%2B%s-cp313-cp313-manylinux_2_28_x86_64.whl", ix.srv.URL, tags[0], version, tags[0])
	if code != ExitInvalid || !strings.Contains(errOut, wheelURL) || !strings.Contains(errOut, "404") {
		t.Errorf("--wheel-archs without the wheel: exit %d, stderr does not name %s:\n%s", code, wheelURL, errOut)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("--file file exists after a failed --wheel-archs run: %v", err)
	}

	_, errOut, code = run(t, "matrix", "update", "--only", "torch,conda")
	if code != ExitInvalid || !strings.Contains(errOut, `unknown upstream source "conda"`) {
		t.Errorf("--only conda: exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "matrix", "update", "--only", "torch", "--torch-index-url", "ftp://x")
	if code != ExitInvalid || !strings.Contains(errOut, "not an http(s) URL") {
		t.Errorf("ftp index: exit %d: %s", code, errOut)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "o.yaml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("content %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "o.yaml"), []byte("x")); err == nil || !strings.Contains(err.Error(), "missing/o.yaml") {
		t.Errorf("write into a missing directory: %v", err)
	}
}

// TestMatrixUpdateImagesThroughMirror lists nvidia/cuda tags through
// --registry-mirror on a loopback registry: a new CUDA release's tags are
// found, confirmed by the image's CUDA_VERSION.
func TestMatrixUpdateImagesThroughMirror(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	push := func(tag, cudaVersion string) {
		cfg, err := empty.Image.ConfigFile()
		must(t, err)
		cfg = cfg.DeepCopy()
		cfg.Architecture, cfg.OS = "amd64", "linux"
		cfg.Config.Env = []string{"CUDA_VERSION=" + cudaVersion}
		img, err := mutate.ConfigFile(empty.Image, cfg)
		must(t, err)
		ref, err := name.ParseReference(host + "/nvidia/cuda:" + tag)
		must(t, err)
		must(t, remote.Write(ref, img))
	}
	seen := map[string]bool{}
	for _, b := range db.BaseImages {
		if v := b.CUDA.String(); !seen[v] {
			seen[v] = true
			push(v+"-base-"+b.OS[0], v)
		}
	}
	newest := db.BaseImages[0].CUDA
	v := fmt.Sprintf("%d.%d.0", newest.Major(), newest.Minor()+1)
	push(v+"-base-ubuntu24.04", v)
	push(v+"-runtime-ubuntu24.04", v)

	out, errOut, code := run(t, "matrix", "update", "--only", "images", "--registry-mirror", "docker.io="+host, "--check")
	if code != ExitFailed || out != fmt.Sprintf("images: base images for CUDA %s (%s/nvidia/cuda)\n", v, host) {
		t.Errorf("--check: exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	out, errOut, code = run(t, "matrix", "update", "--only", "images", "--registry-mirror", "docker.io="+host)
	if code != 0 || !strings.Contains(out, "- cuda: "+v+"\n    os: [ubuntu24.04]\n    flavors: [base, runtime]\n") {
		t.Errorf("overlay: exit %d\n%s%s", code, out, errOut)
	}
}

// TestMatrixUpdateWrite: --write folds the new release into
// matrix/data/torch.yaml of the checkout it runs in (found from a
// subdirectory), leaves the other files and no temporary file behind, and
// the data then loads with the row; outside a checkout it is refused.
func TestMatrixUpdateWrite(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ix := newTorchIndex(t, db)
	version, _ := ix.addRelease(db)
	root := t.TempDir()
	data := filepath.Join(root, "matrix", "data")
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/gpuimg/gpuimg\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Glob("../../matrix/data/*.yaml")
	before := map[string][]byte{}
	for _, p := range src {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		before[filepath.Base(p)] = b
		if err := os.WriteFile(filepath.Join(data, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"matrix", "update", "--only", "torch", "--torch-index-url", ix.srv.URL + "/whl", "--write"}
	t.Chdir(filepath.Join(root, "docs"))
	_, errOut, code := run(t, args...)
	if code != 0 || !strings.Contains(errOut, "wrote "+filepath.Join(data, "torch.yaml")) {
		t.Fatalf("--write: exit %d\n%s", code, errOut)
	}
	entries, _ := os.ReadDir(data)
	var paths []string
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(data, e.Name()))
		if _, ok := before[e.Name()]; !ok {
			t.Errorf("left %s behind", e.Name())
		}
		if changed := !bytes.Equal(b, before[e.Name()]); changed != (e.Name() == "torch.yaml") {
			t.Errorf("%s changed: %v", e.Name(), changed)
		}
		paths = append(paths, filepath.Join(data, e.Name()))
	}
	loaded, err := matrix.Load(paths...)
	if err != nil {
		t.Fatalf("written data does not load: %v", err)
	}
	if got := loaded.Torch[0].Version.String(); got != version {
		t.Errorf("newest torch after --write is %s, want %s", got, version)
	}
	// Run again: nothing new, nothing written.
	if _, errOut, code := run(t, args...); code != 0 || !strings.Contains(errOut, "nothing written") {
		t.Errorf("second --write: exit %d\n%s", code, errOut)
	}

	// A data file that does not load: exit 2, the file and line, the fix.
	bad := filepath.Join(data, "extra.yaml")
	if err := os.WriteFile(bad, []byte("torhc: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, args...)
	if want := "gpuimg: " + bad + ": line 1: unknown key \"torhc\""; code != ExitInvalid || !strings.HasPrefix(errOut, want) || !strings.HasSuffix(errOut, "; fix the data file (format: docs/matrix-data.md)\n") {
		t.Errorf("a data file that does not load: exit %d\n%s", code, errOut)
	}

	outside := t.TempDir()
	t.Chdir(outside)
	_, errOut, code = run(t, args...)
	if want := "gpuimg: --write: " + outside + " is not inside a gpuimg checkout (no go.mod of github.com/gpuimg/gpuimg with matrix/data/ above it); run it from a clone of github.com/gpuimg/gpuimg, or write an overlay with --file FILE\n"; code != ExitInvalid || errOut != want {
		t.Errorf("outside a checkout: exit %d\n got %q\nwant %q", code, errOut, want)
	}
}

// TestMatrixUpdateCuDNNAndNCCL: --cudnn-redist-url and --nccl-redist-url
// reach a loopback copy of NVIDIA's directories (known releases are listed
// but never read); --check lists exactly the one new release of each.
func TestMatrixUpdateCuDNNAndNCCL(t *testing.T) {
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	newDNN := fmt.Sprintf("%d.%d.0", db.CuDNN[0].Version.Major(), db.CuDNN[0].Version.Minor()+1)
	newNCCL := fmt.Sprintf("%d.%d.0", db.NCCL[0].Version.Major(), db.NCCL[0].Version.Minor()+1)
	pages := map[string]string{}
	var dnn, nccl strings.Builder
	for _, r := range db.CuDNN {
		fmt.Fprintf(&dnn, "<a href=\"redistrib_%s.json\">redistrib_%s.json</a>\n", r.Version, r.Version)
	}
	fmt.Fprintf(&dnn, "<a href=\"redistrib_%s.json\">redistrib_%s.json</a>\n<a href=\"cudnn/\">cudnn/</a>\n", newDNN, newDNN)
	for _, r := range db.NCCL {
		fmt.Fprintf(&nccl, "<a href=\"v%s/\">v%s/</a>\n", r.Version, r.Version)
	}
	fmt.Fprintf(&nccl, "<a href=\"v%s/\">v%s/</a>\n", newNCCL, newNCCL)
	pages["/compute/cudnn/redist/"] = "<html><body><pre>" + dnn.String() + "</pre></body></html>"
	pages["/compute/redist/nccl/"] = "<html><body><pre>" + nccl.String() + "</pre></body></html>"
	pages["/compute/cudnn/redist/redistrib_"+newDNN+".json"] = `{"release_date": "2026-11-20", "release_label": "` + newDNN + `", "release_product": "cudnn",
  "cudnn": {"name": "NVIDIA CUDA Deep Neural Network library", "license": "cudnn", "version": "` + newDNN + `.7",
    "linux-x86_64": {"cuda12": {"relative_path": "cudnn/linux-x86_64/a.tar.xz", "sha256": "00", "md5": "00", "size": "1"},
                     "cuda13": {"relative_path": "cudnn/linux-x86_64/b.tar.xz", "sha256": "00", "md5": "00", "size": "1"}},
    "cuda_variant": ["12", "13"]}}`
	pages["/compute/redist/nccl/v"+newNCCL+"/"] = fmt.Sprintf("<html><body><pre><a href=\"nccl_%s-1+cuda13.4_x86_64.txz\">x</a>\n<a href=\"nccl_%s-1+cuda13.4_aarch64.txz\">y</a></pre></body></html>", newNCCL, newNCCL)
	var read []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read = append(read, r.URL.Path)
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, p)
	}))
	t.Cleanup(srv.Close)
	out, errOut, code := run(t, "matrix", "update", "--only", "cudnn,nccl", "--check",
		"--cudnn-redist-url", srv.URL+"/compute/cudnn/redist", "--nccl-redist-url", srv.URL+"/compute/redist/nccl")
	want := fmt.Sprintf("cudnn: cuDNN %s (%s/compute/cudnn/redist/redistrib_%s.json)\nnccl: NCCL %s (%s/compute/redist/nccl/v%s/)\n", newDNN, srv.URL, newDNN, newNCCL, srv.URL, newNCCL)
	if code != ExitFailed || out != want {
		t.Errorf("--check: exit %d\nstdout %q\nwant   %q\n%s", code, out, want, errOut)
	}
	if len(read) != 4 {
		t.Errorf("read %v; want the two listings, the new manifest and the new NCCL directory only", read)
	}
}

package testenv

import (
	"archive/zip"
	"bytes"
	"debug/elf"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJAXStackWheels builds the JAX twin and checks what makes it a twin:
// jax's METADATA pins the CUDA jaxlib for the cuda12_pip extra; that
// jaxlib lies only behind the find-links page, whose hrefs are relative
// (cuda12/jaxlib-…), and the index serves only the CPU one; jaxlib's CUDA
// modules carry DT_RPATH to nvidia/X/lib. Where pip is on the host, pip
// resolves jax[cuda12_pip]==0.4.25 from the index and the page (with
// nvidia-cudnn-cu12<9, cuDNN 8.9.7.29), and fails without the page,
// naming the jaxlib it cannot find.
func TestJAXStackWheels(t *testing.T) {
	// Not in -short: the e2e builds install the same twins.
	Require(t, "runs pip against the twin's index and find-links page", Slow)
	ctx := t.Context()
	if _, err := CC(ctx); err != nil {
		t.Skipf("the twins are built with gcc: %v", err)
	}
	if _, err := PythonIncludes(ctx); err != nil {
		t.Skipf("the twins' jaxlib modules compile against Python's headers: %v", err)
	}
	indexDir, pageDir := t.TempDir(), t.TempDir()
	if err := JAXStackWheels(ctx, indexDir, pageDir, []string{"3.11"}, 1e-6); err != nil {
		t.Fatal(err)
	}
	const cudaWheel = "jaxlib-0.4.25+cuda12.cudnn89-cp311-cp311-manylinux2014_x86_64.whl"
	if _, err := os.Stat(filepath.Join(pageDir, JAXPageDir, cudaWheel)); err != nil {
		t.Fatalf("the page's directory lacks %s: %v", cudaWheel, err)
	}
	if m, _ := filepath.Glob(filepath.Join(indexDir, "jaxlib-*+cuda*")); len(m) > 0 {
		t.Errorf("the index serves %v; JAX publishes its CUDA jaxlibs only on its find-links page", m)
	}
	if m, _ := filepath.Glob(filepath.Join(indexDir, "jaxlib-0.4.25-cp311-*.whl")); len(m) != 1 {
		t.Errorf("the index holds %v, want one CPU jaxlib 0.4.25, as PyPI", m)
	}

	jax := readWheel(t, filepath.Join(indexDir, "jax-0.4.25-py3-none-any.whl"))
	meta := string(jax["jax-0.4.25.dist-info/METADATA"])
	for _, want := range []string{
		"Requires-Dist: jaxlib==0.4.25+cuda12.cudnn89; extra == \"cuda12_pip\"\n",
		"Requires-Dist: nvidia-cudnn-cu12>=8.9.7.29; extra == \"cuda12_pip\"\n",
		"Requires-Dist: jax-cuda12-plugin==0.4.25; extra == \"cuda12\"\n",
		"Provides-Extra: cuda12_pip\n",
	} {
		if !strings.Contains(meta, want) {
			t.Errorf("jax METADATA lacks %q:\n%s", want, meta)
		}
	}

	lib := readWheel(t, filepath.Join(pageDir, JAXPageDir, cudaWheel))
	for p, depth := range map[string]string{"jaxlib/xla_extension.so": "$ORIGIN/../nvidia/cudnn/lib", "jaxlib/cuda/_solver.so": "$ORIGIN/../../nvidia/cusolver/lib"} {
		f, err := elf.NewFile(bytes.NewReader(lib[p]))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		rp, _ := f.DynString(elf.DT_RPATH)
		if len(rp) != 1 || !strings.Contains(":"+rp[0]+":", ":"+depth+":") {
			t.Errorf("%s DT_RPATH %q, want it to name %s", p, rp, depth)
		}
		if n, _ := f.ImportedLibraries(); len(n) != 0 {
			t.Errorf("%s DT_NEEDED %v: jaxlib loads CUDA with dlopen, it needs none", p, n)
		}
	}
	if _, ok := lib["jaxlib/cuda/nvvm/libdevice/libdevice.10.bc"]; !ok {
		t.Error("the CUDA jaxlib lacks jaxlib/cuda/nvvm/libdevice/libdevice.10.bc")
	}

	page, err := ServeFindLinks(pageDir)
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	index, err := ServeIndex(indexDir)
	if err != nil {
		t.Fatal(err)
	}
	defer index.Close()
	body := get(t, page.URL)
	if !strings.Contains(body, `<a href="cuda12/`+cudaWheel+`">`) {
		t.Fatalf("page %s:\n%s", page.URL, body)
	}
	if got := get(t, strings.TrimSuffix(page.URL, filepath.Base(JAXPagePath))+"cuda12/"+cudaWheel); len(got) != len(readFile(t, filepath.Join(pageDir, JAXPageDir, cudaWheel))) {
		t.Errorf("the page's href does not serve the wheel (%d bytes)", len(got))
	}

	pip, err := exec.LookPath("pip3")
	if err != nil {
		t.Log("no pip3 on PATH: pip's resolution not checked")
		return
	}
	download := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), pip, append([]string{"download", "--disable-pip-version-check", "--no-cache-dir", "-d", t.TempDir(),
			"--only-binary=:all:", "--python-version", "3.11", "--platform", "manylinux2014_x86_64", "--index-url", index.URL}, args...)...)
		cmd.Env = append(os.Environ(), "PIP_CONFIG_FILE=/dev/null")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := download("--find-links", page.URL, "jax[cuda12_pip]==0.4.25"); err != nil || !strings.Contains(out, cudaWheel) {
		t.Errorf("pip download with the page: %v\n%s", err, out)
	}
	if out, err := download("--find-links", page.URL, "jax[cuda12_pip]==0.4.25", "nvidia-cudnn-cu12<9"); err != nil || !strings.Contains(out, "nvidia_cudnn_cu12-8.9.7.29-") {
		t.Errorf("pip download with nvidia-cudnn-cu12<9 did not take cuDNN 8.9.7.29: %v\n%s", err, out)
	}
	out, err := download("jax[cuda12_pip]==0.4.25")
	if err == nil || !strings.Contains(out, "jaxlib==0.4.25+cuda12.cudnn89") {
		t.Errorf("pip download without the page succeeded or failed otherwise (%v):\n%s", err, out)
	}
}

func readWheel(t *testing.T, p string) map[string][]byte {
	t.Helper()
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = b
	}
	return out
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func get(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

package testenv

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayeredStackWheelsImport installs the twin torch stack with pip
// into a venv of the host's Python, as one pip install of the real stack
// lays it out, and imports torch through the real dynamic loader: it
// loads, the libraries carry torch's DT_RPATH (not DT_RUNPATH) and
// DT_NEEDED, and without the top-level cusparselt/lib that RPATH names,
// `import torch` fails with the loader's error for libcusparseLt.so.0.
func TestLayeredStackWheelsImport(t *testing.T) {
	// Not in -short: the e2e builds install the same twins.
	Require(t, "installs the torch twin with pip into a venv", Slow)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	ctx := t.Context()
	if _, err := CC(ctx); err != nil {
		t.Skipf("the twins are built with gcc: %v", err)
	}
	if _, err := PythonIncludes(ctx); err != nil {
		t.Skipf("the twins' torch/_C compiles against Python's headers: %v", err)
	}
	out, err := exec.CommandContext(ctx, py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatal(err)
	}
	ver := strings.TrimSpace(string(out))
	dir := t.TempDir()
	wheels := filepath.Join(dir, "wheels")
	if err := os.MkdirAll(wheels, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := LayeredStackWheels(ctx, wheels, "2.6.0", "0.21.0", "2.6.0", "12.4", []string{ver}, 1e-4); err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(dir, "venv")
	run := func(name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1"}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := run(py, "-m", "venv", venv); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	if out, err := run(vpy, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels, "torch==2.6.0+cu124"); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	if out, err := run(vpy, "-m", "pip", "check"); err != nil {
		t.Errorf("pip check: %v\n%s", err, out)
	}
	site, err := run(vpy, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))")
	if err != nil {
		t.Fatal(site)
	}
	site = strings.TrimSpace(site)

	f, err := elf.Open(filepath.Join(site, "torch", "lib", "libtorch_cuda.so"))
	if err != nil {
		t.Fatal(err)
	}
	rpath, _ := f.DynString(elf.DT_RPATH)
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	needed, _ := f.DynString(elf.DT_NEEDED)
	soname, _ := f.DynString(elf.DT_SONAME)
	f.Close()
	if len(rpath) != 1 || !slices.Contains(strings.Split(rpath[0], ":"), "$ORIGIN/../../cusparselt/lib") || len(runpath) != 0 {
		t.Errorf("libtorch_cuda.so: DT_RPATH %q, DT_RUNPATH %q; want torch's RPATH list with $ORIGIN/../../cusparselt/lib and no RUNPATH", rpath, runpath)
	}
	if !slices.Contains(needed, "libcusparseLt.so.0") || !slices.Equal(soname, []string{"libtorch_cuda.so"}) {
		t.Errorf("libtorch_cuda.so: DT_SONAME %q, DT_NEEDED %q", soname, needed)
	}
	if fi, err := os.Stat(filepath.Join(site, "torch", "lib", "libtorch_cuda.so")); err != nil || fi.Size() < int64(0.7*TorchMB*1e6*1e-4) {
		t.Errorf("libtorch_cuda.so: %v, want at least 70%% of the torch wheel's %.0f bytes (the real proportions)", err, TorchMB*1e6*1e-4)
	}
	for _, w := range stackWheels {
		for _, l := range w.Libs {
			if _, err := os.Stat(filepath.Join(site, l)); err != nil {
				t.Errorf("%s: %v", w.Dist, err)
			}
		}
	}

	importTorch := "import torch, torch._C; print(torch.__version__, torch._C.__name__)"
	if out, err := run(vpy, "-c", importTorch); err != nil || !strings.Contains(out, "2.6.0+cu124 torch._C") {
		t.Fatalf("import torch: %v\n%s", err, out)
	}
	lt := filepath.Join(site, "cusparselt")
	if err := os.Rename(lt, lt+".away"); err != nil {
		t.Fatal(err)
	}
	out2, err := run(vpy, "-c", importTorch)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(out2, "libcusparseLt.so.0: cannot open shared object file") {
		t.Errorf("import torch without cusparselt/lib: %v\n%s\nwant the loader's error for libcusparseLt.so.0", err, out2)
	}
}

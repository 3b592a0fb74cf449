package testenv

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTensorFlowTwinImport installs the twin tensorflow[and-cuda]==2.16.1
// with pip into a venv of the host's Python: pip resolves the and-cuda
// extra's pins, `import tensorflow` loads _pywrap_tensorflow_internal.so
// and libtensorflow_framework.so.2 through the real loader, no RUNPATH
// names nvidia/*/lib (2.16.1's defect, tensorflow#63362), so a dlopen of
// libcudnn.so.8 fails until LD_LIBRARY_PATH lists the nvidia/*/lib
// directories (the thread's workaround), and ptxas and libdevice are in
// nvidia/cuda_nvcc where XLA looks. Then the 2.15 twins: pip cannot
// install tensorflow[and-cuda]==2.15.0 (its TensorRT pins are served
// nowhere), installs 2.15.0.post1, whose libtensorflow_framework.so.2
// finds the CUDA libraries on its RUNPATH.
func TestTensorFlowTwinImport(t *testing.T) {
	// Not in -short: the e2e builds install the same twins.
	Require(t, "installs the TensorFlow twins with pip into venvs", Slow)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	ctx := t.Context()
	if _, err := CC(ctx); err != nil {
		t.Skipf("the twins are built with gcc: %v", err)
	}
	if _, err := PythonIncludes(ctx); err != nil {
		t.Skipf("the twin's extension compiles against Python's headers: %v", err)
	}
	out, err := exec.CommandContext(ctx, py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wheels := filepath.Join(dir, "wheels")
	if err := os.MkdirAll(wheels, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{TFTwinVersion, "2.15.0.post1", "2.15.0"} {
		if err := TensorFlowTwinWheels(ctx, wheels, v, []string{strings.TrimSpace(string(out))}); err != nil {
			t.Fatal(err)
		}
	}
	venv := filepath.Join(dir, "venv")
	run := func(env []string, name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1"}, env...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := run(nil, py, "-m", "venv", venv); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	if out, err := run(nil, vpy, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels, "tensorflow[and-cuda]=="+TFTwinVersion); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	sitePkgs, err := run(nil, vpy, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
	if err != nil {
		t.Fatal(sitePkgs)
	}
	sp := strings.TrimSpace(sitePkgs)
	for _, w := range TFTwinWheels(TFTwinVersion) {
		for _, l := range w.Libs {
			if _, err := os.Stat(filepath.Join(sp, l)); err != nil {
				t.Errorf("pip did not install %s's %s (the and-cuda pins): %v", w.Dist, l, err)
			}
		}
	}
	for _, lib := range []string{"tensorflow/libtensorflow_framework.so.2", "tensorflow/python/_pywrap_tensorflow_internal.so"} {
		f, err := elf.Open(filepath.Join(sp, lib))
		if err != nil {
			t.Fatal(err)
		}
		rp, _ := f.DynString(elf.DT_RUNPATH)
		_ = f.Close()
		if len(rp) != 1 || strings.Contains(rp[0], "nvidia") {
			t.Errorf("%s: DT_RUNPATH %q, want one list naming no nvidia/*/lib", lib, rp)
		}
	}
	if out, err := run(nil, vpy, "-c", "import tensorflow, sys; sys.exit(tensorflow.__version__ != '"+TFTwinVersion+"')"); err != nil {
		t.Fatalf("import tensorflow: %v\n%s", err, out)
	}
	maps := "import tensorflow; print(open('/proc/self/maps').read())"
	if out, err := run(nil, vpy, "-c", maps); err != nil || !strings.Contains(out, "/tensorflow/libtensorflow_framework.so.2") {
		t.Errorf("import tensorflow did not map libtensorflow_framework.so.2 (%v):\n%s", err, out)
	}
	cdll := "import ctypes; ctypes.CDLL('libcudnn.so.8')"
	if out, err := run(nil, vpy, "-c", cdll); err == nil || !strings.Contains(out, "libcudnn.so.8: cannot open shared object file") {
		t.Errorf("dlopen(libcudnn.so.8) without the loader told where nvidia/*/lib is: %v, want the loader's error:\n%s", err, out)
	}
	libs, _ := filepath.Glob(filepath.Join(sp, "nvidia", "*", "lib"))
	if out, err := run([]string{"LD_LIBRARY_PATH=" + strings.Join(libs, ":")}, vpy, "-c", cdll); err != nil {
		t.Errorf("dlopen(libcudnn.so.8) with LD_LIBRARY_PATH listing nvidia/*/lib: %v\n%s", err, out)
	}
	if fi, err := os.Stat(filepath.Join(sp, "nvidia/cuda_nvcc/bin/ptxas")); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("nvidia/cuda_nvcc/bin/ptxas is not an executable (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(sp, "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc")); err != nil {
		t.Error(err)
	}

	// 2.15.0's extra pins TensorRT, which no index serves: pip fails;
	// 2.15.0.post1 (what gpuimg installs) drops it, and its
	// libtensorflow_framework.so.2 names the nvidia/*/lib it opens from.
	venv15 := filepath.Join(dir, "venv15")
	if out, err := run(nil, py, "-m", "venv", venv15); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	vpy15 := filepath.Join(venv15, "bin", "python")
	if out, err := run(nil, vpy15, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels, "tensorflow[and-cuda]==2.15.0"); err == nil || !strings.Contains(out, "No matching distribution found for tensorrt") {
		t.Errorf("pip install tensorflow[and-cuda]==2.15.0: %v, want no distribution for tensorrt:\n%s", err, out)
	}
	if out, err := run(nil, vpy15, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels, "tensorflow[and-cuda]==2.15.0.post1"); err != nil {
		t.Fatalf("pip install tensorflow[and-cuda]==2.15.0.post1: %v\n%s", err, out)
	}
	if out, err := run(nil, vpy15, "-c", "import tensorflow"); err != nil {
		t.Fatalf("import tensorflow 2.15.0.post1: %v\n%s", err, out)
	}
	sp15 := strings.Replace(sp, venv, venv15, 1)
	f, err := elf.Open(filepath.Join(sp15, "tensorflow/libtensorflow_framework.so.2"))
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := f.DynString(elf.DT_RUNPATH)
	_ = f.Close()
	if len(rp) != 1 {
		t.Fatalf("DT_RUNPATH %q", rp)
	}
	origin := filepath.Join(sp15, "tensorflow")
	for _, so := range []string{"libcudart.so.12", "libcudnn.so.8", "libcublasLt.so.12"} {
		found := false
		for d := range strings.SplitSeq(rp[0], ":") {
			if _, err := os.Stat(filepath.Join(strings.Replace(d, "$ORIGIN", origin, 1), so)); err == nil {
				found = true
			}
		}
		if !found {
			t.Errorf("2.15.0.post1's libtensorflow_framework.so.2 RUNPATH %q does not find %s", rp[0], so)
		}
	}
}

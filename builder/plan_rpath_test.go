package builder

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanPyLinkCusparseLt lays out a layered build's environment the way
// the image holds it and loads torch's library with the real dynamic
// loader. The twins have the real structure of torch 2.6.0+cu124, whose
// install pulls nvidia-cusparselt-cu12==0.6.2 (a pip log of that install
// lists the pair): cuSPARSELt 0.6 installs to a top-level cusparselt/lib,
// not under nvidia/, and torch's libraries find it through DT_RPATH
// $ORIGIN/../../cusparselt/lib (PyTorch's .ci/manywheel/build_cuda.sh
// lists '$ORIGIN/../../cusparselt/lib' in CUDA_RPATHS and links with
// --force-rpath; read at pytorch/pytorch 00c7a380, 2026-12-01; the
// failure it avoids is pytorch/pytorch#144433's "libcusparseLt.so.0:
// cannot open shared object file"). The shared wheel's files go to the
// shared site directory (plan.py copy --shared), torch's to the venv
// (plan.py copy), and plan.py link must make cusparselt resolve from
// torch/lib/../..; before it runs, `import torch` fails as it would in the
// image.
func TestPlanPyLinkCusparseLt(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not on PATH (the test builds real shared objects)")
	}
	py, dir, script := planPyIn(t)
	run := func(t *testing.T, name string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SOURCE_DATE_EPOCH=1700000000", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INDEX=1"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustRun := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		out, err := run(t, name, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return out
	}

	// The ELF twins: libcusparseLt.so.0 (its real soname) and
	// libtorch_cuda.so, which needs it, with torch's RPATH list (DT_RPATH,
	// not DT_RUNPATH, as --force-rpath gives).
	elf := filepath.Join(dir, "elf")
	must(t, os.MkdirAll(elf, 0o755))
	must(t, os.WriteFile(filepath.Join(elf, "lt.c"), []byte("int cusparseLtInit(void *h) { return h == 0; }\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(elf, "tc.c"), []byte("int cusparseLtInit(void *h);\nint gpuimg_torch_cuda(void) { return cusparseLtInit(0); }\n"), 0o644))
	lt, tc := filepath.Join(elf, "libcusparseLt.so.0"), filepath.Join(elf, "libtorch_cuda.so")
	mustRun(t, gcc, "-shared", "-fPIC", "-Wl,-soname,libcusparseLt.so.0", "-o", lt, filepath.Join(elf, "lt.c"))
	mustRun(t, gcc, "-shared", "-fPIC", "-Wl,-soname,libtorch_cuda.so", "-Wl,--disable-new-dtags",
		"-Wl,-rpath,$ORIGIN/../../nvidia/cusparselt/lib:$ORIGIN/../../cusparselt/lib:$ORIGIN", "-o", tc, filepath.Join(elf, "tc.c"), lt)
	if out, err := run(t, "readelf", "-d", tc); err == nil && (!strings.Contains(out, "(RPATH)") || !strings.Contains(out, "[libcusparseLt.so.0]")) {
		t.Fatalf("libtorch_cuda.so lacks DT_RPATH or DT_NEEDED libcusparseLt.so.0:\n%s", out)
	}
	ltBytes, err := os.ReadFile(lt)
	must(t, err)
	tcBytes, err := os.ReadFile(tc)
	must(t, err)

	// The framework step's venv: both wheels installed by its pip, the
	// steps recorded and the plan written as the build's plan stage does.
	tagOut := mustRun(t, py, "-c", "import sys, sysconfig; v = '%d%d' % sys.version_info[:2]; print('cp%s-cp%s-%s' % (v, v, sysconfig.get_platform().replace('-', '_').replace('.', '_')))")
	tag := strings.TrimSpace(tagOut)
	fw := filepath.Join(dir, "fw")
	if out, err := run(t, py, "-m", "venv", fw); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	fwPy := filepath.Join(fw, "bin", "python")
	state, plan := filepath.Join(dir, "state.json"), filepath.Join(dir, "plan.json")
	mustRun(t, fwPy, "-B", script, "record", "0", state)
	wheels := filepath.Join(dir, "wheels")
	must(t, os.MkdirAll(wheels, 0o755))
	lib := writeTaggedWheel(t, wheels, "nvidia-cusparselt-cu12", "0.6.2", "py3-none-manylinux2014_x86_64", map[string]string{
		"cusparselt/__init__.py":             "",
		"cusparselt/include/cusparseLt.h":    "int cusparseLtInit(void *h);\n",
		"cusparselt/lib/libcusparseLt.so.0*": string(ltBytes),
	}, "")
	torch := writeTaggedWheel(t, wheels, "torch", "2.6.0+cu124", tag, map[string]string{
		// As torch/__init__.py loads torch/_C, which needs libtorch_cuda.so.
		"torch/__init__.py":           "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libtorch_cuda.so'))\n",
		"torch/lib/libtorch_cuda.so*": string(tcBytes),
	}, "")
	mustRun(t, fwPy, "-m", "pip", "install", "--no-deps", lib, torch)
	mustRun(t, fwPy, "-B", script, "record", "1", state)
	mustRun(t, fwPy, "-B", script, "finish", state, plan)
	dists := readPlan(t, plan)
	if d := dists["nvidia-cusparselt-cu12"]; !d.Shared || strings.Join(d.Top, " ") != "cusparselt" {
		t.Errorf("plan: nvidia-cusparselt-cu12 %+v, want shared with top-level directory cusparselt", d)
	}
	if d := dists["torch"]; d.Shared || strings.Join(d.Top, " ") != "torch" {
		t.Errorf("plan: torch %+v, want version-specific with top-level directory torch", d)
	}

	// The image: a fresh venv (the python stage's), the shared layer in
	// its shared site directory, torch's layer in the venv, the .pth file.
	img := filepath.Join(dir, "img")
	mustRun(t, py, "-m", "venv", "--without-pip", img)
	imgPy := filepath.Join(img, "bin", "python")
	sharedSite := filepath.Join(img, "lib", "gpuimg-shared", "site-packages")
	mustRun(t, imgPy, "-B", script, "copy", "--shared", fw, sharedSite, "nvidia-cusparselt-cu12==0.6.2")
	mustRun(t, imgPy, "-B", script, "copy", fw, "/", "torch==2.6.0+cu124")
	must(t, os.WriteFile(filepath.Join(site(t, img), "gpuimg-shared.pth"), []byte(sharedSite+"\n"), 0o644))
	importTorch := func() (string, error) { return run(t, imgPy, "-c", "import torch, cusparselt") }
	if out, err := importTorch(); err == nil || !strings.Contains(out, "libcusparseLt.so.0: cannot open shared object file") {
		t.Fatalf("import torch before plan.py link: err %v, output %q; want the loader's libcusparseLt.so.0 error (else this test proves nothing)", err, out)
	}
	mustRun(t, imgPy, "-B", script, "link", sharedSite, plan)
	if out, err := importTorch(); err != nil {
		t.Errorf("import torch in the layered layout: %v\n%s", err, out)
	}
	// Linking again (a rebuilt step) is a no-op.
	mustRun(t, imgPy, "-B", script, "link", sharedSite, plan)

	// A version-specific distribution that installs into a shared one's
	// top-level directory makes both version-specific: a link there would
	// hide its files.
	overlap := writeTaggedWheel(t, wheels, "gpuimg-overlap", "1.0", tag, map[string]string{"cusparselt/gpuimg_overlap.py": ""}, "")
	mustRun(t, fwPy, "-m", "pip", "install", "--no-deps", overlap)
	mustRun(t, fwPy, "-B", script, "record", "2", state)
	mustRun(t, fwPy, "-B", script, "finish", state, plan)
	dists = readPlan(t, plan)
	if dists["nvidia-cusparselt-cu12"].Shared || dists["gpuimg-overlap"].Shared {
		t.Errorf("plan: a shared and a version-specific distribution both in cusparselt/: %+v", dists)
	}
}

func readPlan(t *testing.T, file string) map[string]PlannedDist {
	t.Helper()
	b, err := os.ReadFile(file)
	must(t, err)
	var plan []PlannedDist
	must(t, json.Unmarshal(b, &plan))
	out := map[string]PlannedDist{}
	for _, p := range plan {
		out[p.Name] = p
	}
	return out
}

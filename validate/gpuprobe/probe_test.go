package gpuprobe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// childBudget is the hung child's budget in TestPyProbeChild: long enough
// for Python to import the fake tensorflow on a loaded machine under the
// race detector (3 s was not), short enough to show the budget ends it.
const childBudget = 20 * time.Second

func TestProbeWithoutDriver(t *testing.T) {
	_, _, err := probeGPUs([]string{"/nonexistent/libnvidia-ml.so.1"})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("err = %v, want ErrNoDriver", err)
	}
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	res := Probe(t.Context(), Options{})
	if res.Verdict != NoGPU || res.NoGPU == "" || len(res.Checks) == 0 || res.Checks[0].Name != "nvidia-driver" || res.Checks[0].Status != matrix.Fail {
		t.Errorf("probe = %+v", res)
	}
	b, err := json.Marshal(res)
	if err != nil || !strings.Contains(string(b), `"verdict":"no-gpu"`) {
		t.Errorf("JSON %s %v", b, err)
	}
}

// pyProbe runs the Python probe as Probe does (runPyProbe: --facts, then
// a process per installed framework) with the real python3, without the
// site directories (-S) and with PYTHONPATH=dir, so that only dir's
// modules are found whatever the machine has installed (Debian's
// python3-torch, for one). The host/cpu check, which depends on the
// machine's cgroup, is left out.
func pyProbe(t *testing.T, dir string) *PyProbe {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	wrapper := filepath.Join(t.TempDir(), "python3")
	must(t, os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+py+" -S \"$@\"\n"), 0o755))
	t.Setenv("PYTHONPATH", dir)
	var extra []Check
	pp := runPyProbe(t.Context(), Options{Python: wrapper, Budget: time.Minute}, false, func(name string, st Status, format string, args ...any) {
		extra = append(extra, Check{Name: name, Status: st, Message: sprintf(format, args...)})
	})
	if pp == nil || len(extra) != 0 || !pp.Complete || pp.Step != "done" {
		t.Fatalf("python probe %+v, checks %+v", pp, extra)
	}
	pp.Checks = slices.DeleteFunc(pp.Checks, func(c Check) bool { return c.Name == "host/cpu" })
	return pp
}

func TestProbePy(t *testing.T) {
	t.Run("no framework", func(t *testing.T) {
		pp := pyProbe(t, t.TempDir())
		if pp.Python == "" || len(pp.Frameworks) != 0 || len(pp.Checks) != 0 || pp.Host == nil || pp.Host.CPUsSeen == 0 {
			t.Errorf("%+v", pp)
		}
	})
	t.Run("a torch that fails to import still gives JSON and a failed check", func(t *testing.T) {
		dir := t.TempDir()
		writeModule(t, dir, "torch", "raise OSError('libcudnn.so.8: cannot open shared object file')\n")
		pp := pyProbe(t, dir)
		if len(pp.Checks) != 1 || pp.Checks[0].Name != "torch/import" || pp.Checks[0].Status != matrix.Fail || !strings.Contains(pp.Checks[0].Message, "libcudnn.so.8") {
			t.Errorf("checks = %+v", pp.Checks)
		}
	})
}

// writeModule writes a Python package name under dir with source as its
// __init__.py.
func writeModule(t *testing.T, dir, name, source string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, name, "__init__.py"), []byte(source), 0o644))
}

// A stand-in torch and jax that record, at import, the process they run
// in; jax also whether torch or tensorflow was imported there before it,
// and its memory preallocation setting. Neither sees a GPU.
const (
	spyTorch = `import json, os, types
__version__ = "0.0-spy"
version = types.SimpleNamespace(cuda=None)
with open(os.environ["SPY_TORCH"], "w") as f:
    json.dump({"pid": os.getpid()}, f)
`
	spyJAX = `import json, os, sys
__version__ = "0.0-spy"
with open(os.environ["SPY_OUT"], "w") as f:
    json.dump({"pid": os.getpid(), "torch": "torch" in sys.modules, "tensorflow": "tensorflow" in sys.modules,
               "prealloc": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")}, f)
def devices():
    return []
`
)

// TestPyProbeIsolation: each framework runs in its own process, so JAX's
// and TensorFlow's memory preallocation and their cuDNN never meet
// torch's; one framework's crash (TensorFlow's SIGSEGV at import) is its
// own failed check, and the framework after it still runs.
func TestPyProbeIsolation(t *testing.T) {
	dir := t.TempDir()
	spyT, spyJ := filepath.Join(dir, "torch.json"), filepath.Join(dir, "jax.json")
	writeModule(t, dir, "torch", spyTorch)
	writeModule(t, dir, "jax", spyJAX)
	writeModule(t, dir, "tensorflow", "import os\nos.kill(os.getpid(), 11)\n")
	t.Setenv("SPY_TORCH", spyT)
	t.Setenv("SPY_OUT", spyJ)
	t.Setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1")
	t.Setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "")
	must(t, os.Unsetenv("XLA_PYTHON_CLIENT_PREALLOCATE"))
	pp := pyProbe(t, dir)
	var torch, jax struct {
		PID        int
		Torch      bool
		TensorFlow bool `json:"tensorflow"`
		Prealloc   *string
	}
	for f, v := range map[string]any{spyT: &torch, spyJ: &jax} {
		b, err := os.ReadFile(f)
		must(t, err)
		must(t, json.Unmarshal(b, v))
	}
	if torch.PID == jax.PID || jax.Torch || jax.TensorFlow || jax.Prealloc == nil || *jax.Prealloc != "false" {
		t.Errorf("torch %+v, jax %+v, prealloc %v: want separate processes, jax's alone with XLA_PYTHON_CLIENT_PREALLOCATE=false", torch, jax, jax.Prealloc)
	}
	checks := map[string]Check{}
	for _, c := range pp.Checks {
		checks[c.Name] = c
	}
	if c := checks["probe/tensorflow"]; c.Status != matrix.Fail || !strings.Contains(c.Message, "the tensorflow probe crashed (signal 11)") {
		t.Errorf("probe/tensorflow %+v", c)
	}
	if checks["jax/cuda"].Status != matrix.Fail || checks["torch/cuda"].Status != matrix.Fail {
		t.Errorf("checks %+v", pp.Checks)
	}
	for name, want := range map[string]string{"torch": `"version": "0.0-spy"`, "jax": `"version": "0.0-spy"`} {
		if !strings.Contains(string(pp.Frameworks[name]), want) {
			t.Errorf("%s: %s", name, pp.Frameworks[name])
		}
	}
	if want := map[string]string{"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}; !reflect.DeepEqual(pp.Env, want) {
		t.Errorf("env %v, want %v", pp.Env, want)
	}
}

// TestPyProbeChild: a framework's process that hangs is killed at its
// timeout and keeps what it found, after the checks found before it; one
// that dies after printing its complete result is a warning.
func TestPyProbeChild(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "probe.py")
	must(t, os.WriteFile(script, probePy, 0o644))
	writeModule(t, dir, "tensorflow", `import time, types
__version__ = "2.18.0"
sysconfig = types.SimpleNamespace(get_build_info=lambda: {"cuda_version": "12.5", "cudnn_version": "9"})
test = types.SimpleNamespace(is_built_with_cuda=lambda: True)
config = types.SimpleNamespace(list_physical_devices=lambda kind: time.sleep(60))
`)
	writeModule(t, dir, "jax", "import atexit, os\n__version__ = '0.1'\natexit.register(lambda: os._exit(3))\ndef devices():\n    return []\n")
	env := append(os.Environ(), "PYTHONPATH="+dir)
	newPP := func() *PyProbe {
		return &PyProbe{Frameworks: map[string]json.RawMessage{}, Checks: []Check{{Name: "earlier", Status: matrix.Pass}}, Bench: map[string]float64{},
			Conditions: map[string]BenchConditions{}, Spread: map[string]BenchSpread{}}
	}

	pp := newPP()
	var steps []string
	start := time.Now()
	runChild(t.Context(), py, []string{"-S", script, "--framework", "tensorflow", "--budget", "1"}, env, "tensorflow", childBudget, pp,
		func(step string, _ time.Duration) { steps = append(steps, step) }, start)
	if time.Since(start) > childBudget+30*time.Second {
		t.Errorf("the hung child took %s", time.Since(start))
	}
	if !reflect.DeepEqual(steps, []string{"tensorflow/import"}) || !strings.Contains(string(pp.Frameworks["tensorflow"]), `"2.18.0"`) {
		t.Errorf("steps %q, frameworks %s", steps, pp.Frameworks["tensorflow"])
	}
	if len(pp.Checks) != 2 || pp.Checks[0].Name != "earlier" || pp.Checks[1].Name != "probe/tensorflow" || pp.Checks[1].Status != matrix.Fail ||
		!strings.Contains(pp.Checks[1].Message, "did not finish within 20 s; results up to tensorflow/import are kept") {
		t.Errorf("checks %+v", pp.Checks)
	}

	pp = newPP()
	runChild(t.Context(), py, []string{"-S", script, "--framework", "jax"}, env, "jax", time.Minute, pp, nil, time.Now())
	if len(pp.Checks) != 3 || pp.Checks[1].Name != "jax/cuda" || pp.Checks[1].Status != matrix.Fail || pp.Checks[2].Name != "probe/jax" || pp.Checks[2].Status != matrix.Warn ||
		!strings.Contains(pp.Checks[2].Message, "exited with status 3 after printing its complete result") {
		t.Errorf("checks %+v", pp.Checks)
	}
}

func TestErrorLine(t *testing.T) {
	for stderr, want := range map[string]string{
		"Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: CUDA error: out of memory\n/x.py:46: UserWarning: TF32\n  self.setter(val)\n": "RuntimeError: CUDA error: out of memory",
		"":                  "",
		"  only indented\n": "only indented",
	} {
		if got := errorLine(stderr); got != want {
			t.Errorf("errorLine(%q) = %q, want %q", stderr, got, want)
		}
	}
}

func TestProbePythonCrashAndTimeout(t *testing.T) {
	dir := t.TempDir()
	crash := filepath.Join(dir, "crash.sh")
	must(t, os.WriteFile(crash, []byte("#!/bin/sh\necho 'Segmentation fault' >&2\nexit 139\n"), 0o755))
	slow := filepath.Join(dir, "slow.sh")
	must(t, os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755))
	for _, tt := range []struct {
		py, want string
		budget   time.Duration
	}{
		{crash, "the Python probe crashed (exit status 139): Segmentation fault", time.Minute},
		{slow, "did not finish within 1s", time.Second},
	} {
		var got []Check
		add := func(name string, st Status, format string, args ...any) {
			got = append(got, Check{Name: name, Status: st, Message: sprintf(format, args...)})
		}
		if pp := runPyProbe(t.Context(), Options{Python: tt.py, Budget: tt.budget}, false, add); pp != nil {
			t.Errorf("%s: got a probe result", tt.py)
		}
		if len(got) != 1 || got[0].Status != matrix.Fail || !strings.Contains(got[0].Message, tt.want) {
			t.Errorf("%s: checks %+v, want %q", tt.py, got, tt.want)
		}
	}

	// A framework's probe that printed snapshots and then hung or died:
	// what the steps before found is kept, with a failed check saying
	// where it stopped. The stand-in interpreters answer --facts first.
	snap := `{"python": "3.12.3", "frameworks": {"torch": {"version": "2.11.0+cu130"}}, "checks": [{"name": "torch/cuda", "status": "pass", "message": "sees 1 GPU"}], "bench": {"gemm_bf16_tflops": 700.5}, "step": "bench/gemm", "complete": false}`
	python := func(name, torch string) string {
		f := filepath.Join(dir, name)
		must(t, os.WriteFile(f, []byte("#!/bin/sh\ncase \"$*\" in *--facts*) echo '{\"python\": \"3.12.3\", \"env\": {}, \"installed\": [\"torch\"]}'; exit 0;; esac\n"+torch), 0o755))
		return f
	}
	hang := python("hang.sh", "echo '{\"python\": \"3.12.3\", \"step\": \"start\", \"complete\": false}'\necho '"+snap+"'\nexec sleep 30\n")
	// torch >= 2.9 warns about the TF32 API, and the warning ends with the
	// quoted source line; the error line must still be the one quoted.
	die := python("die.sh", "echo '"+snap+"'\necho 'CUDA error: an illegal memory access was encountered' >&2\n"+
		"echo '/usr/lib/python3/dist-packages/torch/backends/__init__.py:46: UserWarning: Please use the new API settings to control TF32 behavior' >&2\necho '  self.setter(val)' >&2\nkill -SEGV $$\n")
	done := python("done.sh", "echo '"+strings.Replace(snap, `"complete": false`, `"complete": true`, 1)+"'\nexec sleep 30\n")
	for _, tt := range []struct {
		py, name, want string
		budget         time.Duration
		status         Status
	}{
		{hang, "probe/python", "the Python probe did not finish within 1s; results up to bench/gemm are kept", time.Second, matrix.Fail},
		{die, "probe/torch", "the torch probe crashed (signal 11): CUDA error: an illegal memory access was encountered; results up to bench/gemm are kept", time.Minute, matrix.Fail},
		{done, "probe/python", "the Python probe did not finish within 1s after printing its complete result", time.Second, matrix.Warn},
	} {
		var got []Check
		add := func(name string, st Status, format string, args ...any) {
			got = append(got, Check{Name: name, Status: st, Message: sprintf(format, args...)})
		}
		pp := runPyProbe(t.Context(), Options{Python: tt.py, Budget: tt.budget}, false, add)
		if pp == nil {
			t.Fatalf("%s: no result", tt.py)
		}
		pp.Checks = slices.DeleteFunc(pp.Checks, func(c Check) bool { return c.Name == "host/cpu" })
		if pp.Bench["gemm_bf16_tflops"] != 700.5 || len(pp.Checks) != 2 {
			t.Fatalf("%s: kept %+v", tt.py, pp)
		}
		if c := pp.Checks[1]; c.Name != tt.name || c.Status != tt.status || c.Message != tt.want {
			t.Errorf("%s: %+v, want %s %q", tt.py, c, tt.name, tt.want)
		}
		if len(got) != 0 {
			t.Errorf("%s: extra checks %+v", tt.py, got)
		}
	}
}

// TestTorchArch judges torch's compiled architectures against cuda:0's
// capability with matrix.KernelCoverage (the table probe.py's own copy of
// the rule had), and puts the check after torch/cuda and torch/device.
func TestTorchArch(t *testing.T) {
	for _, tt := range []struct {
		cap   string
		archs []string
		want  Status
	}{
		{"9.0", []string{"sm_80", "sm_90"}, matrix.Pass},
		{"8.6", []string{"sm_80"}, matrix.Pass},               // SASS runs on a newer minor of the same major
		{"8.0", []string{"sm_86"}, matrix.Fail},               // but not on an older minor
		{"9.0", []string{"sm_80", "sm_86"}, matrix.Fail},      // nor across majors
		{"9.0", []string{"sm_80", "compute_80"}, matrix.Warn}, // PTX is JIT-compiled forward
		{"10.0", []string{"sm_90", "compute_90"}, matrix.Warn},
		{"7.5", []string{"sm_80", "compute_80"}, matrix.Fail}, // PTX never runs backward
		{"9.0", []string{"sm_90a"}, matrix.Pass},              // arch-specific SASS: that exact GPU only
		{"10.0", []string{"sm_90a", "sm_100f"}, matrix.Pass},
		{"10.3", []string{"sm_100f"}, matrix.Pass}, // family-specific: the whole 10.x family
		{"10.0", []string{"sm_103f"}, matrix.Fail},
		{"12.0", []string{"sm_100f"}, matrix.Fail},
		{"10.3", []string{"sm_100a"}, matrix.Fail},
		// Arch-specific PTX is JIT-compiled on its own GPU (matrix's rule;
		// probe.py's copy said it never ran).
		{"9.0", []string{"sm_89", "compute_90a"}, matrix.Warn},
		{"9.0", []string{"sm_89", "compute_100a"}, matrix.Fail},
		{"9.0", []string{}, matrix.Fail},
		{"9.0", []string{"sm_x", "compute_", "sm_90af"}, matrix.Fail}, // names of another form count for nothing
	} {
		torch, err := json.Marshal(map[string]any{"version": "2.9.0", "arch_list": tt.archs, "capability": tt.cap})
		must(t, err)
		pp := &PyProbe{Frameworks: map[string]json.RawMessage{"torch": torch}, Checks: []Check{
			{Name: "host/cpu"}, {Name: "torch/cuda"}, {Name: "torch/device"}, {Name: "torch/matmul"},
		}}
		judgeTorchArch(pp)
		if len(pp.Checks) != 5 || pp.Checks[3].Name != "torch/arch" || pp.Checks[3].Status != tt.want {
			t.Errorf("%s on %v: %+v, want torch/arch %s before torch/matmul", tt.cap, tt.archs, pp.Checks, tt.want)
		}
	}
	torch := json.RawMessage(`{"version": "2.9.0", "arch_list": ["sm_80", "sm_90"], "capability": "12.0"}`)
	pp := &PyProbe{Frameworks: map[string]json.RawMessage{"torch": torch}, Checks: []Check{{Name: "torch/cuda"}}}
	judgeTorchArch(pp)
	if want := "torch was compiled for sm_80 sm_90, none of which runs on sm_120"; len(pp.Checks) != 2 || pp.Checks[1].Message != want {
		t.Errorf("%+v, want %q", pp.Checks, want)
	}
	// Without the facts (no GPU, a CPU-only torch) there is nothing to judge.
	pp = &PyProbe{Frameworks: map[string]json.RawMessage{"torch": json.RawMessage(`{"version": "1.13.1", "cuda": null}`)}}
	judgeTorchArch(pp)
	if len(pp.Checks) != 0 {
		t.Errorf("judged without facts: %+v", pp.Checks)
	}
}

// TestCgroupCPUQuota reads cgroup v2's and v1's CPU quota and warns when
// it is below the CPUs the process sees.
func TestCgroupCPUQuota(t *testing.T) {
	root := func(files map[string]string) string {
		d := t.TempDir()
		for name, text := range files {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(d, name)), 0o755))
			must(t, os.WriteFile(filepath.Join(d, name), []byte(text), 0o644))
		}
		return d
	}
	for _, tt := range []struct {
		files map[string]string
		want  float64 // 0: no quota
	}{
		{map[string]string{"cpu.max": "max 100000\n"}, 0},
		{map[string]string{"cpu.max": "250000 100000\n"}, 2.5},
		{map[string]string{"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0},
		{map[string]string{"cpu,cpuacct/cpu.cfs_quota_us": "50000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 0.5},
		{map[string]string{}, 0},
	} {
		got := cgroupCPUQuota(root(tt.files))
		if (got == nil) != (tt.want == 0) || got != nil && *got != tt.want {
			t.Errorf("%v: quota %v, want %v", tt.files, got, tt.want)
		}
	}
	var checks []Check
	host := checkCPUQuota(root(map[string]string{"cpu.max": "200000 100000"}), 16, func(c Check) { checks = append(checks, c) })
	if host.CPUsSeen != 16 || host.CPUQuota == nil || *host.CPUQuota != 2 || len(checks) != 1 || checks[0].Name != "host/cpu" || checks[0].Status != matrix.Warn ||
		!strings.Contains(checks[0].Message, "the cgroup CPU quota allows 2.0 CPUs but the process sees 16") || !strings.Contains(checks[0].Message, "size num_workers to 2") {
		t.Errorf("host %+v, checks %+v", host, checks)
	}
	for _, tt := range []struct {
		cpuMax string
		seen   int
	}{{"200000 100000", 2}, {"max 100000", 16}} {
		checks = nil
		host := checkCPUQuota(root(map[string]string{"cpu.max": tt.cpuMax}), tt.seen, func(c Check) { checks = append(checks, c) })
		if len(checks) != 0 || host.CPUsSeen != tt.seen {
			t.Errorf("%s with %d CPUs: host %+v, checks %+v", tt.cpuMax, tt.seen, host, checks)
		}
	}
}

func TestJudgeBench(t *testing.T) {
	db := db(t)
	var got []Check
	add := func(name string, st Status, format string, args ...any) {
		got = append(got, Check{Name: name, Status: st, Message: sprintf(format, args...)})
	}
	bench := map[string]float64{"gemm_bf16_tflops": 600, "memory_bandwidth_gbs": 2000, "resnet50_images_per_s": 3000}
	judgeBench(Options{DB: db, Bench: true}, GPUInfo{Name: "NVIDIA H200"}, bench, nil, add)
	st := map[string]Status{}
	for _, c := range got {
		st[c.Name] = c.Status
	}
	if st["bench/gemm_bf16"] != matrix.Pass || st["bench/memory_bandwidth"] != matrix.Fail {
		t.Errorf("judged %+v", got)
	}
	got = nil
	judgeBench(Options{DB: db, MinEfficiency: map[string]float64{"gemm_bf16": 0.7}}, GPUInfo{Name: "NVIDIA H200"}, bench, nil, add)
	if got[0].Status != matrix.Fail {
		t.Errorf("--min-efficiency gemm_bf16=0.7: %+v", got)
	}
	got = nil
	judgeBench(Options{DB: db}, GPUInfo{Name: "NVIDIA Voodoo5"}, bench, nil, add)
	if len(got) != 1 || got[0].Status != matrix.Warn {
		t.Errorf("unknown GPU: %+v", got)
	}
	// Under MIG the figures are a slice's: not judged against the card.
	got = nil
	judgeBench(Options{DB: db}, GPUInfo{Name: "NVIDIA H200", MIG: "enabled"}, bench, nil, add)
	if len(got) != 1 || got[0].Status != matrix.Warn || !strings.Contains(got[0].Message, "MIG is enabled") {
		t.Errorf("MIG: %+v", got)
	}
	// Host copies are judged against the PCIe link (gen5 x16: 63.0 GB/s a
	// direction), also on a card the matrix does not know.
	got = nil
	judgeBench(Options{DB: db}, GPUInfo{Name: "NVIDIA Voodoo5", PCIeMaxGen: 5, PCIeMaxWidth: 16}, map[string]float64{"h2d_gbs": 52, "d2h_gbs": 20}, nil, add)
	st = map[string]Status{}
	for _, c := range got {
		st[c.Name] = c.Status
	}
	if st["bench/h2d"] != matrix.Pass || st["bench/d2h"] != matrix.Fail || !strings.Contains(got[1].Message, "83% of PCIe gen5 x16's 63.0") {
		t.Errorf("PCIe judging: %+v", got)
	}
	for _, tt := range []struct {
		gen, width int
		want       float64
	}{{3, 16, 15.75}, {4, 16, 31.51}, {4, 8, 15.75}, {1, 1, 0.25}, {6, 16, 0}, {0, 16, 0}} {
		if got := PCIePeakGBs(db, tt.gen, tt.width); got < tt.want-0.01 || got > tt.want+0.01 {
			t.Errorf("PCIePeakGBs(%d, %d) = %.3f, want %.2f", tt.gen, tt.width, got, tt.want)
		}
	}
	for name, want := range map[string]string{"NVIDIA H200": "H200-SXM", "NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB", "NVIDIA GeForce RTX 4090": "RTX-4090", "NVIDIA L4": "L4",
		"NVIDIA H100 80GB HBM3": "H100-SXM", "NVIDIA H100 PCIe": "H100-PCIE", "h200": "H200-SXM", "H100-NVL": "H100-NVL"} {
		if g, ok := gpuRow(db, name); !ok || g.Name != want {
			t.Errorf("gpuRow(%q) = %s %v, want %s", name, g.Name, ok, want)
		}
	}
	if g, ok := gpuRow(db, "NVIDIA Voodoo5"); ok {
		t.Errorf("an unknown card matched %s", g.Name)
	}
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"h100", "NVIDIA H100 80GB HBM3", true},
		{"H100-SXM", "h100-sxm5", true},
		{"h100", "NVIDIA H100 PCIe", false},
		{"NVIDIA Voodoo5", "nvidia voodoo5", true},
		{"NVIDIA Voodoo5", "NVIDIA Voodoo3", false},
	} {
		if got := SameGPU(db, tt.a, tt.b); got != tt.same {
			t.Errorf("SameGPU(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// TestProbeRealNVMLWithoutKernelDriver loads NVIDIA's own libnvidia-ml.so.1
// (Debian's non-free libnvidia-ml1, driver 535) through the same purego
// loader the probe uses. Every function gpuimg registers must exist in the
// real library (a missing symbol would fail here), and without the NVIDIA
// kernel module nvmlInit_v2 must come back as NVML_ERROR_DRIVER_NOT_LOADED,
// reported as "no NVIDIA driver" with the reason and the fix.
func TestProbeRealNVMLWithoutKernelDriver(t *testing.T) {
	if lib := os.Getenv("GPUIMG_TEST_REAL_NVML"); lib != "" {
		realNVML(t, lib)
		return
	}
	testenv.Require(t, "downloads Debian's libnvidia-ml1", testenv.Slow)
	if _, err := os.Stat("/proc/driver/nvidia/version"); err == nil {
		t.Skip("this machine has the NVIDIA kernel module loaded")
	}
	lib, err := testenv.DebianNVML(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// In a child process: once loaded, the real library stays in the
	// process (dlopen by soname would find it again in later tests), and
	// NVML run as root creates /dev/nvidiactl, which is removed here.
	if _, err := os.Lstat("/dev/nvidiactl"); os.IsNotExist(err) {
		t.Cleanup(func() { os.Remove("/dev/nvidiactl") })
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestProbeRealNVMLWithoutKernelDriver$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "GPUIMG_TEST_REAL_NVML="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestProbeRealNVMLWithoutKernelDriver") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// realNVML is TestProbeRealNVMLWithoutKernelDriver's child process.
func realNVML(t *testing.T, lib string) {
	l, err := loadNVML([]string{lib})
	if err != nil {
		t.Fatalf("load the real NVML: %v", err)
	}
	// The health reads are optional (nil when the library lacks one):
	// driver 535's library has them all, so a misspelt name shows here.
	for name, fn := range l.healthSymbols() {
		if reflect.ValueOf(fn).Elem().IsNil() {
			t.Errorf("%s is not in the real libnvidia-ml", name)
		}
	}
	if got := l.errorString(18); !strings.Contains(strings.ToLower(got), "mismatch") {
		t.Errorf("nvmlErrorString(18) = %q", got)
	}
	_, _, err = probeGPUs([]string{"/nonexistent/libnvidia-ml.so.1", lib})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("err = %v, want ErrNoDriver", err)
	}
	for _, want := range []string{"libnvidia-ml.so.1 is present", "Driver Not Loaded (9)", "kernel module is not loaded", "--gpus all"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// debianTorch installs Debian's python3-torch and python3-torchvision (a
// real, CPU-only torch 1.13) and returns Debian's python3 that imports them.
func debianTorch(t *testing.T) string {
	t.Helper()
	testenv.Require(t, "installs Debian's python3-torch with apt-get", testenv.Slow, testenv.Root)
	if err := testenv.EnsurePackages(t.Context(), "python3-torch", "python3-torchvision"); err != nil {
		t.Fatal(err)
	}
	return "/usr/bin/python3"
}

// TestProbePyUnit runs probe.py's own tests (probe_test.py) with a real
// torch: the checks and benchmarks on the CPU device with small sizes, the
// CPU-only verdict, crashes and spent budgets. On a machine with a CUDA
// torch and a GPU the same file also runs its GPU tests.
func TestProbePyUnit(t *testing.T) {
	py := debianTorch(t)
	cmd := exec.CommandContext(t.Context(), py, "-m", "unittest", "-v", "probe_test")
	cmd.Env = append(os.Environ(), "GPUIMG_REQUIRE_TORCH=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest probe_test: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "test_bench_resnet50 (probe_test.TorchOnCPU") || !strings.Contains(string(out), "OK") {
		t.Errorf("the torch tests did not run:\n%s", out)
	}
}

// TestProbeCPUOnlyTorch is the whole probe on this machine (no NVIDIA
// driver) with Debian's CPU-only torch: the verdict is no-gpu, and the
// CPU-only build is still reported as a failed check with its version.
func TestProbeCPUOnlyTorch(t *testing.T) {
	py := debianTorch(t)
	if _, err := os.Stat("/proc/driver/nvidia/version"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	var steps []string
	res := Probe(t.Context(), Options{Python: py, DB: db(t), Progress: func(step string, _ time.Duration) { steps = append(steps, step) }})
	if strings.Join(steps, " ") != "torch/import" {
		t.Errorf("progress told %q, want the one step before the end", steps)
	}
	if res.Verdict != NoGPU || res.Python == nil {
		t.Fatalf("verdict %s, python %+v", res.Verdict, res.Python)
	}
	var torch struct{ Version, CUDA *string }
	if err := json.Unmarshal(res.Python.Frameworks["torch"], &torch); err != nil || torch.Version == nil || !strings.HasPrefix(*torch.Version, "1.13") || torch.CUDA != nil {
		t.Errorf("torch %s: %v", res.Python.Frameworks["torch"], err)
	}
	var found bool
	for _, c := range res.Checks {
		if c.Name == "torch/cuda" {
			found = c.Status == matrix.Fail && strings.Contains(c.Message, "CPU-only build")
		}
	}
	if !found {
		t.Errorf("no failed torch/cuda check for the CPU-only build: %+v", res.Checks)
	}
}

// TestGPUFixtures reads the results bench/gpu/run.sh brought back from GPU
// machines (validate/gpuprobe/testdata/gpu-*/probe-bench.json): each must parse as
// a Result with a GPU the matrix knows, its benchmark figures must be
// judged against that GPU's peaks, and the verdict recorded must be the
// one Probe's rules give for its checks.
func TestGPUFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "gpu-*", "probe-bench.json"))
	if len(files) == 0 {
		t.Skip("no GPU results yet: run bench/gpu/run.sh on a GPU machine (docs/probe.md)")
	}
	db := db(t)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			b, err := os.ReadFile(f)
			must(t, err)
			var res Result
			must(t, json.Unmarshal(b, &res))
			if res.Driver == nil || res.Driver.Version == "" || len(res.GPUs) == 0 || res.Python == nil {
				t.Fatalf("incomplete result: driver %+v, %d GPUs, python %v", res.Driver, len(res.GPUs), res.Python != nil)
			}
			g := res.GPUs[0]
			if res.Python.Device != nil && res.Python.Device.UUID != "" {
				for _, x := range res.GPUs {
					if sameUUID(x.UUID, res.Python.Device.UUID) {
						g = x
					}
				}
			}
			if _, ok := gpuRow(db, g.Name); !ok {
				t.Errorf("the matrix does not know %q", g.Name)
			}
			if !strings.HasPrefix(g.Arch, "sm_") || g.MemoryBytes == 0 || g.UUID == "" {
				t.Errorf("GPU fields %+v", g)
			}
			var judged []Check
			judgePyBench(Options{DB: db, Bench: true}, res.GPUs, res.Python, func(name string, st Status, format string, args ...any) {
				judged = append(judged, Check{Name: name, Status: st, Message: sprintf(format, args...)})
			})
			if len(judged) < 4 {
				t.Errorf("judged %d figures, want GEMM bf16/fp16/fp32 and memory bandwidth: %+v", len(judged), judged)
			}
			recorded := map[string]Status{}
			for _, c := range res.Checks {
				recorded[c.Name] = c.Status
			}
			for _, c := range judged {
				if got, ok := recorded[c.Name]; !ok || got != c.Status {
					t.Errorf("%s: recorded %q, judged again %s (%s)", c.Name, got, c.Status, c.Message)
				}
			}
			want := matrix.Pass
			for _, c := range res.Checks {
				if c.Status == matrix.Fail {
					want = matrix.Fail
				}
			}
			if res.Verdict != want {
				t.Errorf("verdict %s, checks say %s", res.Verdict, want)
			}
			gpuAcceptance(t, db, filepath.Dir(f))
		})
	}
}

// gpuAcceptance checks run.sh's second benchmark run, judged against the
// baseline of the first: recorded as accepted, and judged the same again
// here from the files.
func gpuAcceptance(t *testing.T, db *matrix.DB, dir string) {
	base, err := os.ReadFile(filepath.Join(dir, "baseline.json"))
	if err != nil {
		t.Logf("no baseline.json in %s: the acceptance run is not recorded", dir)
		return
	}
	b, err := ReadBaseline(base)
	must(t, err)
	second, err := os.ReadFile(filepath.Join(dir, "probe-accept.json"))
	must(t, err)
	var res Result
	must(t, json.Unmarshal(second, &res))
	if res.Acceptance == nil || res.Acceptance.Against != "baseline" {
		t.Fatalf("probe-accept.json has no acceptance against the baseline: %+v", res.Acceptance)
	}
	for _, f := range res.Acceptance.Figures {
		if f.Status == matrix.Fail {
			t.Errorf("two runs on one machine disagree: %s %.1f against %.1f (%.1f%% short)", f.Figure, f.Value, f.Expected, f.LossPct)
		}
	}
	// As probe judge does (validate.Judge): the recorded result judged
	// again with this gpuimg's rules, then accepted against the baseline.
	var again Result
	must(t, json.Unmarshal(second, &again))
	Rejudge(&again, db)
	Accept(&again, AcceptOptions{Baseline: b, DB: db})
	if again.Acceptance.Verdict != res.Acceptance.Verdict {
		t.Errorf("judged again %s, recorded %s", again.Acceptance.Verdict, res.Acceptance.Verdict)
	}
}

func TestCheckStackDriver(t *testing.T) {
	label, err := json.Marshal(matrix.Stack{CUDA: "12.2.2", MinDriver: "535.104.05", MinDriverCompat: "525.60.13"})
	must(t, err)
	labels := map[string]string{"dev.gpuimg.stack": string(label)}
	for _, tt := range []struct {
		driver  string
		status  Status
		verdict Status
	}{
		{"580.95.05", matrix.Pass, matrix.Pass},
		{"535.104.05", matrix.Pass, matrix.Pass},
		{"535.54.03", matrix.Warn, matrix.Pass}, // reports CUDA 12.2, below 12.2 Update 2's floor
		{"470.256.02", matrix.Fail, matrix.Fail},
	} {
		p := &Result{Driver: &DriverInfo{Version: tt.driver}, Verdict: matrix.Pass}
		CheckStackDriver(p, labels)
		if len(p.Checks) != 1 || p.Checks[0].Name != "driver-floor/stack" || p.Checks[0].Status != tt.status || p.Verdict != tt.verdict {
			t.Errorf("driver %s: %+v verdict %s, want %s %s", tt.driver, p.Checks, p.Verdict, tt.status, tt.verdict)
		}
	}
	// No driver (no GPU) or no label: nothing to judge.
	for _, p := range []*Result{{Verdict: NoGPU}, {Driver: &DriverInfo{Version: "580.95.05"}, Verdict: matrix.Pass}} {
		l := labels
		if p.Driver != nil {
			l = nil
		}
		CheckStackDriver(p, l)
		if len(p.Checks) != 0 {
			t.Errorf("judged %+v", p.Checks)
		}
	}
	// A label that is there but is not a stack is a warning, not silence.
	for _, bad := range []string{"{not json", `{"cuda":"12.2.2"}`} {
		p := &Result{Driver: &DriverInfo{Version: "580.95.05"}, Verdict: matrix.Pass}
		CheckStackDriver(p, map[string]string{"dev.gpuimg.stack": bad})
		if len(p.Checks) != 1 || p.Checks[0].Status != matrix.Warn || !strings.Contains(p.Checks[0].Message, "not judged") || p.Verdict != matrix.Pass {
			t.Errorf("label %q: %+v verdict %s", bad, p.Checks, p.Verdict)
		}
	}
}

// h200Recorded is a probe result as Probe records it on an H200 (figures
// in the range the matrix's peaks allow; no GPU machine has recorded a
// fixture yet). The judging tests transform it the way a degraded instance
// would differ.
const h200Recorded = `{
 "driver": {"version": "580.95.05", "cuda_version": "13.0"},
 "gpus": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-ffc79498-8ff3-c2dc-3b0d-fafd804516ae", "compute_capability": "9.0", "arch": "sm_90",
   "memory_bytes": 150754820096, "mig": "disabled", "pcie_gen": 5, "pcie_width": 16, "pcie_max_gen": 5, "pcie_max_width": 16}],
 "python": {"python": "3.12.3", "frameworks": {"torch": {"version": "2.9.1+cu130", "cuda": "13.0"}},
   "checks": [{"name": "torch/cuda", "status": "pass", "message": "sees 1 GPU"}],
   "bench": {"gemm_bf16_tflops": 720, "gemm_fp16_tflops": 730, "gemm_fp32_tflops": 50, "memory_bandwidth_gbs": 4300, "h2d_gbs": 53, "d2h_gbs": 54, "resnet50_images_per_s": 2900},
   "conditions": {"resnet50_images_per_s": {"batch": 256, "image_size": 224, "precision": "bf16 autocast"}},
   "device": {"index": 0, "name": "NVIDIA H200", "uuid": "ffc79498-8ff3-c2dc-3b0d-fafd804516ae", "total_memory": 150754820096},
   "step": "done", "complete": true},
 "checks": [], "verdict": "pass"}`

// TestJudgeRecordedH200 judges the recorded H200 result and results
// derived from it, each by one documented transformation, and checks the
// verdict and the message of the figure it changes.
func TestJudgeRecordedH200(t *testing.T) {
	db := db(t)
	for _, tt := range []struct {
		name      string
		transform func(*Result)
		opt       Options
		check     string // the check that tells
		status    Status
		want      string
		verdict   Status
	}{
		{"as recorded", func(*Result) {}, Options{}, "bench/gemm_bf16", matrix.Pass, "720.0 TFLOP/s = 73% of H200-SXM's 989.5 (threshold 50%)", matrix.Pass},
		// 7% slower GEMM: still well above the datasheet floor (a
		// baseline judges such a loss, not the peaks).
		{"GEMM 7% slower", func(r *Result) {
			for _, k := range []string{"gemm_bf16_tflops", "gemm_fp16_tflops", "gemm_fp32_tflops"} {
				r.Python.Bench[k] *= 0.93
			}
		}, Options{}, "bench/gemm_bf16", matrix.Pass, "669.6 TFLOP/s = 68% of H200-SXM's 989.5", matrix.Pass},
		// The same GPU in a slot that gives it only gen3 x8 copies.
		{"host copies at gen3 x8", func(r *Result) {
			r.Python.Bench["h2d_gbs"], r.Python.Bench["d2h_gbs"] = 7.1, 7.2
		}, Options{}, "bench/h2d", matrix.Fail, "7.1 GB/s = 11% of PCIe gen5 x16's 63.0 (threshold 50%)", matrix.Fail},
		// A link that trains at gen3 x8 at most: judged against what it can do.
		{"link gen3 x8", func(r *Result) {
			r.GPUs[0].PCIeMaxGen, r.GPUs[0].PCIeMaxWidth = 3, 8
			r.Python.Bench["h2d_gbs"], r.Python.Bench["d2h_gbs"] = 7.1, 7.2
		}, Options{}, "bench/h2d", matrix.Pass, "7.1 GB/s = 90% of PCIe gen3 x8's 7.9", matrix.Pass},
		{"MIG slice", func(r *Result) {
			r.GPUs[0].MIG = "enabled"
			r.Python.Bench["gemm_bf16_tflops"] /= 7
		}, Options{}, "bench/peak", matrix.Warn, "MIG is enabled on NVIDIA H200", matrix.Pass},
		{"TF32 leaked into fp32", func(r *Result) {
			r.Python.Bench["gemm_fp32_tflops"] = 400
			r.Python.Env = map[string]string{"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}
		}, Options{}, "bench/gemm_fp32", matrix.Warn, "above the peak, so it measured something else: TF32 tensor cores, not float32 on the CUDA cores; TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 lets cuBLAS", matrix.Pass},
		{"bandwidth above HBM", func(r *Result) {
			r.Python.Bench["memory_bandwidth_gbs"] = 9000
		}, Options{}, "bench/memory_bandwidth", matrix.Warn, "a copy served from cache", matrix.Pass},
		{"GH200 host copies over NVLink-C2C", func(r *Result) {
			r.GPUs[0].Name, r.Python.Device.Name = "NVIDIA GH200 480GB", "NVIDIA GH200 480GB"
			r.Python.Bench["h2d_gbs"] = 380
		}, Options{}, "bench/h2d", matrix.Pass, "380.0 GB/s over NVLink-C2C", matrix.Pass},
		// torch's cuda:0 is NVML's GPU 1 (CUDA_VISIBLE_DEVICES=1): the
		// figures are judged against GPU 1, here a slower card.
		{"CUDA_VISIBLE_DEVICES picks GPU 1", func(r *Result) {
			r.GPUs = append(r.GPUs, GPUInfo{Index: 1, Name: "NVIDIA L4", UUID: "GPU-0000aaaa-1111-2222-3333-444455556666", Arch: "sm_89", MIG: "disabled"})
			r.Python.Device = &TorchDevice{Name: "NVIDIA L4", UUID: "0000aaaa-1111-2222-3333-444455556666"}
			r.Python.Env = map[string]string{"CUDA_VISIBLE_DEVICES": "1"}
			r.Python.Bench = map[string]float64{"gemm_fp32_tflops": 12}
		}, Options{}, "bench/gemm_fp32", matrix.Pass, "12.0 TFLOP/s = 40% of L4's 30.3 (threshold 30% for sm_89)", matrix.Pass},
		{"sm_89 floor overridden", func(r *Result) {
			r.GPUs[0] = GPUInfo{Name: "NVIDIA L4", UUID: r.GPUs[0].UUID, Arch: "sm_89", MIG: "disabled"}
			r.Python.Bench = map[string]float64{"gemm_fp32_tflops": 12}
		}, Options{MinEfficiency: map[string]float64{"gemm_fp32": 0.5}}, "bench/gemm_fp32", matrix.Fail, "(threshold 50%)", matrix.Fail},
		{"torch without UUID", func(r *Result) {
			r.Python.Device.UUID = ""
		}, Options{}, "bench/gpu", matrix.Warn, "torch does not report cuda:0's UUID (torch older than 2.4): the figures are judged against NVML's GPU 0 (NVIDIA H200)", matrix.Pass},
		{"torch's GPU unknown to NVML", func(r *Result) {
			r.Python.Device.UUID = "0000bbbb-1111-2222-3333-444455556666"
		}, Options{}, "bench/gpu", matrix.Warn, "is none of the GPUs NVML lists", matrix.Pass},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var res Result
			must(t, json.Unmarshal([]byte(h200Recorded), &res))
			tt.transform(&res)
			opt := tt.opt
			opt.DB, opt.Bench = db, true
			checks := judged(opt, &res)
			var found *Check
			for i := range checks {
				if checks[i].Name == tt.check {
					found = &checks[i]
				}
			}
			if found == nil || found.Status != tt.status || !strings.Contains(found.Message, tt.want) {
				t.Errorf("%s = %+v, want %s %q; all: %+v", tt.check, found, tt.status, tt.want, checks)
			}
			if v := matrix.Verdict(checks); v != tt.verdict {
				t.Errorf("verdict %s, want %s: %+v", v, tt.verdict, checks)
			}
		})
	}
}

// judged is what Probe adds for a recorded result's GPUs and benchmarks.
func judged(opt Options, res *Result) []Check {
	var got []Check
	add := func(name string, st Status, format string, args ...any) {
		got = append(got, Check{Name: name, Status: st, Message: sprintf(format, args...)})
	}
	checkGPUs(res.Driver, res.GPUs, add)
	judgePyBench(opt, res.GPUs, res.Python, add)
	return got
}

// fakeNVML is an NVML whose GPUs answer from gpus; a GPU with an Error
// fails nvmlDeviceGetHandleByIndex with GPU_IS_LOST. The real library
// cannot open a GPU on a machine without one, so the device loop is
// tested against this stand-in; the symbols are checked against the
// real library in TestProbeRealNVMLWithoutKernelDriver.
func fakeNVML(gpus []GPUInfo) *nvmlLib {
	put := func(buf *byte, n uint32, s string) int32 {
		copy(unsafe.Slice(buf, n), append([]byte(s), 0))
		return nvmlSuccess
	}
	get := func(h uintptr) GPUInfo { return gpus[h-1] }
	u32 := func(f func(GPUInfo) int) func(uintptr, *uint32) int32 {
		return func(h uintptr, v *uint32) int32 { *v = uint32(f(get(h))); return nvmlSuccess }
	}
	return &nvmlLib{
		errorString: func(rc int32) string { return map[int32]string{15: "GPU is lost"}[rc] },
		deviceByIndex: func(i uint32, h *uintptr) int32 {
			if gpus[i].Error != "" {
				return 15
			}
			*h = uintptr(i) + 1
			return nvmlSuccess
		},
		deviceName: func(h uintptr, b *byte, n uint32) int32 { return put(b, n, get(h).Name) },
		deviceUUID: func(h uintptr, b *byte, n uint32) int32 { return put(b, n, get(h).UUID) },
		deviceCC: func(h uintptr, major, minor *int32) int32 {
			*major, *minor = 9, 0
			return nvmlSuccess
		},
		deviceMemory:         func(h uintptr, m *nvmlMemory) int32 { m.Total = get(h).MemoryBytes; return nvmlSuccess },
		deviceMIG:            func(h uintptr, cur, pend *uint32) int32 { return 3 }, // NOT_SUPPORTED
		devicePCIeGeneration: u32(func(g GPUInfo) int { return g.PCIeGen }),
		devicePCIeWidth:      u32(func(g GPUInfo) int { return g.PCIeWidth }),
		devicePCIeMaxGen:     u32(func(g GPUInfo) int { return g.PCIeMaxGen }),
		devicePCIeMaxWidth:   u32(func(g GPUInfo) int { return g.PCIeMaxWidth }),
		powerLimit:           u32(func(g GPUInfo) int { return int(g.PowerLimitW * 1000) }),
		powerDefaultLimit:    u32(func(g GPUInfo) int { return int(g.DefaultPowerLimitW * 1000) }),
		eccMode: func(h uintptr, cur, pend *uint32) int32 {
			if get(h).ECC == "" {
				return 3 // NOT_SUPPORTED
			}
			*cur = map[string]uint32{"enabled": 1}[get(h).ECC]
			return nvmlSuccess
		},
		eccErrors: func(h uintptr, typ, counter uint32, n *uint64) int32 {
			if typ != 1 || counter != 0 {
				return 2 // INVALID_ARGUMENT: only uncorrected, volatile is asked
			}
			*n = *get(h).UncorrectedECC
			return nvmlSuccess
		},
		remappedRows: func(h uintptr, corr, unc, pending, failed *uint32) int32 {
			*pending = map[bool]uint32{true: 1}[get(h).RemapPending]
			return nvmlSuccess
		},
		clockEvents: func(h uintptr, mask *uint64) int32 {
			*mask = 0x1 | 0x40 // idle and hardware thermal slowdown
			return nvmlSuccess
		},
	}
}

// TestNVMLLostGPU: one GPU NVML cannot open is a failed check of its own;
// the GPUs after it are still read and reported.
func TestNVMLLostGPU(t *testing.T) {
	errs := uint64(2)
	l := fakeNVML([]GPUInfo{
		{Name: "NVIDIA H200", UUID: "GPU-a", MemoryBytes: 1 << 30, PCIeGen: 5, PCIeWidth: 16, PCIeMaxGen: 5, PCIeMaxWidth: 16,
			Health: Health{PowerLimitW: 700, DefaultPowerLimitW: 700, ECC: "enabled", UncorrectedECC: new(uint64)}},
		{Error: "lost"},
		{Name: "NVIDIA H200", UUID: "GPU-c", Health: Health{PowerLimitW: 400, DefaultPowerLimitW: 700, ECC: "enabled", UncorrectedECC: &errs}},
	})
	gpus := l.devices(3)
	if len(gpus) != 3 || gpus[0].Name != "NVIDIA H200" || gpus[0].Arch != "sm_90" || gpus[0].PCIeMaxWidth != 16 || gpus[0].MIG != "unsupported" || gpus[2].UUID != "GPU-c" {
		t.Fatalf("gpus %+v", gpus)
	}
	if g := gpus[1]; g.Index != 1 || g.Name != "" || !strings.Contains(g.Error, "GPU is lost (15): a GPU has fallen off the bus") {
		t.Errorf("lost GPU %+v", g)
	}
	var got []Check
	checkGPUs(&DriverInfo{Version: "580.95.05", CUDAVersion: "13.0"}, gpus, func(name string, st Status, format string, args ...any) {
		got = append(got, Check{Name: name, Status: st, Message: sprintf(format, args...)})
	})
	byName := map[string]Check{}
	for _, c := range got {
		byName[c.Name] = c
	}
	if c := byName["nvidia-driver/gpu1"]; c.Status != matrix.Fail || !strings.Contains(c.Message, "GPU 1: NVML cannot open it") {
		t.Errorf("lost GPU's check %+v", c)
	}
	if c := byName["nvidia-driver"]; c.Status != matrix.Pass || c.Message != "driver 580.95.05 (CUDA 13.0), 2 of 3 GPU(s): NVIDIA H200 (sm_90), NVIDIA H200 (sm_90)" {
		t.Errorf("driver check %+v", c)
	}
	// NVML's health reads, judged per GPU.
	for name, want := range map[string]struct {
		st  Status
		msg string
	}{
		"gpu0/power":  {matrix.Pass, "power limit 700 W (default 700 W)"},
		"gpu0/memory": {matrix.Pass, "ECC enabled, no uncorrected errors"},
		"gpu0/clocks": {matrix.Warn, "clocks held down when probed: hardware thermal slowdown"},
		"gpu2/power":  {matrix.Warn, "power limit 400 W is below the default 700 W"},
		"gpu2/memory": {matrix.Fail, "2 uncorrected ECC memory errors"},
	} {
		if c := byName[name]; c.Status != want.st || !strings.Contains(c.Message, want.msg) {
			t.Errorf("%s = %+v, want %s %q", name, c, want.st, want.msg)
		}
	}
	if g := gpus[0].Health; g.PowerLimitW != 700 || g.ECC != "enabled" || g.UncorrectedECC == nil || strings.Join(g.ClockEvents, ",") != "hardware thermal slowdown" {
		t.Errorf("health read %+v", g)
	}
	if matrix.Verdict(got) != matrix.Fail {
		t.Errorf("verdict %s", matrix.Verdict(got))
	}
	// Benchmarks are judged against a GPU NVML opened, never the lost one.
	var judged []Check
	add := func(name string, st Status, format string, args ...any) {
		judged = append(judged, Check{Name: name, Status: st, Message: sprintf(format, args...)})
	}
	if g, ok := benchGPU([]GPUInfo{gpus[1], gpus[2]}, &PyProbe{}, add); !ok || g.UUID != "GPU-c" {
		t.Errorf("benchGPU = %+v %v", g, ok)
	}
	if _, ok := benchGPU([]GPUInfo{gpus[1]}, &PyProbe{}, add); ok {
		t.Error("judged against a lost GPU")
	}
}

// TestGPUCheckBudget: bench/gpu/run.sh's step timeouts add up to at most
// the 500 s it promises, so a rerun fits the device allowance.
func TestGPUCheckBudget(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "bench", "gpu", "run.sh"))
	must(t, err)
	total := 0
	for _, m := range regexp.MustCompile(`\btimeout (\d+) `).FindAllStringSubmatch(string(b), -1) {
		n, err := strconv.Atoi(m[1])
		must(t, err)
		total += n
	}
	if total == 0 || total > 500 {
		t.Errorf("run.sh's timeouts add up to %d s, want at most 500", total)
	}
}

func db(t testing.TB) *matrix.DB {
	t.Helper()
	d, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

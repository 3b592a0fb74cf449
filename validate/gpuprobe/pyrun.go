package gpuprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

// pyFrameworks are the frameworks probe.py probes, in the order they run.
var pyFrameworks = []string{"torch", "tensorflow", "jax"}

// childEnv is set for a framework's process unless the environment
// already sets it: JAX and TensorFlow then take GPU memory as they need
// it instead of most of the card up front.
var childEnv = map[string][]string{
	"jax":        {"XLA_PYTHON_CLIENT_PREALLOCATE=false"},
	"tensorflow": {"TF_FORCE_GPU_ALLOW_GROWTH=true"},
}

// pyFacts is what probe.py --facts prints: the interpreter, the variables
// that change what the figures mean, and the frameworks installed.
type pyFacts struct {
	Python    string            `json:"python"`
	Env       map[string]string `json:"env"`
	Installed []string          `json:"installed"`
}

// runPyProbe runs probe.py with the environment's python3; nil when there
// is no Python. probe.py only reports: it first says what is installed
// (--facts), then each framework runs in its own process (probe.py
// --framework NAME), one after the other, supervised here: JAX
// preallocates 75% of the GPU's memory and TensorFlow nearly all of it,
// torch's cache still holds what its benchmarks used, and only one
// libcudnn.so.9 loads per process, so in one process the second framework
// would fail with the wrong diagnosis. A framework's crash or hang is its
// own failed probe/NAME check, with what it found before kept; running
// out of the whole budget is a failed probe/python check.
func runPyProbe(ctx context.Context, opt Options, noGPU bool, add func(string, Status, string, ...any)) *PyProbe {
	py := opt.Python
	if py == "" {
		var err error
		if py, err = exec.LookPath("python3"); err != nil {
			return nil
		}
	}
	budget := opt.Budget
	if budget == 0 {
		budget = 2 * time.Minute
		if opt.Bench {
			budget = 12 * time.Minute
		}
	}
	dir, err := os.MkdirTemp("", "gpuimg-probe-")
	if err != nil {
		add("probe/python", matrix.Fail, "temporary directory: %v", err)
		return nil
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "probe.py")
	if err := os.WriteFile(script, probePy, 0o644); err != nil {
		add("probe/python", matrix.Fail, "write probe: %v", err)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	// torch numbers GPUs fastest first by default, NVML by PCI bus: the
	// same order for both, so the figures are judged against the GPU
	// that produced them.
	env := append(os.Environ(), "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	stopped := func() string {
		if ctx.Err() != nil {
			return "the Python probe was interrupted"
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return fmt.Sprintf("the Python probe did not finish within %s", budget)
		}
		return ""
	}

	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(cctx, py, script, "--facts")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	var facts pyFacts
	jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &facts)
	switch why := stopped(); {
	case why != "":
		add("probe/python", matrix.Fail, "%s", why)
		return nil
	case err != nil:
		add("probe/python", matrix.Fail, "the Python probe crashed (%v): %s", err, errorLine(stderr.String()))
		return nil
	case jerr != nil || facts.Python == "":
		add("probe/python", matrix.Fail, "the Python probe stopped without its result: %s", errorLine(stderr.String()))
		return nil
	}

	pp := &PyProbe{Python: facts.Python, Frameworks: map[string]json.RawMessage{}, Checks: []Check{}, Bench: map[string]float64{},
		Conditions: map[string]BenchConditions{}, Spread: map[string]BenchSpread{}, Env: facts.Env, Step: "start"}
	pp.Host = checkCPUQuota(cgroupRoot, cpusSeen(), func(c Check) { pp.Checks = append(pp.Checks, c) })

	// Each framework in its own process, one after the other. The
	// benchmarks (torch's) get what is left of probe.py's share of the
	// budget (0.8); each child may run until 1.2 shares (the whole probe
	// stops at the budget, 1.25 shares), less a reserve for the
	// frameworks still to come, at least 30 s.
	share := time.Duration(int(budget.Seconds()*0.8)) * time.Second
	reserve := min(time.Minute, share/10)
	var todo []string
	for _, name := range pyFrameworks {
		if slices.Contains(facts.Installed, name) {
			todo = append(todo, name)
		}
	}
	start := time.Now()
	for i, name := range todo {
		elapsed := time.Since(start)
		args := []string{script, "--framework", name, "--budget", fmt.Sprintf("%.1f", max(share-elapsed, 0).Seconds())}
		if opt.Bench {
			args = append(args, "--bench")
		}
		if noGPU {
			args = append(args, "--no-gpu")
		}
		timeout := max(share*12/10-elapsed-reserve*time.Duration(len(todo)-i-1), 30*time.Second)
		complete := runChild(cctx, py, args, childEnvFor(env, name), name, timeout, pp, opt.Progress, start)
		if why := stopped(); why != "" {
			if complete && i == len(todo)-1 {
				// Every step finished; only the interpreter's exit (CUDA
				// or NCCL teardown) hung.
				pp.Checks = append(pp.Checks, Check{Name: "probe/python", Status: matrix.Warn, Message: why + " after printing its complete result"})
				pp.Step, pp.Complete = "done", true
			} else {
				// Keep what the steps before the hang or crash found.
				pp.Checks = append(pp.Checks, Check{Name: "probe/python", Status: matrix.Fail, Message: why + "; results up to " + pp.Step + " are kept"})
			}
			judgeTorchArch(pp)
			return pp
		}
	}
	judgeTorchArch(pp)
	pp.Step, pp.Complete = "done", true
	return pp
}

// childEnvFor is env with the variables childEnv sets for framework name,
// where env does not set them already.
func childEnvFor(env []string, name string) []string {
	out := slices.Clone(env)
	for _, kv := range childEnv[name] {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }) {
			out = append(out, kv)
		}
	}
	return out
}

// pySnapshot is one line of a framework's output: everything it found so
// far, after the step it names.
type pySnapshot struct {
	Frameworks map[string]json.RawMessage `json:"frameworks"`
	Checks     []Check                    `json:"checks"`
	Bench      map[string]float64         `json:"bench"`
	Conditions map[string]BenchConditions `json:"conditions"`
	Spread     map[string]BenchSpread     `json:"spread"`
	Device     *TorchDevice               `json:"device"`
	Step       string                     `json:"step"`
	Complete   bool                       `json:"complete"`
}

// runChild runs one framework's probe (args) and takes its snapshots into
// pp as they arrive, telling progress each step; a child that runs past
// timeout is killed. A crash or a hang becomes a failed probe/NAME check,
// an exit that fails after the complete result a warning; what the child
// found before is kept. The caller's ctx ending stops the child without a
// check of its own (the caller says why). It says whether the child's
// last snapshot was its complete result.
func runChild(ctx context.Context, py string, args, env []string, name string, timeout time.Duration, pp *PyProbe, progress func(string, time.Duration), start time.Time) (complete bool) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base := slices.Clone(pp.Checks)
	var last *pySnapshot
	var stderr bytes.Buffer
	stdout := &lineWriter{line: func(line []byte) {
		var snap pySnapshot
		if json.Unmarshal(line, &snap) != nil || snap.Step == "" {
			return
		}
		mergeSnapshot(pp, base, &snap)
		last = &snap
		if !snap.Complete {
			pp.Step = snap.Step
			if progress != nil {
				progress(snap.Step, time.Since(start))
			}
		}
	}}
	cmd := exec.CommandContext(cctx, py, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, stdout, &stderr
	// A grandchild that keeps the pipes open must not hold the probe.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		pp.Checks = append(pp.Checks, Check{Name: "probe/" + name, Status: matrix.Fail, Message: fmt.Sprintf("cannot start the %s probe: %v", name, err)})
		return false
	}
	werr := cmd.Wait()
	stdout.flush()
	complete = last != nil && last.Complete
	if ctx.Err() != nil {
		return complete
	}
	detail := errorLine(stderr.String())
	var why string
	switch {
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		why = fmt.Sprintf("did not finish within %.0f s", timeout.Seconds())
	case complete:
		if werr != nil {
			pp.Checks = append(pp.Checks, Check{Name: "probe/" + name, Status: matrix.Warn,
				Message: fmt.Sprintf("the %s probe exited with status %d after printing its complete result: %s", name, exitStatus(cmd.ProcessState), detail)})
		}
		return true
	default:
		why = "crashed (" + exitText(cmd.ProcessState) + ")"
	}
	msg := fmt.Sprintf("the %s probe %s", name, why)
	if detail != "" {
		msg += ": " + detail
	}
	if last != nil {
		msg += "; results up to " + last.Step + " are kept"
	}
	pp.Checks = append(pp.Checks, Check{Name: "probe/" + name, Status: matrix.Fail, Message: msg})
	return complete
}

// lineWriter hands each whole line written to it to line, and the rest
// to flush.
type lineWriter struct {
	buf  []byte
	line func([]byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// flush hands on a last line that has no newline.
func (w *lineWriter) flush() {
	if len(bytes.TrimSpace(w.buf)) > 0 {
		w.line(w.buf)
	}
	w.buf = nil
}

// exitText says how a process ended: "signal 11" or "exit status 3".
func exitText(ps *os.ProcessState) string {
	if n := exitStatus(ps); n < 0 {
		return fmt.Sprintf("signal %d", -n)
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}

// exitStatus is a process's exit status, or minus the signal that killed
// it (as Python's subprocess says it).
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return ps.ExitCode()
}

// mergeSnapshot takes a child's snapshot into pp: its checks after base
// (those found before the child started), its maps key by key.
func mergeSnapshot(pp *PyProbe, base []Check, snap *pySnapshot) {
	pp.Checks = append(slices.Clone(base), snap.Checks...)
	maps.Copy(pp.Frameworks, snap.Frameworks)
	maps.Copy(pp.Bench, snap.Bench)
	maps.Copy(pp.Conditions, snap.Conditions)
	maps.Copy(pp.Spread, snap.Spread)
	if snap.Device != nil {
		pp.Device = snap.Device
	}
}

// errorLine is the line of a Python stderr most likely to say what went
// wrong: the last one that is neither a warning nor a quoted source line
// (torch's deprecation warnings end with the line that raised them).
func errorLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range slices.Backward(lines) {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") || strings.Contains(l, "Warning:") {
			continue
		}
		return strings.TrimSpace(l)
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// judgeTorchArch judges the architectures torch was compiled for
// (torch.cuda.get_arch_list: sm_XY, sm_90a, sm_100f, compute_XY) against
// the capability of the GPU it ran on, with the one arch-coverage rule
// (matrix.KernelCoverage). The check goes where probe.py's torch checks
// had it: after torch/cuda (and torch/device), before torch/matmul.
func judgeTorchArch(pp *PyProbe) {
	var torch struct {
		ArchList   []string `json:"arch_list"`
		Capability string   `json:"capability"`
	}
	raw, ok := pp.Frameworks["torch"]
	if !ok || json.Unmarshal(raw, &torch) != nil || torch.ArchList == nil || torch.Capability == "" {
		return
	}
	major, minor, _ := strings.Cut(torch.Capability, ".")
	sm := "sm_" + major + minor
	sass, ptx := torchArchs(torch.ArchList)
	var c Check
	switch matrix.KernelCoverage(sm, sass, ptx) {
	case matrix.Native:
		c = Check{Name: "torch/arch", Status: matrix.Pass, Message: "torch has native kernels for " + sm}
	case matrix.ViaPTX:
		c = Check{Name: "torch/arch", Status: matrix.Warn, Message: "torch has only PTX for " + sm + ": kernels are JIT-compiled on first use"}
	default:
		c = Check{Name: "torch/arch", Status: matrix.Fail, Message: "torch was compiled for " + strings.Join(torch.ArchList, " ") + ", none of which runs on " + sm}
	}
	at := len(pp.Checks)
	for i, x := range pp.Checks {
		if x.Name == "torch/cuda" || x.Name == "torch/device" {
			at = i + 1
		}
	}
	pp.Checks = slices.Insert(pp.Checks, at, c)
}

// torchArchs splits torch's architecture names into SASS (sm_XY, sm_90a,
// sm_100f) and PTX (compute_XY, named sm_XY as matrix.KernelCoverage
// takes it); names of another form are left out.
func torchArchs(list []string) (sass, ptx []string) {
	for _, a := range list {
		kind, num, ok := strings.Cut(a, "_")
		digits := num
		if strings.HasSuffix(num, "a") || strings.HasSuffix(num, "f") {
			digits = num[:len(num)-1]
		}
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			continue
		}
		switch kind {
		case "sm":
			sass = append(sass, a)
		case "compute":
			ptx = append(ptx, "sm_"+num)
		}
	}
	return sass, ptx
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// TestValidateRunDriverTooOld: when the NVIDIA container runtime refuses
// to start an image because the host's driver is older than its
// NVIDIA_REQUIRE_CUDA, validate --run reports a failed driver-floor check
// (exit 1), not "no GPU". No driver here can be too old, so the engine is
// a script that answers as docker does then (nvidia-container-cli's own
// words, as users report them).
func TestValidateRunDriverTooOld(t *testing.T) {
	dir := t.TempDir()
	refusal := "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container: unknown."
	script := "#!/bin/sh\ncat >&2 <<'EOF'\n" + refusal + "\nEOF\nexit 125\n"
	must(t, os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755))
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	out, errOut, code := run(t, "validate", "docker-daemon:example.com/ml/torch:cu128", "--run", "docker", "-o", "json")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFailed, out, errOut)
	}
	// podman cannot read docker's images: said plainly, before anything runs.
	if _, errOut, code := run(t, "validate", "docker-daemon:example.com/ml/torch:cu128", "--run", "podman"); code != 2 || !strings.Contains(errOut, "cannot use an image in docker's daemon") {
		t.Errorf("podman with a docker-daemon image: exit %d %q", code, errOut)
	}
	var rep struct {
		Kind, Verdict string
		Checks        []struct{ Name, Status, Message string }
	}
	must(t, json.Unmarshal([]byte(out), &rep))
	if rep.Verdict != "fail" || len(rep.Checks) == 0 {
		t.Fatalf("report %+v", rep)
	}
	var found bool
	for _, c := range rep.Checks {
		if c.Name == "driver-floor" && c.Status == "fail" && strings.Contains(c.Message, "requirement cuda>=12.8 is not met") && strings.Contains(c.Message, "update the driver") {
			found = true
		}
	}
	if !found {
		t.Errorf("no failed driver-floor check: %+v", rep.Checks)
	}
}

// TestRenderProbeText: the readable table names the driver, each GPU with
// its link, the benchmark figures in a fixed order, every check and the
// verdict.
func TestRenderProbeText(t *testing.T) {
	res := &gpuprobe.Result{
		Driver:  &gpuprobe.DriverInfo{Version: "580.95.05", CUDAVersion: "13.0"},
		GPUs:    []gpuprobe.GPUInfo{{Index: 0, Name: "NVIDIA H200", UUID: "GPU-1", Arch: "sm_90", MemoryBytes: 150 << 30, MIG: "disabled", PCIeGen: 1, PCIeWidth: 16, PCIeMaxGen: 5, PCIeMaxWidth: 16}},
		Python:  &gpuprobe.PyProbe{Python: "3.12.3", Bench: map[string]float64{"memory_bandwidth_gbs": 4100, "gemm_bf16_tflops": 700.25, "d2h_gbs": 50}},
		Checks:  []validate.Check{{Name: "torch/cuda", Status: "pass", Message: "sees 1 GPU"}},
		Verdict: "pass",
	}
	var b strings.Builder
	must(t, renderProbe(&b, "text", res))
	out := b.String()
	for _, want := range []string{"driver  580.95.05 (CUDA 13.0)", "NVIDIA H200 sm_90, GPU-1, 150.0 GiB, MIG disabled, PCIe gen 1 x16 (up to gen 5 x16)", "PASS", "torch/cuda", "verdict: pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if i, j, k := strings.Index(out, "d2h_gbs"), strings.Index(out, "gemm_bf16_tflops"), strings.Index(out, "memory_bandwidth_gbs"); i < 0 || i >= j || j >= k {
		t.Errorf("bench figures not in name order:\n%s", out)
	}
}

// TestValidateRunJudgesStackDriver: with a GPU, the driver the probe saw
// is judged against the floor in the image's stack label. There is no GPU
// here, so the engine is a script answering as docker does on a GPU host:
// the probe's JSON for run, the labels for image inspect.
func TestValidateRunJudgesStackDriver(t *testing.T) {
	for _, tt := range []struct {
		driver, status string
		code           int
	}{
		{"580.95.05", "pass", 0},
		{"535.54.03", "warn", 0},
		{"470.256.02", "fail", ExitFailed},
	} {
		t.Run(tt.driver, func(t *testing.T) {
			dir := t.TempDir()
			probe := `{"driver":{"version":"` + tt.driver + `","cuda_version":"12.2"},"gpus":[{"index":0,"name":"NVIDIA H200","arch":"sm_90"}],"checks":[{"name":"nvidia-driver","status":"pass","message":"ok"}],"verdict":"pass","created":"2026-11-30T00:00:00Z"}`
			script := "#!/bin/sh\ncase \"$1 $2\" in\n\"image inspect\") echo '" + `{"dev.gpuimg.stack":"{\"cuda\":\"12.2.2\",\"min_driver\":\"535.104.05\",\"min_driver_compat\":\"525.60.13\"}"}` + "';;\nrun*) echo '" + probe + "';;\n*) exit 1;;\nesac\n"
			must(t, os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755))
			t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
			out, errOut, code := run(t, "validate", "docker-daemon:example.com/ml/torch:cu122", "--run", "docker", "-o", "json")
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			var rep struct {
				Checks []struct{ Name, Status, Message string }
			}
			must(t, json.Unmarshal([]byte(out), &rep))
			var got string
			for _, c := range rep.Checks {
				if c.Name == "driver-floor/stack" {
					got = c.Status
				}
			}
			if got != tt.status {
				t.Errorf("driver-floor/stack %q, want %q: %+v", got, tt.status, rep.Checks)
			}
		})
	}
}

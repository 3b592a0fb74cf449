package gpuprobe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestProbeCheckRequire: the probe judges NVIDIA_REQUIRE_CUDA with the
// runtime's rule (matrix.DB.JudgeRuntimeOn) against what NVML reports:
// the driver, the CUDA it reports, each GPU's compute capability.
func TestProbeCheckRequire(t *testing.T) {
	h100 := []GPUInfo{{Name: "NVIDIA H100 80GB HBM3", ComputeCapability: "9.0", Arch: "sm_90"}}
	for _, tt := range []struct {
		req, driver, cuda string
		want              Status
		has               string
	}{
		{"cuda>=12.2", "535.54.03", "12.2", matrix.Pass, "driver 535.54.03 reports CUDA 12.2 (NVML)"},
		{"cuda>=12.2", "530.30.02", "12.1", matrix.Fail, "refuses to start the image"},
		{"cuda>=12.2 arch<9.0", "530.30.02", "12.1", matrix.Fail, "on NVIDIA H100 80GB HBM3"},
		{"cuda>=12.2 arch>=9.0", "530.30.02", "12.1", matrix.Pass, "holds"},
		// NVIDIA's clause for R470 holds only for the brands it names.
		{"cuda>=12.2 brand=tesla,driver>=470,driver<471", "470.82.01", "11.4", matrix.Warn, "NVML brand"},
	} {
		var got []Check
		add := func(name string, st Status, format string, args ...any) {
			got = append(got, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
		}
		checkRequire(db(t), map[string]string{"NVIDIA_REQUIRE_CUDA": tt.req}, &DriverInfo{Version: tt.driver, CUDAVersion: tt.cuda}, h100, add)
		if len(got) != 1 || got[0].Name != "driver-floor" || got[0].Status != tt.want || !strings.Contains(got[0].Message, tt.has) {
			t.Errorf("%s on %s: %+v; want %s with %q", tt.req, tt.driver, got, tt.want, tt.has)
		}
	}
	// The toolkit's legacy rule: CUDA_VERSION without NVIDIA_REQUIRE_CUDA
	// requires cuda>=MAJOR.MINOR (nvidia-container-toolkit
	// internal/config/image/cuda_image.go at d34b3046, L98-105, L125-132).
	var got []Check
	add := func(name string, st Status, format string, args ...any) {
		got = append(got, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
	env := matrix.RuntimeEnviron([]string{"PATH=/usr/bin", "CUDA_VERSION=12.4.1", "NVIDIA_VISIBLE_DEVICES=all"})
	checkRequire(db(t), env, &DriverInfo{Version: "535.104.05", CUDAVersion: "12.2"}, h100, add)
	if len(got) != 1 || got[0].Status != matrix.Fail || !strings.Contains(got[0].Message, "cuda>=12.4 (the NVIDIA container toolkit's own requirement") {
		t.Errorf("legacy image on 535.104.05: %+v", got)
	}
	got = nil
	checkRequire(db(t), matrix.RuntimeEnviron([]string{"PATH=/usr/bin"}), &DriverInfo{Version: "535.104.05", CUDAVersion: "12.2"}, h100, add)
	if len(got) != 0 {
		t.Errorf("no requirement: %+v", got)
	}
}

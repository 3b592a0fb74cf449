package matrix

import (
	"strings"
	"testing"
)

func TestKernelCoverage(t *testing.T) {
	for _, tt := range []struct {
		name      string
		gpu       string
		sass, ptx []string
		want      Coverage
	}{
		{"same arch SASS", "sm_90", []string{"sm_90"}, nil, Native},
		{"SASS runs on a later minor", "sm_86", []string{"sm_80"}, nil, Native},
		{"SASS does not run on an earlier minor", "sm_80", []string{"sm_86"}, nil, NoKernels},
		{"SASS does not cross majors", "sm_100", []string{"sm_80", "sm_90"}, nil, NoKernels},
		{"PTX JITs forward across majors", "sm_100", []string{"sm_80", "sm_90"}, []string{"sm_90"}, ViaPTX},
		{"PTX newer than the GPU does not JIT", "sm_80", nil, []string{"sm_90"}, NoKernels},
		{"native wins over PTX", "sm_90", []string{"sm_90"}, []string{"sm_90"}, Native},
		{"arch-specific SASS on its GPU", "sm_90", []string{"sm_90a"}, nil, Native},
		{"arch-specific SASS not on a later major", "sm_100", []string{"sm_90a"}, nil, NoKernels},
		{"arch-specific SASS not on a later minor", "sm_103", []string{"sm_100a"}, nil, NoKernels},
		{"plain SASS of the same major runs on the later minor", "sm_103", []string{"sm_100a", "sm_100"}, nil, Native},
		{"family-specific SASS on its family", "sm_103", []string{"sm_100f"}, nil, Native},
		{"family-specific SASS not on another major", "sm_120", []string{"sm_100f"}, nil, NoKernels},
		{"family-specific SASS not on an earlier minor", "sm_100", []string{"sm_103f"}, nil, NoKernels},
		{"family-specific PTX within its family", "sm_103", nil, []string{"sm_100f"}, ViaPTX},
		{"family-specific PTX not across majors", "sm_120", nil, []string{"sm_100f"}, NoKernels},
		{"arch-specific PTX not elsewhere", "sm_100", nil, []string{"sm_90a"}, NoKernels},
		{"arch-specific PTX on its GPU", "sm_90", nil, []string{"sm_90a"}, ViaPTX},
		{"nothing", "sm_90", nil, nil, NoKernels},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := KernelCoverage(tt.gpu, tt.sass, tt.ptx); got != tt.want {
				t.Errorf("KernelCoverage(%s, %v, %v) = %v, want %v", tt.gpu, tt.sass, tt.ptx, got, tt.want)
			}
		})
	}
}

func TestCoverageRuns(t *testing.T) {
	for _, tt := range []struct {
		c      Coverage
		compat bool
		want   bool
	}{
		{Native, false, true}, {Native, true, true},
		{ViaPTX, false, true}, {ViaPTX, true, false},
		{NoKernels, false, false}, {NoKernels, true, false},
	} {
		if got := tt.c.Runs(tt.compat); got != tt.want {
			t.Errorf("%v.Runs(%v) = %v, want %v", tt.c, tt.compat, got, tt.want)
		}
	}
}

func TestCUDATargets(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cuda, gpu string
		errHas    string
	}{
		{"12.8.0", "B200", ""},
		{"12.4.1", "B200", "needs CUDA 12.8 or newer; CUDA 12.4.1 cannot target it"},
		{"13.0.0", "V100-SXM2-16GB", "is not supported by CUDA 13.0.0: support ended in CUDA 13.0"},
		{"11.8.0", "A100-SXM4-80GB", ""},
	} {
		t.Run(tt.cuda+"/"+tt.gpu, func(t *testing.T) {
			g, err := db.FindGPU(tt.gpu)
			if err != nil {
				t.Fatal(err)
			}
			err = db.CUDATargets(MustVersion(tt.cuda), g)
			switch {
			case tt.errHas == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
				t.Errorf("error %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

func TestFitWheel(t *testing.T) {
	for _, tt := range []struct {
		wheel, image string
		want         WheelFit
		runs         bool
	}{
		{"12.1", "12.1.1", WheelSameCUDA, true},
		{"12.1", "12.2.2", WheelMinorCompat, true},
		{"12.4", "12.2.2", WheelNewer, false},
		{"11.8", "12.2.2", WheelOtherMajor, false},
		{"13.0", "12.9.1", WheelOtherMajor, false},
	} {
		got := FitWheel(MustVersion(tt.wheel), MustVersion(tt.image))
		if got != tt.want || got.Runs() != tt.runs {
			t.Errorf("FitWheel(%s, %s) = %v (runs %v), want %v (runs %v)", tt.wheel, tt.image, got, got.Runs(), tt.want, tt.runs)
		}
	}
}

// TestFamilySpecificTable28 holds KernelCoverage's f rule to NVIDIA's own
// table: CUDA Programming Guide 5.1.2.3 "Feature Set Compiler Targets",
// Table 28 "Family-Specific Compatibility" (docs.nvidia.com, published
// 2025-12-15, read 2026-12-07 as source cuda-pg-family-specific):
// compute_100f runs on 10.0 and 10.3, compute_103f on 10.3, compute_110f on
// 11.0, compute_120f on 12.0 and 12.1, compute_121f on 12.1. Every other
// GPU architecture the matrix knows gets nothing from an f target, SASS or
// PTX; an a target runs only on its own compute capability (5.1.2.1).
// The guide warns of exceptions to "same major, equal or higher minor"; this
// test is where a new row of Table 28 that breaks the rule shows up.
func TestFamilySpecificTable28(t *testing.T) {
	table28 := map[string][]string{
		"sm_100": {"sm_100", "sm_103"},
		"sm_103": {"sm_103"},
		"sm_110": {"sm_110"},
		"sm_120": {"sm_120", "sm_121"},
		"sm_121": {"sm_121"},
	}
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for target, members := range table28 {
		for _, a := range db.Archs {
			if a.RenamedTo != "" {
				// sm_101 is sm_110 from CUDA 13.0; Table 28 is of the
				// CUDA 13 guide and names no 10.1.
				continue
			}
			gpu := a.Arch
			want := NoKernels
			for _, m := range members {
				if m == gpu {
					want = Native
				}
			}
			if got := KernelCoverage(gpu, []string{target + "f"}, nil); got != want {
				t.Errorf("%sf SASS on %s = %v, want %v (Table 28)", target, gpu, got, want)
			}
			wantPTX := map[Coverage]Coverage{Native: ViaPTX, NoKernels: NoKernels}[want]
			if got := KernelCoverage(gpu, nil, []string{target + "f"}); got != wantPTX {
				t.Errorf("%sf PTX on %s = %v, want %v (Table 28)", target, gpu, got, wantPTX)
			}
			wantA := NoKernels
			if gpu == target {
				wantA = Native
			}
			if got := KernelCoverage(gpu, []string{target + "a"}, nil); got != wantA {
				t.Errorf("%sa SASS on %s = %v, want %v (exact compute capability only)", target, gpu, got, wantA)
			}
		}
	}
}

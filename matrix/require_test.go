package matrix

import (
	"strings"
	"testing"
)

// nvidiaRequire1222 is NVIDIA_REQUIRE_CUDA of NVIDIA's
// nvidia/cuda:12.2.2-runtime-ubuntu22.04 for amd64 (gitlab.com/nvidia/
// container-images/cuda, dist/12.2.2/ubuntu2204/runtime/Dockerfile, read
// 2026-12-01 from a copy of that Dockerfile); its arm64 stage sets plain
// cuda>=12.2.
const nvidiaRequire1222 = "cuda>=12.2 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471 brand=nvidiartx,driver>=470,driver<471 brand=geforce,driver>=470,driver<471 brand=geforcertx,driver>=470,driver<471 brand=quadro,driver>=470,driver<471 brand=quadrortx,driver>=470,driver<471 brand=titan,driver>=470,driver<471 brand=titanrtx,driver>=470,driver<471 brand=tesla,driver>=525,driver<526 brand=unknown,driver>=525,driver<526 brand=nvidia,driver>=525,driver<526 brand=nvidiartx,driver>=525,driver<526 brand=geforce,driver>=525,driver<526 brand=geforcertx,driver>=525,driver<526 brand=quadro,driver>=525,driver<526 brand=quadrortx,driver>=525,driver<526 brand=titan,driver>=525,driver<526 brand=titanrtx,driver>=525,driver<526"

// TestRequirementEval is the runtime's grammar, as libnvidia-container
// evaluates it (github.com/NVIDIA/libnvidia-container src/cli/dsl.c:
// space-separated alternatives, comma-separated conjunctions, versions
// compared part by part, brand case-insensitive; src/cli/configure.c: the
// cuda, driver, arch and brand rules, arch and brand true without a
// visible GPU, which gpuimg reads as unknown).
func TestRequirementEval(t *testing.T) {
	host := func(driver, cuda, arch, brand string) RuntimeHost {
		h := RuntimeHost{Arch: arch, Brand: brand}
		if driver != "" {
			h.Driver = MustVersion(driver)
		}
		if cuda != "" {
			h.CUDA = MustVersion(cuda)
		}
		return h
	}
	for _, tt := range []struct {
		name string
		req  string
		host RuntimeHost
		want Truth
	}{
		// nvidia-smi prints "Driver Version: 535.54.03 CUDA Version: 12.2".
		{"the driver's CUDA meets cuda>=", "cuda>=12.2", host("535.54.03", "12.2", "", ""), True},
		{"an older reported CUDA fails", "cuda>=12.2", host("530.30.02", "12.1", "", ""), False},
		{"missing parts are zeros", "cuda>=12.2.0", host("535.54.03", "12.2", "", ""), True},
		{"numbers, not text", "cuda>=12.10", host("", "12.9", "", ""), False},
		{"property names ignore case", "CUDA>=12.2", host("", "12.4", "", ""), True},
		{"a conjunction needs every condition", "cuda>=12.2,driver>=535.104.05", host("535.54.03", "12.2", "", ""), False},
		{"an alternative is enough", "cuda>=12.4 driver>=535,driver<536", host("535.54.03", "12.2", "", ""), True},
		{"no alternative holds", "cuda>=12.4 driver>=550", host("535.54.03", "12.2", "", ""), False},
		{"an empty value always holds", "", host("535.54.03", "12.2", "", ""), True},
		{"arch against the GPU's compute capability", "arch>=8.0", host("", "", "9.0", ""), True},
		{"arch of no GPU is unknown", "arch>=8.0", host("", "", "", ""), Unknown},
		// NVIDIA's own forward-compatibility clauses.
		{"NVIDIA's image on its cuda>= term", nvidiaRequire1222, host("535.104.05", "12.2", "", ""), True},
		{"NVIDIA's image on R470, brand unknown", nvidiaRequire1222, host("470.82.01", "11.4", "", ""), Unknown},
		{"NVIDIA's image on R470 Tesla", nvidiaRequire1222, host("470.82.01", "11.4", "", "Tesla"), True},
		{"NVIDIA's image on R525 GeForce", nvidiaRequire1222, host("525.60.13", "12.0", "", "GeForce"), True},
		{"NVIDIA's image on R470 GRID, a brand it does not list", nvidiaRequire1222, host("470.82.01", "11.4", "", "GRID"), False},
		{"NVIDIA's image on R530: no clause for that branch", nvidiaRequire1222, host("530.30.02", "12.1", "", "Tesla"), False},
		{"brand != ", "brand!=geforce", host("", "", "", "Tesla"), True},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequirement(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Eval(tt.host); got != tt.want {
				t.Errorf("Eval(%q, %+v) = %d, want %d", tt.req, tt.host, got, tt.want)
			}
		})
	}
}

// TestParseRequirementInvalid: what libnvidia-container calls an "invalid
// expression" (the container does not start) is an error.
func TestParseRequirementInvalid(t *testing.T) {
	for _, req := range []string{"cuda=>12.2", "gpu>=1", "cuda>=", "cuda>=12.2a", "brand>tesla", ">=12.2", "cuda"} {
		if _, err := ParseRequirement(req); err == nil {
			t.Errorf("ParseRequirement(%q) = nil error", req)
		}
	}
	r, err := ParseRequirement("cuda>=12.2  brand=tesla,,driver>=470")
	if err != nil || len(r.Alts) != 2 || len(r.Alts[1]) != 2 {
		t.Errorf("empty terms are skipped as the runtime skips them: %+v, %v", r, err)
	}
}

// TestReportedCUDA: the CUDA a driver reports, derived from cuda.yaml's
// per-release floors (CUDA Toolkit release notes, "CUDA Toolkit and
// Corresponding Driver Versions"), checked against what nvidia-smi prints
// on those drivers (535.54.03: 12.2; 550.54.14: 12.4; 565.57.01: 12.7).
func TestReportedCUDA(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ driver, want string }{
		{"535.54.03", "12.2"},  // CUDA 12.2.0's own driver
		{"535.104.05", "12.2"}, // 12.2.2's
		{"550.54.14", "12.4"},  // 12.4.0's
		{"525.60.13", "12.0"},
		{"530.30.02", "12.1"},
		{"470.82.01", "11.4"},
		{"580.65.06", "13.0"},
		// R565 reports 12.7, for which there is no toolkit: the floors give
		// 12.6, one minor less, which no released CUDA's cuda>= can tell.
		{"565.57.01", "12.6"},
		{"440.33.01", ""}, // below every floor the matrix records
	} {
		got, _, ok := db.ReportedCUDA(MustVersion(tt.driver))
		if (tt.want == "") == ok || (ok && got.String() != tt.want) {
			t.Errorf("ReportedCUDA(%s) = %s, %v; want %q", tt.driver, got, ok, tt.want)
		}
	}
	if f, ok := db.firstDriverFor(MustVersion("12.2")); !ok || f.String() != "535.54.03" {
		t.Errorf("firstDriverFor(12.2) = %s, %v; want 535.54.03", f, ok)
	}
}

func TestComputeCapability(t *testing.T) {
	for arch, want := range map[string]string{"sm_90": "9.0", "sm_86": "8.6", "sm_100": "10.0", "sm_120": "12.0", "sm_90a": "", "compute_90": "", "sm_9": ""} {
		if got := ComputeCapability(arch); got != want {
			t.Errorf("ComputeCapability(%q) = %q, want %q", arch, got, want)
		}
	}
}

// TestJudgeRuntime: the finding matrix check, validate --driver and
// validate --target share.
func TestJudgeRuntime(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	h100, err := db.FindGPU("h100")
	if err != nil {
		t.Fatal(err)
	}
	req := func(v string) map[string]string { return map[string]string{"NVIDIA_REQUIRE_CUDA": v} }
	for _, tt := range []struct {
		name   string
		env    map[string]string
		driver string
		gpus   []GPU
		want   Status
		has    string
	}{
		{"12.2.0's driver runs cuda>=12.2", req("cuda>=12.2"), "535.54.03", nil, Pass, "driver 535.54.03 reports CUDA 12.2"},
		{"12.4.0's driver runs cuda>=12.4", req("cuda>=12.4"), "550.54.14", nil, Pass, "reports CUDA 12.4"},
		{"the runtime refuses an older CUDA", req("cuda>=12.2"), "525.60.13", nil, Fail, "update the driver to 535.54.03 or newer"},
		{"a compat stack's cuda>=12.0", req("cuda>=12.0"), "525.60.13", nil, Pass, "holds"},
		{"NVIDIA's clauses on R470 depend on the brand", req(nvidiaRequire1222), "470.82.01", []GPU{h100}, Warn, "NVML brand"},
		{"NVIDIA's clauses on R530 fail", req(nvidiaRequire1222), "530.30.02", []GPU{h100}, Fail, "on H100-SXM"},
		{"arch named by the GPU", req("cuda>=12.2 arch>=9.0"), "470.82.01", []GPU{h100}, Pass, "on H100-SXM"},
		{"no GPU: arch unknown", req("cuda>=12.2 arch>=9.0"), "470.82.01", nil, Warn, "name it with --gpu"},
		{"variables are ANDed", map[string]string{"NVIDIA_REQUIRE_CUDA": "cuda>=12.2", "NVIDIA_REQUIRE_DRIVER": "driver>=535.104.05"}, "535.54.03", nil, Fail, "NVIDIA_REQUIRE_DRIVER"},
		{"JETPACK is not a requirement", map[string]string{"NVIDIA_REQUIRE_JETPACK": "csv-mounts=all"}, "535.54.03", nil, Pass, "sets no NVIDIA_REQUIRE_"},
		{"NVIDIA_DISABLE_REQUIRE", map[string]string{"NVIDIA_REQUIRE_CUDA": "cuda>=13.0", "NVIDIA_DISABLE_REQUIRE": "true"}, "535.54.03", nil, Pass, "checks no requirement"},
		{"an invalid value refuses every driver", req("cuda=>12.2"), "580.65.06", nil, Fail, "invalid expression"},
		{"no requirement", nil, "470.82.01", nil, Pass, "sets no NVIDIA_REQUIRE_"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := db.JudgeRuntime("require", tt.env, MustVersion(tt.driver), tt.gpus)
			if f.Status != tt.want || !strings.Contains(f.Message, tt.has) {
				t.Errorf("JudgeRuntime = %s %q; want %s with %q", f.Status, f.Message, tt.want, tt.has)
			}
		})
	}
}

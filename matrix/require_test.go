package matrix

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// nvidiaRequire1222 is NVIDIA_REQUIRE_CUDA of NVIDIA's
// nvidia/cuda:12.2.2-runtime-ubuntu22.04 for amd64 (gitlab.com/nvidia/
// container-images/cuda, dist/12.2.2/ubuntu2204/runtime/Dockerfile, read
// 2026-12-01 from a copy of that Dockerfile); its arm64 stage sets plain
// cuda>=12.2.
const nvidiaRequire1222 = "cuda>=12.2 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471 brand=nvidiartx,driver>=470,driver<471 brand=geforce,driver>=470,driver<471 brand=geforcertx,driver>=470,driver<471 brand=quadro,driver>=470,driver<471 brand=quadrortx,driver>=470,driver<471 brand=titan,driver>=470,driver<471 brand=titanrtx,driver>=470,driver<471 brand=tesla,driver>=525,driver<526 brand=unknown,driver>=525,driver<526 brand=nvidia,driver>=525,driver<526 brand=nvidiartx,driver>=525,driver<526 brand=geforce,driver>=525,driver<526 brand=geforcertx,driver>=525,driver<526 brand=quadro,driver>=525,driver<526 brand=quadrortx,driver>=525,driver<526 brand=titan,driver>=525,driver<526 brand=titanrtx,driver>=525,driver<526"

// Upstream sources the runtime-rule tests cite, by line:
//
//	dsl.c        github.com/NVIDIA/libnvidia-container src/cli/dsl.c at 5823754b8577d16fabf25a6ef6a1d58f7ff1e5dd
//	configure.c  github.com/NVIDIA/libnvidia-container src/cli/configure.c at e27a4a75805021ffdfa9b56403921f50eb3b83d2
//	cli.h        github.com/NVIDIA/libnvidia-container src/cli/cli.h at 2e347c194079961526befcfb9d77d4aed7410afc
//	cuda_image.go github.com/NVIDIA/nvidia-container-toolkit internal/config/image/cuda_image.go at d34b3046758cb1a5db606b2a39519c731bbf9f56
//
// docs/validate.md gives the same table.

// ruleHost is the host of TestRuntimeRuleTable: driver 535.104.05, which
// reports CUDA 12.2, on a GPU of compute capability 9.0 whose NVML brand
// is Tesla; cases change one fact.
func ruleHost(edit func(*RuntimeHost)) RuntimeHost {
	h := RuntimeHost{Driver: MustVersion("535.104.05"), CUDA: MustVersion("12.2"), Arch: "9.0", Brand: "Tesla"}
	if edit != nil {
		edit(&h)
	}
	return h
}

// TestRuntimeRuleTable is libnvidia-container's requirement evaluation
// (dsl_evaluate and evaluate_rule in dsl.c, the rules in configure.c),
// case by case, with the lines each case follows.
func TestRuntimeRuleTable(t *testing.T) {
	const (
		H = Outcomes(Holds)
		U = Outcomes(Unsatisfied)
		I = Outcomes(Invalid)
	)
	cuda := func(v string) func(*RuntimeHost) { return func(h *RuntimeHost) { h.CUDA = MustVersion(v) } }
	driver := func(v string) func(*RuntimeHost) { return func(h *RuntimeHost) { h.Driver = MustVersion(v) } }
	arch := func(v string) func(*RuntimeHost) { return func(h *RuntimeHost) { h.Arch = v } }
	brand := func(v string) func(*RuntimeHost) { return func(h *RuntimeHost) { h.Brand = v } }
	long := strings.Repeat("x", 130)
	for _, tt := range []struct {
		expr string
		host func(*RuntimeHost)
		want Outcomes
		cite string
	}{
		// dsl_evaluate: alternatives and terms.
		{"", nil, H, "dsl.c L136: ret starts true; nothing to evaluate"},
		{"   ", nil, H, "dsl.c L144-145: empty alternatives are skipped"},
		{"cuda>=12.2", nil, H, "dsl.c L156-157: every term of the alternative held"},
		{"cuda>=12.4", nil, U, "dsl.c L159-170: no alternative held: unsatisfied condition"},
		{"cuda>=12.4 cuda>=12.0", nil, H, "dsl.c L143, L156-157: alternatives, the first that holds ends the search"},
		{"cuda>=12.0 bogus>=1", nil, H, "dsl.c L156-157: the search ends before bogus>=1 is read (issue 43's case)"},
		{"cuda>=12.4 bogus>=1", nil, I, "dsl.c L149-152: bogus>=1 is reached and cannot be read: invalid expression"},
		{"bogus>=1 cuda>=12.0", nil, I, "dsl.c L149-152: alternatives are read in order"},
		{"cuda>=12.4,bogus>=1 cuda>=12.0", nil, H, "dsl.c L153-154: a false term ends its alternative, bogus>=1 is never read"},
		{"cuda>=12.0,bogus>=1", nil, I, "dsl.c L146, L149-152: terms after a true one are read"},
		{"cuda>=12.0,,driver>=535", nil, H, "dsl.c L147-148: empty terms are skipped"},
		{",", nil, H, "dsl.c L156-157: an alternative of commas only ends the search; ret is still true"},
		{"cuda>=12.4 ,", nil, U, "dsl.c L153-157: after a failed alternative, one of commas only ends the search with ret false"},
		{"cuda>=12.4 , cuda>=12.0", nil, U, "dsl.c L156-157: the search ends at the alternative of commas; cuda>=12.0 is never read"},
		{"cuda>=12.4\tcuda>=12.0", nil, I, "dsl.c L143: only spaces separate alternatives: the value 12.4\\tcuda>=12.0 is not digits and dots"},
		// evaluate_rule: PROPERTY OP VALUE.
		{">=12.2", nil, I, "dsl.c L100-101: no property before the operator"},
		{"cuda", nil, I, "dsl.c L102-104: no operator"},
		{"cuda!12.2", nil, U, "dsl.c L105-112: the run \"!\" is read as the first operator starting with it, !="},
		{"cuda!12.0", nil, H, "dsl.c L105-112: cuda!12.0 is cuda!=12.0"},
		{"cuda=>12.2", nil, I, "dsl.c L113-114: no operator is =>"},
		{"cuda==12.2", nil, I, "dsl.c L113-114: no operator is =="},
		{"cuda<>12.2", nil, I, "dsl.c L113-114: no operator is <>"},
		{"cuda>=", nil, I, "dsl.c L113-114: empty value"},
		{"CUDA>=12.2", nil, H, "dsl.c L118: properties match case-insensitively"},
		{"gpu>=1", nil, I, "dsl.c L127, configure.c L48-53: the properties are cuda, driver, arch and brand"},
		{"brand=" + long, nil, I, "dsl.c L119-122: a false term too long for the 128-byte message buffer is invalid"},
		{"brand=" + long, brand(long), H, "dsl.c L119-122: the buffer matters only when the term is false"},
		// dsl_compare_version, for cuda, driver and arch.
		{"cuda>=.5", nil, I, "dsl.c L49-50: no number where the value starts"},
		{"cuda>=12.2a", nil, I, "dsl.c L43-44: digits and dots only"},
		{"cuda>=v12.2", nil, I, "dsl.c L43-44: digits and dots only"},
		{"cuda>=12..2", nil, H, "dsl.c L61-62: runs of dots are one separator"},
		{"cuda>=12.2.0", nil, H, "dsl.c L64-70: missing numbers count as zero"},
		{"cuda>=12.2.1", nil, U, "dsl.c L74-77: 12.2 < 12.2.1, and a driver reports major.minor only"},
		{"cuda>=12.10", cuda("12.9"), U, "dsl.c L51-59: numbers, not text"},
		{"cuda>12.2", nil, U, "dsl.c L74-77"},
		{"cuda<=12.2", nil, H, "dsl.c L68-70"},
		{"cuda=12.2", nil, H, "dsl.c L68-70"},
		{"cuda!=12.2", nil, U, "dsl.c L66-67"},
		{"driver>=535.104.05", driver("535.54.03"), U, "dsl.c L51-59: 54 < 104"},
		{"driver>=535,driver<536", nil, H, "dsl.c L51-59"},
		{"cuda>=18446744073709551616", nil, I, "dsl.c L49-50: a number that reaches UINTMAX_MAX"},
		{"driver>=535.18446744073709551616", nil, I, "dsl.c L49-50: reached, as 535 equals 535"},
		{"driver>=536.18446744073709551616", nil, U, "dsl.c L51-59: 535 < 536 decides before the next number is read"},
		{"arch>=8.0", nil, H, "configure.c L203-212: the GPU's compute capability"},
		{"arch>=10.0", nil, U, "configure.c L203-212"},
		// dsl_compare_string, for brand.
		{"brand=tesla", nil, H, "dsl.c L84-85: case-insensitive"},
		{"brand!=geforce", nil, H, "dsl.c L86-87"},
		{"brand>tesla", nil, I, "dsl.c L88: = and != only"},
		{"brand=tesla,driver>=470,driver<471 brand=geforce,driver>=470,driver<471", brand("GRID"), U, "a brand the value does not name"},
		// What gpuimg does not know. The runtime holds arch and brand true
		// when the container sees no GPU (configure.c L207-208, L218-219);
		// gpuimg judges a container that is given one, whose compute
		// capability (without --gpu) and NVML brand it does not know.
		{"arch>=8.0", arch(""), H | U, "configure.c L203-212: the GPU decides"},
		{"brand=tesla,driver>=470,driver<471 brand=geforce,driver>=470,driver<471", func(h *RuntimeHost) { h.Driver, h.CUDA, h.Brand = MustVersion("470.82.01"), MustVersion("11.4"), "" }, H | U, "the brand decides"},
		{"brand=tesla,cuda>=13.0 brand!=tesla,cuda>=13.0", brand(""), U, "whatever the brand"},
		{"brand=tesla cuda>=99 brand!=tesla", brand(""), H, "whatever the brand: each brand the value names is tried, and one it does not"},
		{"brand>tesla cuda>=12.0", brand(""), I, "dsl.c L88: invalid for any brand"},
		{"cuda>=12.4", func(h *RuntimeHost) { h.CUDA = Version{} }, H | U, "a driver older than the matrix records reports a CUDA gpuimg does not know"},
		{"cuda>=11.0", func(h *RuntimeHost) { h.CUDA, h.CUDABelow = Version{}, MustVersion("11.0") }, U, "a driver below CUDA 11.0's floor reports an older CUDA"},
		{"cuda<11.0", func(h *RuntimeHost) { h.CUDA, h.CUDABelow = Version{}, MustVersion("11.0") }, H, "a driver below CUDA 11.0's floor reports an older CUDA"},
		{"cuda>=10.1", func(h *RuntimeHost) { h.CUDA, h.CUDABelow = Version{}, MustVersion("11.0") }, H | U, "older than 11.0 may be 10.1 or 10.0"},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			if got := ParseRequirement(tt.expr).Outcomes(ruleHost(tt.host)); got != tt.want {
				t.Errorf("Outcomes(%q) = %03b, want %03b (%s)", tt.expr, got, tt.want, tt.cite)
			}
		})
	}
}

// TestDSLCompareVersion is dsl_compare_version (dsl.c L35-79) on its own:
// 1 true, 0 false, -1 an error.
func TestDSLCompareVersion(t *testing.T) {
	for _, tt := range []struct {
		v1, op, v2 string
		want       int
	}{
		{"12.2", ">=", "12.2", 1}, {"12.2", ">=", "12.2.0.0", 1}, {"12.2", ">", "12.2.0", 0},
		{"12.2", "<", "12.2.1", 1}, {"12.2", "<=", "12.2.1", 1}, {"12.2", "!=", "12.2.0", 0},
		{"12.2", "=", "12.02", 1}, {"12.2", "=", "12.20", 0}, {"535.104.05", "<", "535.104.5", 0},
		{"12.2", ">=", "12..2", 1}, {"12.2", ">=", "12.2.", 1}, {"12.2", ">=", ".12", -1},
		{"12.2", ">=", "12.2a", -1}, {"12.2", "=", "", 0}, {"", ">=", "12", 0},
		{"12.2", ">=", "12.2.99999999999999999999", 0}, {"12.2.1", ">=", "12.2.99999999999999999999", -1},
	} {
		if got := dslCompareVersion(tt.v1, tt.op, tt.v2); got != tt.want {
			t.Errorf("dslCompareVersion(%q %s %q) = %d, want %d", tt.v1, tt.op, tt.v2, got, tt.want)
		}
	}
}

// TestRuntimeEnv is what the NVIDIA container toolkit's hook passes as
// --require for an image's environment (cuda_image.go GetRequirements),
// the legacy CUDA_VERSION rule included.
func TestRuntimeEnv(t *testing.T) {
	for _, tt := range []struct {
		name     string
		env      map[string]string
		want     []string // VAR=VALUE, the legacy one as CUDA_VERSION=cuda>=X.Y
		disabled bool
		err      string
		cite     string
	}{
		{"legacy: CUDA_VERSION without NVIDIA_REQUIRE_CUDA", map[string]string{"CUDA_VERSION": "12.4.1"}, []string{"CUDA_VERSION=cuda>=12.4"}, false, "", "cuda_image.go L98-105, L125-132"},
		{"legacy: NVIDIA_REQUIRE_CUDA empty", map[string]string{"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": ""}, []string{"NVIDIA_REQUIRE_CUDA=", "CUDA_VERSION=cuda>=12.4"}, false, "", "cuda_image.go L104 (len == 0), L118-124 (the empty value is passed too)"},
		{"not legacy: NVIDIA_REQUIRE_CUDA set", map[string]string{"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.2"}, []string{"NVIDIA_REQUIRE_CUDA=cuda>=12.2"}, false, "", "cuda_image.go L104"},
		{"legacy beside another NVIDIA_REQUIRE_", map[string]string{"CUDA_VERSION": "11.8.0", "NVIDIA_REQUIRE_ARCH": "arch>=8.0"}, []string{"NVIDIA_REQUIRE_ARCH=arch>=8.0", "CUDA_VERSION=cuda>=11.8"}, false, "", "cuda_image.go L104: only NVIDIA_REQUIRE_CUDA counts"},
		{"CUDA_VERSION of one number", map[string]string{"CUDA_VERSION": "12"}, []string{"CUDA_VERSION=cuda>=12.0"}, false, "", "cuda_image.go L203-208: semver.NewVersion fills in the minor"},
		{"CUDA_VERSION with a v", map[string]string{"CUDA_VERSION": "v12.4"}, []string{"CUDA_VERSION=cuda>=12.4"}, false, "", "cuda_image.go L203-208"},
		{"CUDA_VERSION that does not read", map[string]string{"CUDA_VERSION": "12.4.1.0"}, nil, false, "not a version the NVIDIA container toolkit reads", "cuda_image.go L126-129; container_config.go L208-211: the hook fails"},
		{"no CUDA_VERSION", map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"}, nil, false, "", "cuda_image.go L104"},
		{"JETPACK variables are not requirements", map[string]string{"NVIDIA_REQUIRE_JETPACK": "csv-mounts=all", "NVIDIA_REQUIRE_JETPACK_HOST_MOUNTS": "x"}, nil, false, "", "cuda_image.go L121"},
		{"NVIDIA_DISABLE_REQUIRE=1", map[string]string{"CUDA_VERSION": "12.4.1", "NVIDIA_DISABLE_REQUIRE": "1"}, nil, true, "", "cuda_image.go L113-116, L138-146: strconv.ParseBool"},
		{"NVIDIA_DISABLE_REQUIRE=yes is not true", map[string]string{"CUDA_VERSION": "12.4.1", "NVIDIA_DISABLE_REQUIRE": "yes"}, []string{"CUDA_VERSION=cuda>=12.4"}, false, "", "cuda_image.go L141: ParseBool refuses yes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reqs, disabled, err := RuntimeEnv(tt.env)
			var got []string
			for _, q := range reqs {
				got = append(got, q.Var+"="+q.Value)
			}
			if disabled != tt.disabled || !slices.Equal(got, tt.want) || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("RuntimeEnv(%v) = %q, %v, %v; want %q, %v, error %q (%s)", tt.env, got, disabled, err, tt.want, tt.disabled, tt.err, tt.cite)
			}
		})
	}
}

// TestCUDAFloor: the lowest CUDA a driver must report for a requirement
// to hold through its cuda terms (validate's require-cuda check and the
// hint of a failed runtime finding read it).
func TestCUDAFloor(t *testing.T) {
	for _, tt := range []struct{ req, want string }{
		{"cuda>=12.2", "12.2"},
		{"CUDA>=12.2", "12.2"},
		{"cuda>=12.2.0", "12.2"},
		{"cuda>=12.2.1", "12.3"},
		{"cuda>12.2", "12.3"},
		{"cuda=12.2", "12.2"},
		{"cuda>=12.0 cuda>=12.4", "12.0"}, // alternatives: the first that holds is enough
		{"cuda>=12.4,driver>=550 cuda>=12.2", "12.2"},
		{"cuda>=12.4,cuda>=12.6", "12.6"},
		{nvidiaRequire1222, "12.2"}, // the brand clauses are bounded by the driver
		{"cuda>=12.0 bogus>=1", "12.0"},
		{"cuda>=.5 cuda>=12.4", "12.4"}, // the first alternative never holds
		{"cuda>=12.4 , cuda>=11.0", "12.4"},
		{"cuda=12.2.1", ""}, // holds on no driver
		{"brand=tesla", ""}, // any CUDA
		{"cuda>=12.4 arch>=8.0", ""},
		{"", ""},
		{",", ""},
		{"cuda<13.0", ""},
	} {
		v, ok := ParseRequireCUDA(tt.req)
		if ok != (tt.want != "") || (ok && v.String() != tt.want) {
			t.Errorf("ParseRequireCUDA(%q) = %s %v, want %q", tt.req, v, ok, tt.want)
		}
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

// manyRequirements is an environment of n NVIDIA_REQUIRE_* variables.
func manyRequirements(n int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env[fmt.Sprintf("NVIDIA_REQUIRE_R%02d", i)] = "cuda>=11.0"
	}
	return env
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
		{"a driver older than every floor", req("cuda>=11.8"), "390.157", nil, Fail, "driver 390.157 reports a CUDA older than 11.0"},
		// The legacy rule (cuda_image.go L98-105, L125-132): CUDA_VERSION
		// without NVIDIA_REQUIRE_CUDA requires cuda>=MAJOR.MINOR.
		{"legacy image on a driver reporting 12.2", map[string]string{"CUDA_VERSION": "12.4.1"}, "535.104.05", nil, Fail, "cuda>=12.4 (the NVIDIA container toolkit's own requirement for an image that sets CUDA_VERSION=12.4.1 and no NVIDIA_REQUIRE_CUDA) does not hold"},
		{"legacy image: the hint", map[string]string{"CUDA_VERSION": "12.4.1"}, "535.104.05", nil, Fail, "update the driver to 550.54.14 or newer (the first that reports CUDA 12.4)"},
		{"legacy image with NVIDIA_REQUIRE_CUDA empty", map[string]string{"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": ""}, "535.104.05", nil, Fail, "cuda>=12.4"},
		{"legacy image on a driver reporting 12.4", map[string]string{"CUDA_VERSION": "12.4.1"}, "550.54.14", nil, Pass, "cuda>=12.4 (the NVIDIA container toolkit's own requirement"},
		{"legacy image, check disabled", map[string]string{"CUDA_VERSION": "12.4.1", "NVIDIA_DISABLE_REQUIRE": "true"}, "535.104.05", nil, Pass, "checks no requirement"},
		{"a CUDA_VERSION the toolkit cannot read", map[string]string{"CUDA_VERSION": "12.4.1.0"}, "580.65.06", nil, Fail, "failed to get requirements"},
		// Evaluated as dsl.c does: an alternative after one that holds is
		// never read (issue 43's case).
		{"an unread invalid alternative", req("cuda>=12.0 bogus>=1"), "535.104.05", nil, Pass, "never reaches bogus>=1"},
		{"a reached invalid alternative", req("cuda>=12.4 bogus>=1"), "535.104.05", nil, Fail, "invalid expression"},
		{"too many requirements", manyRequirements(33), "580.65.06", nil, Fail, "at most 32"},
		{"32 requirements", manyRequirements(32), "580.65.06", nil, Pass, "holds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := db.JudgeRuntime("require", tt.env, MustVersion(tt.driver), tt.gpus)
			if f.Status != tt.want || !strings.Contains(f.Message, tt.has) {
				t.Errorf("JudgeRuntime = %s %q; want %s with %q", f.Status, f.Message, tt.want, tt.has)
			}
		})
	}
}

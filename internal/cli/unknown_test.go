package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestCheckUnknownVerdict: issue 44's example, matrix check --tensorflow
// 2.19 --cuda 12.8 --gpu rtx5090, was a pass with a warning. The matrix
// does not record TensorFlow 2.19's compiled architectures, so the check
// is unknown: exit 4, the text and JSON name the missing fact and how to
// supply it, and --strict fails it (exit 1). A warning alone passes, and
// fails under --strict.
func TestCheckUnknownVerdict(t *testing.T) {
	tf := []string{"matrix", "check", "--tensorflow", "2.19", "--cuda", "12.8", "--gpu", "rtx5090"}
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		outHas []string
		errHas string
	}{
		{"unknown archs exit 4", tf, ExitUnknown,
			[]string{"UNKNOWN  gpu/tensorflow", "which GPU architectures tensorflow 2.19.0 was compiled for", "--matrix-file row for tensorflow 2.19.0", "--gpu sm_120", "verdict: unknown"},
			"run with --strict to treat unknown as a failure"},
		{"--strict fails unknown", append(append([]string{}, tf...), "--strict"), ExitFailed,
			[]string{"UNKNOWN  gpu/tensorflow", "verdict: fail (--strict: unknown and warning checks fail)"}, "--strict: a check is unknown or warns"},
		{"unknown as JSON", append(append([]string{}, tf...), "-o", "json"), ExitUnknown,
			[]string{`"status": "unknown"`, `"missing": "which GPU architectures tensorflow 2.19.0 was compiled for"`, `"supply": "give a --matrix-file row`, `"verdict": "unknown"`}, ""},
		{"unknown driver branch of an architecture", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "sm_75"}, ExitUnknown,
			[]string{"UNKNOWN  gpu/driver", "which driver branches know sm_75 (sm_75)", "--matrix-file gpus: row for sm_75"}, ""},
		// T4 is older than NVIDIA's lists, which name it from 575.51.02 on
		// (gpus.yaml listed_since, drv-ogkm-tags): below that, unknown.
		{"a driver below the release a GPU is listed since", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "t4"}, ExitUnknown,
			[]string{"UNKNOWN  gpu/driver", "whether driver 535.104.05 knows T4 (sm_75)", "open-gpu-kernel-modules) list it from 575.51.02 on, a lower bound", "at or above 575.51.02", "--matrix-file gpus: row for T4"}, ""},
		// issue 44's example: A10G listed from 515.65.01 on, L4 from 525.105.17.
		{"a driver at or above the release a GPU is listed since", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "a10g,l4"}, ExitOK,
			[]string{"driver 535.104.05 knows A10G", "open-gpu-kernel-modules) list it from 515.65.01 on (a lower bound", "verdict: pass"}, ""},
		{"a known answer still passes", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "h100"}, ExitOK,
			[]string{"verdict: pass"}, ""},
		{"a warning passes", []string{"matrix", "check", "--cuda", "12.0", "--driver", "525.60.13", "--gpu", "h100"}, ExitOK,
			[]string{"WARN", "verdict: pass"}, ""},
		{"--strict fails a warning", []string{"matrix", "check", "--cuda", "12.0", "--driver", "525.60.13", "--gpu", "h100", "--strict"}, ExitFailed,
			[]string{"WARN", "verdict: fail (--strict"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			for _, s := range tt.outHas {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if !strings.Contains(errOut, tt.errHas) {
				t.Errorf("stderr lacks %q: %s", tt.errHas, errOut)
			}
		})
	}
}

// TestValidateStrict: validate judges the same question the same way
// (matrix.DB.JudgeGPUDriver): an image checked against a GPU the matrix
// knows only from a later driver (T4: listed from 575.51.02 on, a lower
// bound) is unknown (exit 4); --strict fails
// unknown and warnings (torch 2.3.1's advisories warn); JUnit skips an
// unknown check, and fails it under --strict.
func TestValidateStrict(t *testing.T) {
	ociDir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(ociDir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(smallImage(t, "cuda>=12.2")))
	ref := "oci:" + ociDir
	for _, tt := range []struct {
		name    string
		args    []string
		code    int
		verdict string
		outHas  string
	}{
		{"a warning passes", []string{ref, "-o", "json"}, ExitOK, "pass", `"status": "warn"`},
		{"--strict fails a warning", []string{ref, "--strict", "-o", "json"}, ExitFailed, "fail", `"strict": true`},
		{"unknown driver exits 4", []string{ref, "--driver", "535.104.05", "--gpu", "t4", "-o", "json"}, ExitUnknown, "unknown", `"missing": "whether driver 535.104.05 knows T4 (sm_75)`},
		{"--strict fails unknown", []string{ref, "--driver", "535.104.05", "--gpu", "t4", "--strict"}, ExitFailed, "", "verdict: fail (--strict: unknown and warning checks fail)"},
		{"JUnit skips unknown", []string{ref, "--driver", "535.104.05", "--gpu", "t4", "-o", "junit"}, ExitUnknown, "", `<skipped message="the matrix does not record whether driver 535.104.05 knows T4`},
		{"JUnit fails unknown under --strict", []string{ref, "--driver", "535.104.05", "--gpu", "t4", "-o", "junit", "--strict"}, ExitFailed, "", `<failure message="the matrix does not record whether driver 535.104.05 knows T4`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"validate"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			if !strings.Contains(out, tt.outHas) {
				t.Errorf("output lacks %q:\n%s", tt.outHas, out)
			}
			if tt.verdict != "" {
				var rep report
				must(t, json.Unmarshal([]byte(out), &rep))
				if rep.Verdict != tt.verdict {
					t.Errorf("verdict %s, want %s", rep.Verdict, tt.verdict)
				}
			}
		})
	}
}

// TestUnknownGPUSuggests: an unknown GPU name lists the nearest known names
// with their architectures and says how to judge by architecture instead.
func TestUnknownGPUSuggests(t *testing.T) {
	for _, tt := range []struct {
		gpu    string
		errHas []string
	}{
		{"rtx5090foundersedition", []string{`unknown GPU "rtx5090foundersedition": did you mean RTX-5090 (sm_120)`, "judge by architecture: --gpu sm_120"}},
		{"h1000", []string{"did you mean H100-SXM (sm_90)", "--gpu sm_90"}},
		{"voodoo5", []string{"judge by architecture: --gpu sm_XY"}},
	} {
		t.Run(tt.gpu, func(t *testing.T) {
			_, errOut, code := run(t, "matrix", "check", "--cuda", "12.8", "--gpu", tt.gpu)
			if code != ExitInvalid {
				t.Fatalf("exit %d, want %d: %s", code, ExitInvalid, errOut)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q: %s", s, errOut)
				}
			}
		})
	}
}

// TestResolveJAXPythonBound: resolve --jax 0.4.33 --python 3.13 exits 1
// and names the bound (no cp313 wheels before jax 0.4.34); 0.4.34 fits.
func TestResolveJAXPythonBound(t *testing.T) {
	_, errOut, code := run(t, "matrix", "resolve", "--jax", "0.4.33", "--python", "3.13")
	if code != ExitFailed || !strings.Contains(errOut, "jax 0.4.33 needs Python >=3.10,<3.13") {
		t.Errorf("jax 0.4.33 on 3.13: exit %d: %s", code, errOut)
	}
	if _, errOut, code := run(t, "matrix", "resolve", "--jax", "0.4.34", "--python", "3.13"); code != ExitOK {
		t.Errorf("jax 0.4.34 on 3.13: exit %d: %s", code, errOut)
	}
	if _, errOut, code := run(t, "matrix", "resolve", "--jax", "0.7.0", "--python", "3.14"); code != ExitFailed || !strings.Contains(errOut, "<3.14") {
		t.Errorf("jax 0.7.0 on 3.14: exit %d: %s", code, errOut)
	}
}

// TestCheckCurrentGenerationGPUs: matrix check knows the GPUs of 2025-2026
// (issue 44: "RTX 5080" was an unknown GPU) and judges their driver branch
// (matrix.TestCurrentGenerationDrivers is the rule's table).
func TestCheckCurrentGenerationGPUs(t *testing.T) {
	for _, tt := range []struct {
		gpu, cuda, driver, row string
	}{
		{"RTX 5080", "12.8", "565.77", "FAIL  gpu/driver    driver 565.77 (R565) does not know RTX-5080 (sm_120)"},
		{"RTX 5080", "12.8", "570.86.16", "PASS  gpu/driver    driver 570.86.16 knows RTX-5080"},
		{"NVIDIA GeForce RTX 5070 Ti", "12.8", "570.124.04", "PASS  gpu/driver    driver 570.124.04 knows RTX-5070-Ti"},
		{"RTX 5050", "12.9", "570.211.01", "does not know RTX-5050 (sm_120): NVIDIA's drivers support it from branch R575, from 575.64.03 on"},
		{"DGX Spark", "13.0", "575.64.05", "does not know GB10 (sm_121)"},
		{"NVIDIA GB10", "13.0", "580.119.02", "PASS  gpu/driver    driver 580.119.02 knows GB10"},
		// Off-cycle builds numbered below the mainline first that list
		// the GPU pass; a later release whose table leaves it out warns.
		{"NVIDIA GB10", "13.0", "580.94.13", "PASS  gpu/driver    driver 580.94.13 knows GB10: NVIDIA's R580 releases list it from 580.94.13 on"},
		{"NVIDIA GB10", "13.0", "580.105.08", "WARN  gpu/driver    driver 580.105.08 does not list GB10"},
		{"GB200", "12.8", "570.123.01", "PASS  gpu/driver    driver 570.123.01 knows GB200"},
		{"RTX 5060 Ti", "12.8", "570.123.10", "PASS  gpu/driver    driver 570.123.10 knows RTX-5060-Ti"},
		{"RTX 5060 Ti", "12.8", "570.144", "WARN  gpu/driver    driver 570.144 does not list RTX-5060-Ti"},
		{"B300", "12.9", "580.94.02", "WARN  gpu/driver    driver 580.94.02 does not list B300"},
	} {
		t.Run(tt.gpu+"@"+tt.driver, func(t *testing.T) {
			out, errOut, _ := run(t, "matrix", "check", "--cuda", tt.cuda, "--gpu", tt.gpu, "--driver", tt.driver)
			if !strings.Contains(out, tt.row) {
				t.Errorf("output lacks %q:\n%s\n%s", tt.row, out, errOut)
			}
		})
	}
}

// TestCurrentGenerationCLI: issue 44 through the CLI: Jetson Thor on CUDA
// 12.9 fails with its former name, on CUDA 13.0 its driver is unknown
// (exit 4); --gpu sm_100f judges sm_100; matrix list shows the new
// columns (archs: the a/f targets and renames; gpus: the first listing
// and its branches; cudnn/nccl: the releases torch's pins name).
func TestCurrentGenerationCLI(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		has  []string
	}{
		{[]string{"matrix", "check", "--cuda", "12.9", "--gpu", "thor"}, 1, []string{"needs CUDA 13.0 or newer", "names this architecture sm_101"}},
		{[]string{"matrix", "check", "--cuda", "13.0", "--gpu", "Jetson AGX Thor", "--driver", "580.65.06"}, 4, []string{"UNKNOWN  gpu/driver", "PASS     gpu/cuda      CUDA 13.0.3 supports Jetson-T5000 (sm_110"}},
		{[]string{"matrix", "check", "--cuda", "12.9", "--gpu", "sm_100f", "--driver", "575.57.08"}, 0, []string{"supports sm_100 (sm_100, Blackwell)"}},
		{[]string{"matrix", "list", "archs"}, 0, []string{"A FROM  F FROM  RENAMED TO", "sm_88   (no GPU named)  13.0", "sm_101  Blackwell       12.8      13.0        12.8    12.9    sm_110"}},
		{[]string{"matrix", "list", "gpus"}, 0, []string{"FIRST LISTED", "580.94.13 (3 branches)", "570.123.01 (5 branches)"}},
		{[]string{"matrix", "list", "cudnn"}, 0, []string{"9.28.0  12 || 13", "9.15.1  12 || 13"}},
		{[]string{"matrix", "list", "nccl"}, 0, []string{"2.28.9   12 || 13", "2.29.7   12 || 13"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			for _, h := range tt.has {
				if !strings.Contains(out, h) {
					t.Errorf("output lacks %q:\n%s\n%s", h, out, errOut)
				}
			}
		})
	}
}

package cli

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// cudaTorchImage is an image laid out like a gpuimg build of CUDA cuda
// (x.y.z) with torch 2.3.1 built for torchCUDA (x.y), whose
// NVIDIA_REQUIRE_CUDA is require.
func cudaTorchImage(t *testing.T, cuda, torchCUDA, require string) v1.Image {
	t.Helper()
	img, err := testenv.CUDATorchImage(cuda, torchCUDA, require)
	must(t, err)
	return img
}

// TestDriverRulesAgree runs matrix check, validate --driver/--gpu,
// validate --target and images import --target (which runs validate's
// target checks) on one table of image, driver and GPU, and wants the
// same verdict from each: the driver rules have one home in matrix
// (DriverFloors.Judge, DB.JudgeRuntime, DB.JudgeGPUDriver).
//
// Facts: cuda.yaml's driver floors (CUDA Toolkit release notes' driver
// table: 12.2.0 ships 535.54.03, 12.2.2 535.104.05, 11.8.0 520.61.05);
// the CUDA a driver reports is what nvidia-smi prints (535.54.03: 12.2,
// 530.30.02: 12.1); gpus.yaml's driver branches (NVIDIA's
// open-gpu-kernel-modules lists: H100 PCIe from R520, H100 SXM from R525,
// RTX 5090 from R570).
func TestDriverRulesAgree(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for i, tt := range []struct {
		name        string
		cuda, torch string // image CUDA and torch's CUDA
		driver, gpu string
		pass        bool
		has         string // a check message every command prints
		// legacy: the image sets CUDA_VERSION and no NVIDIA_REQUIRE_CUDA,
		// and matrix check reads a stack file whose require_cuda is
		// empty, as builder writes it (ENV NVIDIA_REQUIRE_CUDA=""): the
		// NVIDIA container toolkit then requires cuda>=MAJOR.MINOR of
		// CUDA_VERSION (nvidia-container-toolkit
		// internal/config/image/cuda_image.go at d34b3046, IsLegacy
		// L98-105, GetRequirements L125-132).
		legacy bool
	}{
		{"12.2.0's own driver runs a cuda>=12.2 image", "12.2.2", "12.1", "535.54.03", "h100", true, "reports CUDA 12.2", false},
		{"the runtime refuses a driver that reports CUDA 12.1", "12.2.2", "12.1", "530.30.02", "h100", false, "reports CUDA 12.1", false},
		{"525.60.13 reports CUDA 12.0: refused, not a warning", "12.2.2", "12.1", "525.60.13", "h100", false, "reports CUDA 12.0", false},
		{"H100 on 470", "12.2.2", "12.1", "470.57.02", "h100", false, "does not know H100-SXM", false},
		{"H100 PCIe knows R520", "11.8.0", "11.8", "520.61.05", "H100-PCIE", true, "knows H100-PCIE", false},
		{"H100 SXM needs R525", "11.8.0", "11.8", "520.61.05", "H100-SXM", false, "does not know H100-SXM", false},
		{"RTX 5090 on 535", "12.2.2", "12.1", "535.104.05", "rtx5090", false, "does not know RTX-5090", false},
		// Issue 43, item 1: 535.104.05 reports CUDA 12.2.
		{"a CUDA_VERSION=12.4.1 image without NVIDIA_REQUIRE_CUDA on 535.104.05", "12.4.1", "12.1", "535.104.05", "h100", false,
			"cuda>=12.4 (the NVIDIA container toolkit's own requirement for an image that sets CUDA_VERSION=12.4.1 and no NVIDIA_REQUIRE_CUDA) does not hold", true},
		{"a CUDA_VERSION=12.4.1 image without NVIDIA_REQUIRE_CUDA on 550.54.15", "12.4.1", "12.1", "550.54.15", "h100", true,
			"cuda>=12.4 (the NVIDIA container toolkit's own requirement for an image that sets CUDA_VERSION=12.4.1 and no NVIDIA_REQUIRE_CUDA)", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mm := tt.cuda[:strings.LastIndex(tt.cuda, ".")]
			img := cudaTorchImage(t, tt.cuda, tt.torch, "cuda>="+mm)
			checkArgs := []string{"matrix", "check", "--torch", "2.3", "--cuda", mm, "--driver", tt.driver, "--gpu", tt.gpu}
			if tt.legacy {
				img = withEnv(t, img, "CUDA_VERSION="+tt.cuda)
				out, errOut, code := run(t, "matrix", "resolve", "--torch", "2.3", "--cuda", mm, "-o", "json")
				if code != 0 {
					t.Fatal(errOut)
				}
				var stack map[string]any
				must(t, json.Unmarshal([]byte(out), &stack))
				stack["require_cuda"] = ""
				sf := filepath.Join(t.TempDir(), "stack.json")
				b, err := json.Marshal(stack)
				must(t, err)
				must(t, os.WriteFile(sf, b, 0o644))
				checkArgs = []string{"matrix", "check", "--stack", sf, "--driver", tt.driver, "--gpu", tt.gpu}
			}
			dir := filepath.Join(t.TempDir(), "layout")
			p, err := layout.Write(dir, empty.Index)
			must(t, err)
			must(t, p.AppendImage(img))
			mf := filepath.Join(t.TempDir(), "fleet.yaml")
			must(t, os.WriteFile(mf, fmt.Appendf(nil, `sources:
  - id: test-fleet
    title: a fleet of the test table
    url: https://example.com/fleet
    retrieved: 2026-12-01
targets:
  - name: test/fleet
    driver: %s
    gpus: [%s]
    platforms: [linux/amd64]
    index: true
    attestations: true
    registry: any
    source: test-fleet
`, tt.driver, tt.gpu), 0o644))
			// The image without a host passes, so a failed verdict below is the host's.
			if out, errOut, code := run(t, "validate", "oci:"+dir); code != 0 {
				t.Fatalf("the image alone: exit %d\n%s\n%s", code, out, errOut)
			}
			cmds := map[string][]string{
				"matrix check":      checkArgs,
				"validate --driver": {"validate", "oci:" + dir, "--driver", tt.driver, "--gpu", tt.gpu},
				"validate --target": {"validate", "oci:" + dir, "--target", "test/fleet", "--matrix-file", mf},
				"images import":     {"images", "import", "oci:" + dir, "--target", "test/fleet", "--matrix-file", mf, "--to", fmt.Sprintf("%s/fleet/m:%d", host, i), "--dry-run"},
			}
			for what, args := range cmds {
				out, errOut, code := run(t, args...)
				if (code == 0) != tt.pass {
					t.Errorf("%s: exit %d, want pass=%v\n%s\n%s", what, code, tt.pass, out, errOut)
				}
				if what != "images import" && !strings.Contains(out, tt.has) {
					t.Errorf("%s: output lacks %q:\n%s", what, tt.has, out)
				}
			}
		})
	}
}

// withEnv is img with its config's environment replaced by env.
func withEnv(t *testing.T, img v1.Image, env ...string) v1.Image {
	t.Helper()
	cfg, err := img.ConfigFile()
	must(t, err)
	cfg = cfg.DeepCopy()
	cfg.Config.Env = env
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	return img
}

// TestDriverBranchRefused: a driver given as a branch (535) is refused,
// with the same one-line error, by every command that takes a driver,
// rather than read as 535.0.0 (issue 43, item 5): matrix check and
// resolve, validate --driver, a target row (validate --target, images
// import --target) and publish's validate: section.
func TestDriverBranchRefused(t *testing.T) {
	dir := t.TempDir()
	p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	must(t, err)
	must(t, p.AppendImage(cudaTorchImage(t, "12.2.2", "12.1", "cuda>=12.2")))
	oci := "oci:" + filepath.Join(dir, "layout")
	mf := filepath.Join(dir, "fleet.yaml")
	must(t, os.WriteFile(mf, []byte(`sources: [{id: f, title: a fleet, url: https://example.com/fleet, retrieved: 2026-12-01}]
targets:
  - {name: test/branch, driver: 535, gpus: [h100], source: f}
`), 0o644))
	pf := filepath.Join(dir, "publish.yaml")
	must(t, os.WriteFile(pf, []byte(`repository: localhost:5000/ml/torch
tag: "{torch}-cu{cuda_short}"
matrix:
  torch: ["2.3"]
validate: {driver: 535}
`), 0o644))
	const want = `" is a branch, not a driver version: give the full version nvidia-smi prints (nvidia-smi --query-gpu=driver_version --format=csv,noheader), e.g. 535.104.05`
	for what, args := range map[string][]string{
		"matrix check":         {"matrix", "check", "--torch", "2.3", "--driver", "535"},
		"matrix resolve":       {"matrix", "resolve", "--torch", "2.3", "--driver", "535"},
		"matrix resolve R535":  {"matrix", "resolve", "--torch", "2.3", "--driver", "R535"},
		"validate --driver":    {"validate", oci, "--driver", "535"},
		"validate --target":    {"validate", oci, "--target", "test/branch", "--matrix-file", mf},
		"images import":        {"images", "import", oci, "--target", "test/branch", "--matrix-file", mf, "--to", "localhost:5000/x:1", "--dry-run"},
		"publish validate:":    {"publish", "-f", pf, "--dry-run"},
		"matrix expand (file)": {"matrix", "expand", "-f", pf},
	} {
		_, errOut, code := run(t, args...)
		if code != ExitInvalid || !strings.Contains(strings.ReplaceAll(errOut, "\"", ""), strings.ReplaceAll(want, "\"", "")) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", what, code, ExitInvalid, want, errOut)
		}
	}
	// Two or three numbers, as nvidia-smi prints them, are driver versions.
	for _, d := range []string{"390.157", "535.104.05"} {
		if _, errOut, code := run(t, "matrix", "check", "--torch", "2.3", "--cuda", "12.2", "--driver", d); code == ExitInvalid {
			t.Errorf("--driver %s: %s", d, errOut)
		}
	}
}

// TestDriverRulesCLI: the cases through the CLI.
func TestDriverRulesCLI(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		outHas []string
		errHas string
	}{
		// Case 1: the runtime's cuda>= against the CUDA the driver reports.
		{"12.2.0's driver", []string{"matrix", "check", "--torch", "2.3", "--cuda", "12.2", "--driver", "535.54.03"}, 0, []string{"PASS  require_cuda", "reports CUDA 12.2"}, ""},
		{"12.4.0's own GA driver", []string{"matrix", "check", "--torch", "2.5", "--cuda", "12.4.0", "--driver", "550.54.14"}, 0, []string{"PASS  require_cuda", "reports CUDA 12.4"}, ""},
		// Case 2: a GPU needs a driver branch that knows it.
		{"RTX 5090 on 535", []string{"matrix", "resolve", "--torch", "2.7", "--gpu", "RTX 5090", "--driver", "535.104.05", "--compat"}, 1, nil, "does not know RTX-5090 (sm_120): NVIDIA's drivers support it from branch R570"},
		{"H100 on 470", []string{"matrix", "resolve", "--torch", "2.3", "--gpu", "h100", "--driver", "470.57.02", "--compat"}, 1, nil, "no stack fits"},
		// --compat relaxes NVIDIA_REQUIRE_CUDA only when the runtime would
		// refuse the driver (530.30.02 reports CUDA 12.1).
		{"--compat keeps cuda>=12.2 for a driver that reports 12.2", []string{"matrix", "resolve", "--torch", "2.3", "--cuda", "12.2", "--driver", "535.54.03", "--compat"}, 0, []string{"NVIDIA_REQUIRE_CUDA  cuda>=12.2\n", "stays cuda>=12.2: the driver reports CUDA 12.2"}, ""},
		{"--compat relaxes to cuda>=12.0 for one that reports 12.1", []string{"matrix", "resolve", "--torch", "2.3", "--cuda", "12.2", "--driver", "530.30.02", "--compat"}, 0, []string{"NVIDIA_REQUIRE_CUDA  cuda>=12.0\n", "relaxed to cuda>=12.0"}, ""},
		// Case 5: the floor names what sets it (torch 2.5.1 cu124 wheels:
		// CUDA 12.4's newest patch 12.4.1 needs 550.54.15, above the image
		// CUDA 12.4.0's own 550.54.14).
		{"a wheel's floor is named as the wheel's", []string{"matrix", "resolve", "--torch", "2.5", "--cuda", "12.4.0"}, 0, []string{">= 550.54.15", "set by torch 2.5.1 cu124 wheels: CUDA 12.4, counted at its newest patch 12.4.1"}, ""},
		{"the image's floor is named as the image's", []string{"matrix", "resolve", "--torch", "2.3", "--cuda", "12.2"}, 0, []string{">= 535.104.05", "set by the image's CUDA 12.2.2"}, ""},
		{"matrix check blames the setter", []string{"matrix", "check", "--torch", "2.5", "--cuda", "12.4.0", "--driver", "550.54.14"}, 0, []string{"below the stack's floor 550.54.15 (set by torch 2.5.1 cu124 wheels"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			for _, h := range tt.outHas {
				if !strings.Contains(out, h) {
					t.Errorf("stdout lacks %q:\n%s", h, out)
				}
			}
			if !strings.Contains(errOut, tt.errHas) {
				t.Errorf("stderr lacks %q:\n%s", tt.errHas, errOut)
			}
		})
	}
	// The stack records the setter in its JSON (min_driver_by).
	out, errOut, code := run(t, "matrix", "resolve", "--torch", "2.5", "--cuda", "12.4.0", "-o", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	var s struct {
		MinDriver   string `json:"min_driver"`
		MinDriverBy string `json:"min_driver_by"`
	}
	must(t, json.Unmarshal([]byte(out), &s))
	if s.MinDriver != "550.54.15" || !strings.HasPrefix(s.MinDriverBy, "torch 2.5.1 cu124 wheels") {
		t.Errorf("min_driver %q by %q", s.MinDriver, s.MinDriverBy)
	}
}

// TestHostFlagsAgree extends TestDriverRulesAgree to the host flags of
// issue 43: --gpu narrows a fleet's GPU list in matrix check, validate
// --target and images import --target alike (item 7), so a fleet that
// lists H100 and B200 refuses a CUDA 12.2 image without --gpu (B200 needs
// CUDA 12.8: archs.yaml's sm_100 row) and takes it for its H100 hosts; a
// GPU outside the fleet is bad input (exit 2) in each. matrix check and
// matrix resolve agree on one host (item 3).
func TestHostFlagsAgree(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img := cudaTorchImage(t, "12.2.2", "12.1", "cuda>=12.2")
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img))
	mf := filepath.Join(t.TempDir(), "fleet.yaml")
	must(t, os.WriteFile(mf, []byte(`sources:
  - id: test-fleet
    title: a fleet of the test table
    url: https://example.com/fleet
    retrieved: 2026-12-01
targets:
  - name: test/mixed
    driver: 570.124.06
    gpus: [H100-SXM, B200]
    platforms: [linux/amd64]
    index: true
    attestations: true
    registry: any
    source: test-fleet
`), 0o644))
	for i, tt := range []struct {
		name string
		gpu  []string // --gpu and its value, or nothing
		code int
	}{
		{"the whole fleet: B200 has no kernels in a CUDA 12.2 image", nil, 1},
		{"--gpu h100 narrows the fleet to its H100 hosts", []string{"--gpu", "h100"}, 0},
		{"a GPU outside the fleet is bad input", []string{"--gpu", "l4"}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmds := map[string][]string{
				"matrix check":      {"matrix", "check", "--torch", "2.3", "--cuda", "12.2", "--target", "test/mixed", "--matrix-file", mf},
				"validate --target": {"validate", "oci:" + dir, "--target", "test/mixed", "--matrix-file", mf},
				"images import":     {"images", "import", "oci:" + dir, "--target", "test/mixed", "--matrix-file", mf, "--to", fmt.Sprintf("%s/mixed/m:%d", host, i), "--dry-run"},
			}
			for what, args := range cmds {
				out, errOut, code := run(t, append(args, tt.gpu...)...)
				if code != tt.code {
					t.Errorf("%s: exit %d, want %d\n%s\n%s", what, code, tt.code, out, errOut)
				}
				if tt.code == 2 && !strings.Contains(errOut, "is not among target test/mixed's GPUs (H100-SXM, B200)") {
					t.Errorf("%s: stderr does not name the fleet's GPUs:\n%s", what, errOut)
				}
			}
			// publish's plan: the same stack and fleet in publish.yaml's
			// targets:, its gpu: narrowing as --gpu does. The plan marks a
			// variant that would fail (verdict 1), marks none (0), or
			// refuses the file (2).
			if code := planVerdict(t, mf, tt.gpu); code != tt.code {
				t.Errorf("publish plan (matrix expand): verdict %d, want %d", code, tt.code)
			}
		})
	}
	// Item 3: check judges the stack resolve gives for the same host.
	args := []string{"--torch", "2.7", "--driver", "525.60.13", "--gpu", "a100", "-o", "json"}
	rout, rerr, rcode := run(t, append([]string{"matrix", "resolve"}, args...)...)
	cout, cerr, ccode := run(t, append([]string{"matrix", "check"}, args...)...)
	if rcode != 0 || ccode != 0 {
		t.Fatalf("resolve exit %d, check exit %d\n%s\n%s", rcode, ccode, rerr, cerr)
	}
	var resolved struct {
		BaseImage string `json:"base_image"`
	}
	var checked struct {
		Stack struct {
			BaseImage string `json:"base_image"`
		} `json:"stack"`
		Verdict string `json:"verdict"`
	}
	must(t, json.Unmarshal([]byte(rout), &resolved))
	must(t, json.Unmarshal([]byte(cout), &checked))
	if resolved.BaseImage == "" || checked.Stack.BaseImage != resolved.BaseImage || checked.Verdict != "pass" {
		t.Errorf("resolve gives %q, check judges %q with verdict %s", resolved.BaseImage, checked.Stack.BaseImage, checked.Verdict)
	}
}

// planVerdict is what publish's plan says of torch 2.3 on CUDA 12.2 for
// fleet test/mixed of matrix file mf, narrowed by gpu ("--gpu", NAME):
// 1 when matrix expand marks the variant as failing validation, 0 when it
// marks none, and expand's exit code when it refuses the file.
func planVerdict(t *testing.T, mf string, gpu []string) int {
	t.Helper()
	narrow := ""
	if len(gpu) == 2 {
		narrow = ", gpu: [" + gpu[1] + "]"
	}
	f := filepath.Join(t.TempDir(), "publish.yaml")
	must(t, os.WriteFile(f, []byte(`repository: registry.example.com/ml/torch
tag: "{torch}-cu{cuda_short}"
matrix:
  torch: ["2.3"]
  cuda: ["12.2"]
targets:
  - {target: test/mixed, repository: registry.example.com/fleet/torch`+narrow+`}
`), 0o644))
	out, errOut, code := run(t, "matrix", "expand", "-f", f, "--matrix-file", mf, "-o", "json")
	if code != 0 {
		return code
	}
	var plan struct {
		Variants []struct {
			Validation string `json:"validation"`
		} `json:"variants"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Variants) != 1 {
		t.Fatalf("matrix expand -o json: %v, %d variants\n%s\n%s", err, len(plan.Variants), out, errOut)
	}
	if plan.Variants[0].Validation != "" {
		return 1
	}
	return 0
}

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/matrix"
)

const examplePublish = "../../examples/publish.yaml"

// exampleVariants are the variants examples/publish.yaml expands to.
var exampleVariants = []string{
	"2.6.0-cu124-py3.11", "2.6.0-cu124-py3.12", "2.6.0-cu126-py3.11", "2.6.0-cu126-py3.12",
	"2.7.1-cu126-py3.11", "2.7.1-cu126-py3.12", "2.7.1-cu128-py3.11", "2.7.1-cu128-py3.12",
	"2.9.1-cu130-py3.12",
}

func TestMatrixExpandJSON(t *testing.T) {
	out, errOut, code := run(t, "matrix", "expand", "-f", examplePublish, "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Variants []map[string]json.RawMessage `json:"variants"`
		Skipped  []struct {
			Axes   map[string]string `json:"axes"`
			Reason string            `json:"reason"`
		} `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var names []string
	for _, v := range got.Variants {
		for _, k := range []string{"name", "tag", "stack", "inputs"} {
			if _, ok := v[k]; !ok {
				t.Errorf("variant lacks %q: %s", k, v["name"])
			}
		}
		var name string
		var s matrix.Stack
		if err := json.Unmarshal(v["name"], &name); err != nil {
			t.Errorf("name %s: %v", v["name"], err)
		}
		if err := json.Unmarshal(v["stack"], &s); err != nil || s.CUDA == "" || s.Frameworks["torch"].Version == "" {
			t.Errorf("%s: stack %s (%v)", name, v["stack"], err)
		}
		names = append(names, name)
	}
	if !slices.Equal(names, exampleVariants) {
		t.Errorf("variants %q", names)
	}
	if len(got.Skipped) != 4 || got.Skipped[0].Axes["torch"] != "2.7" || !strings.Contains(got.Skipped[0].Reason, "an image with CUDA 12.4 cannot run them") || got.Skipped[2].Reason != "excluded (../../examples/publish.yaml:11)" {
		t.Errorf("skipped %+v", got.Skipped)
	}
}

func TestMatrixExpandTable(t *testing.T) {
	out, errOut, code := run(t, "matrix", "expand", "-f", examplePublish)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"NAME ", "2.9.1-cu130-py3.12  CUDA 13.0.3, torch 2.9.1 (CUDA 13.0), Python 3.12", "SKIPPED", "cuda=12.8 python=3.11 torch=2.6  excluded (../../examples/publish.yaml:11)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestMatrixExpandGitHub(t *testing.T) {
	out, errOut, code := run(t, "matrix", "expand", "-f", examplePublish, "-o", "github")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m struct {
		Include []map[string]string `json:"include"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Include) != len(exampleVariants) {
		t.Fatalf("include has %d entries", len(m.Include))
	}
	e := m.Include[8]
	if e["name"] != "2.9.1-cu130-py3.12" || e["tag"] != "registry.example.com/ml/torch:2.9.1-cu130-py3.12" || e["cuda"] != "13.0.3" || e["cuda_short"] != "130" || e["torch"] != "2.9.1" || e["python"] != "3.12" || !strings.HasPrefix(e["inputs"], "sha256:") {
		t.Errorf("entry %v", e)
	}

	// More than GitHub's 256 jobs: said on stderr, exit 1, the error object on stdout.
	big := filepath.Join(t.TempDir(), "publish.yaml")
	if err := os.WriteFile(big, []byte(`repository: r.example.com/cuda
tag: "{cuda}-py{python}-{flavor}-{os}"
matrix:
  cuda: ["11.7", "11.8", "12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.8", "12.9", "13.0"]
  python: ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]
  flavor: [runtime, devel, base]
  os: [ubuntu20.04, ubuntu22.04, ubuntu24.04, rockylinux8, rockylinux9]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "matrix", "expand", "-f", big, "-o", "github")
	if code != ExitFailed || !strings.Contains(errOut, "GitHub runs at most 256 jobs per matrix; split the matrix") || decodeErrorObject(t, out).Error.Code != ExitFailed {
		t.Errorf("exit %d, stdout %d bytes, stderr %q", code, len(out), errOut)
	}
}

func TestMatrixExpandBadFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "publish.yaml")
	if err := os.WriteFile(bad, []byte("repository: r.example.com/t\ntag: \"{pytorch}\"\nmatrix: {torch: [\"2.7\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "matrix", "expand", "-f", bad)
	if code != ExitInvalid || !strings.Contains(errOut, "publish.yaml: line 2: tag template \"{pytorch}\": unknown field {pytorch}") || !strings.Contains(errOut, "fix the publish file (format: docs/publish.md)") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "matrix", "expand", "-f", examplePublish, "-o", "yaml")
	if code != ExitInvalid || !strings.Contains(errOut, `unknown output format "yaml"`) {
		t.Errorf("-o yaml: exit %d: %s", code, errOut)
	}
}

func TestMatrixExpandBake(t *testing.T) {
	out, errOut, code := run(t, "matrix", "expand", "-f", examplePublish, "-o", "bake")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var b publish.BakeFile
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Group["default"].Targets) != len(exampleVariants) || b.Target["2_9_1-cu130-py3_12"] == nil || !strings.Contains(b.Target["2_9_1-cu130-py3_12"].DockerfileInline, "\nFROM nvidia/cuda:13.0.3-base-ubuntu24.04 AS gpuimg-python\n") {
		t.Errorf("bake file %s", out)
	}
}

// TestPlanSaysWhatValidationWillSay: matrix expand and publish --dry-run
// mark a variant that cannot pass the file's validate: (issue 43 item 8)
// and name the moving tags a passing one would move (item 9); an unknown
// GPU in validate: is bad input before anything is built. Facts:
// cuda.yaml (driver 535.104.05 reports CUDA 12.2; CUDA 12.6.3's floor is
// 560.35.05).
func TestPlanSaysWhatValidationWillSay(t *testing.T) {
	dir := t.TempDir()
	write := func(validate string) string {
		p := filepath.Join(dir, "publish.yaml")
		must(t, os.WriteFile(p, []byte(`repository: registry.example.com/ml/torch
tag: "{torch}-cu{torch_cuda_short}"
matrix:
  torch: ["2.7"]
  cuda: ["11.8", "12.6"]
validate: `+validate+`
promote: {tags: [latest]}
`), 0o644))
		return p
	}
	f := write("{driver: 535.104.05, gpu: [h100]}")
	out, errOut, code := run(t, "matrix", "expand", "-f", f)
	if code != 0 || !strings.Contains(out, "WOULD FAIL VALIDATION") || !strings.Contains(out, "torch 2.7.1 cu126 py3.12 would fail validate (driver 535.104.05, GPUs h100): require_cuda") || strings.Contains(out, "cu118 py3.10 would fail") {
		t.Errorf("expand: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = run(t, "publish", "-f", f, "--dry-run", "--progress", "plain")
	if code != 0 || !strings.Contains(errOut, "planned (dry run) as registry.example.com/ml/torch:2.7.1-cu126; but torch 2.7.1 cu126 py3.12 would fail validate") ||
		!strings.Contains(errOut, "so no tag would move") {
		t.Errorf("publish --dry-run: exit %d\n%s", code, errOut)
	}
	f = write("{driver: 580.95.05, gpu: [h100]}")
	_, errOut, code = run(t, "publish", "-f", f, "--dry-run", "--progress", "plain")
	if code != 0 || !strings.Contains(errOut, "would move registry.example.com/ml/torch:latest") || strings.Contains(errOut, "would fail") {
		t.Errorf("publish --dry-run: exit %d\n%s", code, errOut)
	}
	f = write("{driver: 580.95.05, gpu: [h1000]}")
	_, errOut, code = run(t, "matrix", "expand", "-f", f)
	if code != ExitInvalid || !strings.Contains(errOut, `validate.gpu[0]: unknown GPU "h1000"`) {
		t.Errorf("expand with gpu h1000: exit %d\n%s", code, errOut)
	}
}

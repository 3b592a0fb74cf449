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

// TestMatrixExpandBakeContextDir: -o bake --context-dir DIR writes
// DIR/docker-bake.json (the Bake file printed) and, for each target,
// DIR/TARGET with its Dockerfile (ending in the target's labels as LABEL
// lines) and every file it mounts; the target points at them in place of
// dockerfile-inline, and its requirements come from the publish context.
// --context-dir without -o bake is refused, writing nothing.
func TestMatrixExpandBakeContextDir(t *testing.T) {
	src, err := os.ReadFile(examplePublish)
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	must(t, os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte("einops==0.8.0\n"), 0o644))
	pf := filepath.Join(proj, "publish.yaml")
	withReq := strings.Replace(string(src), "  pip: [\"numpy==2.1.3\"]\n", "  pip: [\"numpy==2.1.3\"]\n  requirements: requirements.txt\n", 1)
	must(t, os.WriteFile(pf, []byte(withReq), 0o644))
	t.Chdir(proj)
	dir := filepath.Join(t.TempDir(), "ctx")
	out, errOut, code := run(t, "matrix", "expand", "-f", pf, "-o", "bake", "--context-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	written, err := os.ReadFile(filepath.Join(dir, BakeFileName))
	must(t, err)
	if string(written) != out {
		t.Errorf("%s differs from the Bake file printed", BakeFileName)
	}
	var b publish.BakeFile
	must(t, json.Unmarshal(written, &b))
	if len(b.Target) != len(exampleVariants) {
		t.Fatalf("%d targets, want %d", len(b.Target), len(exampleVariants))
	}
	for name, tg := range b.Target {
		if tg.Context != name || tg.Dockerfile != "Dockerfile" || tg.DockerfileInline != "" {
			t.Errorf("%s: context %q dockerfile %q inline %d bytes, want its own directory", name, tg.Context, tg.Dockerfile, len(tg.DockerfileInline))
		}
		df, err := os.ReadFile(filepath.Join(dir, name, "Dockerfile"))
		must(t, err)
		for _, k := range []string{publish.InputsLabel, matrix.StackLabel} {
			if line := "LABEL " + k + "=\""; !strings.Contains(string(df), line) {
				t.Errorf("%s: the Dockerfile has no %s…", name, line)
			}
		}
		if !strings.Contains(string(df), `LABEL `+publish.InputsLabel+`="`+tg.Labels[publish.InputsLabel]+`"`) {
			t.Errorf("%s: the Dockerfile's inputs label is not the target's %s", name, tg.Labels[publish.InputsLabel])
		}
		for _, f := range []string{"gpuimg/plan.py", "gpuimg/verify.py", "gpuimg/proof.py", "gpuimg/hostlibs.json"} {
			if _, err := os.Stat(filepath.Join(dir, name, f)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if req, err := os.ReadFile(filepath.Join(dir, name, "gpuimg/requirements.txt")); err != nil || string(req) != "einops==0.8.0\n" {
			t.Errorf("%s: requirements %q (%v)", name, req, err)
		}
	}

	other := filepath.Join(t.TempDir(), "ctx")
	_, errOut, code = run(t, "matrix", "expand", "-f", pf, "--context-dir", other)
	if code != ExitInvalid || !strings.Contains(errOut, "add -o bake") {
		t.Errorf("--context-dir without -o bake: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a refused --context-dir was created (%v)", err)
	}
}

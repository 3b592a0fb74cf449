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

// TestProbeJudge judges recorded results (validate/gpuprobe/testdata/probe) with
// gpuimg probe judge: the table, the JSON verdict, the exit codes, and the
// errors for bad input.
func TestProbeJudge(t *testing.T) {
	dir := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join("..", "..", "validate", "gpuprobe", "testdata", "probe", "h200.json"))
	must(t, err)
	var res gpuprobe.Result
	must(t, json.Unmarshal(fixture, &res))
	b, err := gpuprobe.NewBaseline(&res)
	must(t, err)
	write := func(name string, v any) string {
		data, err := json.Marshal(v)
		must(t, err)
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, data, 0o644))
		return p
	}
	base := write("base.json", b)
	good := write("node-a.json", &res)
	res.Python.Bench["gemm_bf16_tflops"] *= 0.93 // the documented 7% slower GEMM
	slow := write("node-b.json", &res)

	out, errOut, code := run(t, "probe", "judge", "--baseline", base, good)
	if code != 0 || !strings.Contains(out, "== "+good+"  NVIDIA H200") || !strings.Contains(out, "accept/gemm_bf16_tflops") ||
		!strings.Contains(out, "verdict: accept (0 of 1 instances rejected)") {
		t.Errorf("one good instance: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = run(t, "probe", "judge", "--baseline", base, good, slow, "-o", "json")
	var j validate.Judgement
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 1 || j.Verdict != "reject" || len(j.Instances) != 2 ||
		j.Instances[1].Verdict != "reject" || j.Instances[1].Report.Kind != "gpu" || j.Instances[1].Report.Probe.Acceptance.Against != "baseline" {
		t.Errorf("a slow instance: exit %d, %v\n%s", code, err, out)
	}
	if out, _, code = run(t, "probe", "judge", "--baseline", base, "--max-loss", "10%", good, slow); code != 0 || !strings.Contains(out, "7.0% short (allowed 10%)") {
		t.Errorf("--max-loss 10%%: exit %d\n%s", code, out)
	}
	if out, _, code = run(t, "probe", "judge", "--reference", good); code != 0 || !strings.Contains(out, "accept/gemm_bf16_share") {
		t.Errorf("--reference: exit %d\n%s", code, out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"probe", "judge", good}, "nothing to judge against"},
		{[]string{"probe", "judge", "--baseline", base, "--max-loss", "150%", good}, `--max-loss "150%"`},
		{[]string{"probe", "judge", "--baseline", base, "--reference", good}, "--baseline and --reference both given"},
		{[]string{"probe", "judge", "--baseline", good, good}, "not a gpuimg probe baseline"},
		{[]string{"probe", "judge", "--baseline", base, base}, "a baseline, not a probe result: give it with --baseline"},
		{[]string{"probe", "judge", "--baseline", base, filepath.Join(dir, "none.json")}, "read result"},
		{[]string{"probe", "--baseline", base}, "add --bench"},
		{[]string{"probe", "--bench", "--baseline", base, "--reference"}, "--baseline and --reference both given"},
		{[]string{"validate", "--run", "docker", "--baseline", base, "registry.example/torch:2.9"}, "add --bench"},
		{[]string{"validate", "--run", "kubernetes", "--bench", "--reference", "registry.example/torch:2.9"}, "judge the Jobs' results with gpuimg probe judge"},
	} {
		if _, errOut, code := run(t, tt.args...); code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	// No GPU here: --save-baseline writes nothing and the exit is 3.
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"); err != nil {
		saved := filepath.Join(dir, "saved.json")
		if _, errOut, code := run(t, "probe", "--bench", "--python", "/bin/true", "--save-baseline", saved); code != 3 {
			t.Errorf("--save-baseline without a GPU: exit %d\n%s", code, errOut)
		}
		if _, err := os.Stat(saved); !os.IsNotExist(err) {
			t.Errorf("a baseline was written without a GPU: %v", err)
		}
	}
}

// TestWriteBaseline: --save-baseline's file holds the baseline of a
// passing run, replaces an older one whole, and a failed run leaves the
// older one as it was.
func TestWriteBaseline(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("..", "..", "validate", "gpuprobe", "testdata", "probe", "h200.json"))
	must(t, err)
	var res gpuprobe.Result
	must(t, json.Unmarshal(fixture, &res))
	path := filepath.Join(t.TempDir(), "base.json")
	must(t, os.WriteFile(path, []byte("old"), 0o644))
	must(t, writeBaseline(path, &res))
	b, err := os.ReadFile(path)
	must(t, err)
	got, err := gpuprobe.ReadBaseline(b)
	if err != nil || got.GPU != "NVIDIA H200" || got.Bench["gemm_bf16_tflops"] != 720 {
		t.Fatalf("baseline %+v, %v", got, err)
	}
	res.Verdict = "fail"
	res.Checks = []validate.Check{{Name: "gpu0/pcie", Status: "fail"}}
	err = writeBaseline(path, &res)
	if err == nil || exitCode(err) != ExitFailed || !strings.Contains(err.Error(), "gpu0/pcie") {
		t.Errorf("failed run: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(b) {
		t.Error("a failed run changed the baseline")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

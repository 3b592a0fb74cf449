package validate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// h200 reads gpuprobe's recorded H200 result
// (gpuprobe/testdata/probe/README.md).
func h200(t *testing.T) *gpuprobe.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("gpuprobe", "testdata", "probe", "h200.json"))
	must(t, err)
	var r gpuprobe.Result
	must(t, json.Unmarshal(b, &r))
	return &r
}

func checkNamed(cs []Check, name string) *Check {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// TestJudgeSeveral judges several recorded results, a probe's JSON and a
// GPU report, as probe judge does: one rejected instance rejects the lot,
// and each instance's report is the kind images promote reads.
func TestJudgeSeveral(t *testing.T) {
	d := db(t)
	good := h200(t)
	gpuprobe.Rejudge(good, d)
	base, err := gpuprobe.NewBaseline(good)
	must(t, err)
	goodJSON, err := json.Marshal(good)
	must(t, err)
	slow := h200(t)
	slow.Python.Bench["gemm_bf16_tflops"] *= 0.93
	gpuprobe.Rejudge(slow, d)
	slowReport, err := json.Marshal(GPUReport("registry.example/torch:2.9", "sha256:abc", slow))
	must(t, err)
	j, err := Judge([]string{"node-a.json", "node-b.json"}, [][]byte{goodJSON, slowReport}, gpuprobe.AcceptOptions{Baseline: base, DB: d})
	must(t, err)
	if j.Verdict != "reject" || len(j.Instances) != 2 || j.Instances[0].Verdict != "accept" || j.Instances[1].Verdict != "reject" {
		t.Fatalf("judgement %+v", j)
	}
	b := j.Instances[1].Report
	if b.Kind != "gpu" || b.Image != "registry.example/torch:2.9" || b.Verdict != matrix.Fail || checkNamed(b.Checks, "accept/gemm_bf16_tflops").Status != matrix.Fail {
		t.Errorf("report %+v", b)
	}
	policy := PromotionPolicy{Require: "gpu", DB: d}
	for i, want := range []bool{true, false} {
		payload, err := json.Marshal(j.Instances[i].Report)
		must(t, err)
		if ok, why := policy.Accept(payload, "NVIDIA H200", "580.95.05"); ok != want {
			t.Errorf("instance %d: promote %v (%s), want %v", i, ok, why, want)
		}
	}
	if _, err := Judge([]string{"x.json"}, [][]byte{[]byte(`{"kind": "static", "verdict": "pass"}`)}, gpuprobe.AcceptOptions{Baseline: base}); err == nil || !strings.Contains(err.Error(), "judge x.json: a static report without a probe result") {
		t.Errorf("static report: %v", err)
	}
}

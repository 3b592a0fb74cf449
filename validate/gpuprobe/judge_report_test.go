package gpuprobe_test

import (
	"encoding/json"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// This file is an external test: validate.Judge wraps each judged Result
// into a validate.Report, and validate imports gpuprobe.

// TestJudgeNCCLRecorded: probe judge re-judges recorded 8-GPU results,
// one a GPU report, with the link checks: the node with an inactive link
// is rejected, the good one accepted.
func TestJudgeNCCLRecorded(t *testing.T) {
	d := gpuprobe.TestDB(t)
	good, bad := gpuprobe.H200x8(t), gpuprobe.H200x8(t)
	gpuprobe.OneLinkDown(bad)
	goodJSON, err := json.Marshal(good)
	gpuprobe.Must(t, err)
	badJSON, err := json.Marshal(validate.GPUReport("registry.example/torch:2.9", "sha256:abc", bad))
	gpuprobe.Must(t, err)
	j, err := validate.Judge([]string{"node-a.json", "node-b.json"}, [][]byte{goodJSON, badJSON}, gpuprobe.AcceptOptions{Reference: true, DB: d})
	gpuprobe.Must(t, err)
	if j.Verdict != "reject" || j.Instances[0].Verdict != "accept" || j.Instances[1].Verdict != "reject" {
		t.Fatalf("judgement %+v", j)
	}
	if c := gpuprobe.CheckNamed(j.Instances[1].Report.Checks, "gpu3/nvlink"); c == nil || c.Status != matrix.Fail {
		t.Errorf("gpu3/nvlink %+v", c)
	}
	if c := gpuprobe.CheckNamed(j.Instances[0].Report.Checks, "bench/nccl_busbw"); c == nil || c.Status != matrix.Pass {
		t.Errorf("bench/nccl_busbw %+v", c)
	}
}

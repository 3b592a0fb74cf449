package matrix

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckConstraints: matrix check and matrix resolve share one rule
// (issue 43 item 3). With a host, the stack judged is the default when it
// runs there, else the one Resolve gives with the host as constraints.
//
// Facts: cuda.yaml's floors (CUDA 11.8.0 520.61.05, 12.6.3 560.35.05;
// driver 525.60.13 reports CUDA 12.0); torch.yaml's torch 2.7.1 variants
// (cu118, cu126, cu128).
func TestCheckConstraints(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	torch := func(v string) *Constraint { c := MustConstraint(v); return &c }
	for _, tt := range []struct {
		name      string
		c         Constraints
		verdict   Status
		cuda      string // the judged stack's CUDA
		isDefault bool   // the judged stack is the default
		has       string // a finding's message holds it
	}{
		{"the issue's case: the default 12.6 stack does not run on 525, the 11.8 one does",
			Constraints{Torch: torch("2.7"), Driver: MustVersion("525.60.13"), GPU: "a100"}, Pass, "11.8.0", false, "does not run here (failed: require_cuda)"},
		{"a default that runs is judged as it is",
			Constraints{Torch: torch("2.7"), Driver: MustVersion("570.124.06"), GPU: "h100"}, Pass, "12.6.3", true, ""},
		{"no stack fits the host: the default's failures stand",
			Constraints{Torch: torch("2.7"), CUDA: MustConstraint("12.6"), Driver: MustVersion("525.60.13"), GPU: "a100"}, Fail, "12.6.3", true, "no stack with these constraints runs on this host either"},
		{"a target's host, narrowed by --gpu: B200 is not judged",
			Constraints{Torch: torch("2.6"), Target: "eks/al2023", GPU: "h100"}, Pass, "12.4.1", true, "supports H100-SXM"},
		{"without --gpu the fleet's B200 is judged too",
			Constraints{Torch: torch("2.6"), Target: "eks/al2023"}, Fail, "12.4.1", true, "has no kernels for B200"},
		{"several GPUs are each judged",
			Constraints{Torch: torch("2.7"), Driver: MustVersion("525.85.05"), GPU: "a100,h100"}, Pass, "11.8.0", false, "supports H100-SXM"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hc, err := db.CheckConstraints(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if v := Verdict(hc.Findings); v != tt.verdict {
				t.Errorf("verdict %s, want %s: %+v", v, tt.verdict, hc.Findings)
			}
			if hc.Stack.CUDA != tt.cuda {
				t.Errorf("judged CUDA %s, want %s", hc.Stack.CUDA, tt.cuda)
			}
			if (hc.Default == nil) != tt.isDefault {
				t.Errorf("default stack %v, want the judged one to be the default: %v", hc.Default, tt.isDefault)
			}
			if tt.has != "" && !hasFinding(hc.Findings, tt.has) {
				t.Errorf("no finding says %q: %+v", tt.has, hc.Findings)
			}
			// One truth: where resolve finds a stack for the host, check
			// judges that stack and passes.
			s, rerr := db.Resolve(tt.c)
			switch {
			case rerr == nil && (s.CUDA != hc.Stack.CUDA || Verdict(hc.Findings) != Pass):
				t.Errorf("resolve gives CUDA %s, check judges CUDA %s with verdict %s", s.CUDA, hc.Stack.CUDA, Verdict(hc.Findings))
			case rerr != nil && !errors.Is(rerr, ErrNoStack):
				t.Fatal(rerr)
			case rerr != nil && Verdict(hc.Findings) != Fail:
				t.Errorf("resolve finds no stack (%v), check passes", rerr)
			}
		})
	}
}

func hasFinding(fs []Finding, sub string) bool {
	for _, f := range fs {
		if strings.Contains(f.Message, sub) {
			return true
		}
	}
	return false
}

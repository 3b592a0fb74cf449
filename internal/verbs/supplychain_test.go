package verbs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

func TestParseEvidence(t *testing.T) {
	got, err := ParseEvidence("signature, sbom,signature,,validation")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Evidence{EvidenceSignature, EvidenceSBOM, EvidenceValidation}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ParseEvidence("signature,vsa"); err == nil || !strings.Contains(err.Error(), "vsa") {
		t.Errorf("vsa: err %v", err)
	}
}

func TestJudge(t *testing.T) {
	verified := func(pt, pred string) sign.Statement {
		return sign.Statement{PredicateType: pt, Predicate: json.RawMessage(pred), Verified: true, Format: sign.FormatBundle}
	}
	bad := func(pt string) sign.Statement {
		return sign.Statement{PredicateType: pt, Error: "signature mismatch", Format: sign.FormatBundle}
	}
	all := []Evidence{EvidenceSignature, EvidenceSBOM, EvidenceProvenance, EvidenceValidation}
	for _, tc := range []struct {
		name       string
		statements []sign.Statement
		// missing is each kind that must be missing, with a word its reason holds.
		missing map[Evidence]string
	}{
		{"nothing", nil, map[Evidence]string{EvidenceSignature: "none attached", EvidenceSBOM: "none attached", EvidenceProvenance: "none attached", EvidenceValidation: "none attached"}},
		{"everything", []sign.Statement{
			verified(sign.CosignSignPredicateType, `{}`), verified(PredicateCycloneDX, `{}`),
			verified(PredicateSLSA1, `{}`), verified(PredicateTestResult, `{"result":"PASSED"}`),
		}, map[Evidence]string{}},
		{"spdx counts as sbom, failed validation does not count", []sign.Statement{
			verified(sign.CosignSignPredicateType, `{}`), verified(PredicateSPDX, `{}`),
			verified(PredicateSLSA1, `{}`), verified(PredicateTestResult, `{"result":"FAILED"}`),
		}, map[Evidence]string{EvidenceValidation: "none PASSED"}},
		{"wrong key", []sign.Statement{
			bad(sign.CosignSignPredicateType), bad(PredicateSPDX), bad(PredicateSLSA1), bad(PredicateTestResult),
		}, map[Evidence]string{EvidenceSignature: "none verifies", EvidenceSBOM: "none verifies", EvidenceProvenance: "none verifies", EvidenceValidation: "none verifies"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(&sign.Result{Digest: "sha256:abc", Statements: tc.statements}, all)
			if len(v.Missing) != len(tc.missing) {
				t.Errorf("missing %v, want %v", v.Missing, tc.missing)
			}
			for e, word := range tc.missing {
				if !strings.Contains(v.Missing[e], word) {
					t.Errorf("%s: %q, want it to say %q", e, v.Missing[e], word)
				}
			}
			if v.OK() != (len(tc.missing) == 0) {
				t.Errorf("OK() = %v with missing %v", v.OK(), v.Missing)
			}
		})
	}
}

func TestReportTestResult(t *testing.T) {
	rep := &validate.Report{Kind: "static", Verdict: matrix.Pass, Checks: []validate.Check{
		{Name: "cuda", Status: matrix.Pass}, {Name: "size", Status: matrix.Warn},
	}}
	tr := ReportTestResult(rep)
	if tr.Result != "PASSED" || len(tr.PassedTests) != 1 || len(tr.WarnedTests) != 1 || len(tr.FailedTests) != 0 {
		t.Errorf("pass with a warning: %+v", tr)
	}
	rep.Verdict = matrix.Fail
	rep.Checks = append(rep.Checks, validate.Check{Name: "driver", Status: matrix.Fail})
	if tr := ReportTestResult(rep); tr.Result != "FAILED" || len(tr.FailedTests) != 1 || tr.FailedTests[0] != "driver" {
		t.Errorf("fail: %+v", tr)
	}
}

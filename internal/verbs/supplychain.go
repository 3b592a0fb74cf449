package verbs

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// Predicate types of the evidence gpuimg verify can require.
const (
	PredicateSPDX       = "https://spdx.dev/Document"
	PredicateCycloneDX  = "https://cyclonedx.org/bom"
	PredicateSLSA1      = "https://slsa.dev/provenance/v1"
	PredicateTestResult = "https://in-toto.io/attestation/test-result/v0.1"
)

// Evidence is what gpuimg verify --require names.
type Evidence string

// The evidence kinds.
const (
	// EvidenceSignature is a cosign signature (bundle or legacy .sig).
	EvidenceSignature Evidence = "signature"
	// EvidenceSBOM is an SPDX or CycloneDX attestation.
	EvidenceSBOM Evidence = "sbom"
	// EvidenceProvenance is SLSA v1 provenance signed by the key.
	EvidenceProvenance Evidence = "provenance"
	// EvidenceValidation is a signed test-result statement whose result
	// is PASSED (validate --attach --key).
	EvidenceValidation Evidence = "validation"
)

// AllEvidence lists the kinds in the order they are checked.
var AllEvidence = []Evidence{EvidenceSignature, EvidenceSBOM, EvidenceProvenance, EvidenceValidation}

// ParseEvidence parses --require's comma-separated list.
func ParseEvidence(s string) ([]Evidence, error) {
	var out []Evidence
	for f := range strings.SplitSeq(s, ",") {
		e := Evidence(strings.TrimSpace(f))
		if e == "" {
			continue
		}
		if !slices.Contains(AllEvidence, e) {
			return nil, fmt.Errorf("--require %q: want a list of signature, sbom, provenance, validation", e)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Verification is what VerifyImage found: the statements, and each
// required kind of evidence that is missing or does not verify.
type Verification struct {
	*sign.Result
	Required []Evidence `json:"required"`
	// Missing says, for each required kind not satisfied, why.
	Missing map[Evidence]string `json:"missing,omitempty"`
}

// OK is true when every required kind of evidence verified.
func (v *Verification) OK() bool { return len(v.Missing) == 0 }

// VerifyImage checks the signatures and attestations of ref with
// publicKey (sign.Verify) and judges them against require.
func VerifyImage(ctx context.Context, ref string, publicKey crypto.PublicKey, require []Evidence, opts ...sign.Option) (*Verification, error) {
	res, err := sign.Verify(ctx, ref, publicKey, opts...)
	if err != nil {
		return nil, err
	}
	return Judge(res, require), nil
}

// Judge decides which required evidence res lacks.
func Judge(res *sign.Result, require []Evidence) *Verification {
	v := &Verification{Result: res, Required: require, Missing: map[Evidence]string{}}
	for _, e := range require {
		if why := missing(res, e); why != "" {
			v.Missing[e] = why
		}
	}
	return v
}

func missing(res *sign.Result, e Evidence) string {
	var types []string
	switch e {
	case EvidenceSignature:
		types = []string{sign.CosignSignPredicateType}
	case EvidenceSBOM:
		types = []string{PredicateSPDX, PredicateCycloneDX}
	case EvidenceProvenance:
		types = []string{PredicateSLSA1}
	case EvidenceValidation:
		types = []string{PredicateTestResult}
	}
	found, failed := 0, 0
	for _, t := range types {
		for _, s := range res.Verified(t) {
			if e != EvidenceValidation {
				return ""
			}
			var p struct{ Result string }
			if json.Unmarshal(s.Predicate, &p) == nil && p.Result == "PASSED" {
				return ""
			}
			failed++
		}
		for _, s := range res.Statements {
			if s.PredicateType == t && !s.Verified {
				found++
			}
		}
	}
	switch {
	case failed > 0:
		return fmt.Sprintf("%d signed validation result(s), none PASSED", failed)
	case found > 0:
		return fmt.Sprintf("%d %s statement(s) found, none verifies with this key", found, strings.Join(types, " or "))
	}
	return "none attached to " + res.Digest + " (" + strings.Join(types, " or ") + ")"
}

// TestResult is the in-toto test-result predicate (v0.1) of a
// validation report: result PASSED, WARNED or FAILED, the checks by
// outcome, and the report's kind, platform and GPU as configuration.
type TestResult struct {
	Result        string            `json:"result"`
	Configuration []json.RawMessage `json:"configuration,omitempty"`
	URL           string            `json:"url,omitempty"`
	PassedTests   []string          `json:"passedTests"`
	WarnedTests   []string          `json:"warnedTests"`
	FailedTests   []string          `json:"failedTests"`
}

// ReportTestResult maps a validation report to the test-result predicate.
func ReportTestResult(rep *validate.Report) TestResult {
	tr := TestResult{PassedTests: []string{}, WarnedTests: []string{}, FailedTests: []string{}}
	for _, c := range rep.Checks {
		switch c.Status {
		case matrix.Pass:
			tr.PassedTests = append(tr.PassedTests, c.Name)
		case matrix.Warn:
			tr.WarnedTests = append(tr.WarnedTests, c.Name)
		default:
			tr.FailedTests = append(tr.FailedTests, c.Name)
		}
	}
	// The verdict decides: a report that passed with warnings is
	// PASSED (its warnings listed), as promotion reads it.
	tr.Result = "FAILED"
	if rep.Verdict == matrix.Pass {
		tr.Result = "PASSED"
	}
	name := "gpuimg validate (" + rep.Kind + ")"
	if rep.Platform != "" {
		name += " " + rep.Platform
	}
	cfg, _ := json.Marshal(map[string]any{"name": name, "annotations": map[string]string{"dev.gpuimg.report.kind": rep.Kind, "dev.gpuimg.report.verdict": string(rep.Verdict)}})
	tr.Configuration = []json.RawMessage{cfg}
	return tr
}

// AttestReport attaches rep to ref as a signed in-toto test-result
// statement (sign.Attest), beside the plain report AttachReport writes;
// gpuimg verify --require validation accepts it when it says PASSED.
func AttestReport(ctx context.Context, ref string, rep *validate.Report, signer signature.SignerVerifier, opts ...sign.Option) (sign.Signed, error) {
	b, err := json.Marshal(ReportTestResult(rep))
	if err != nil {
		return sign.Signed{}, err
	}
	return sign.Attest(ctx, ref, signer, PredicateTestResult, b, opts...)
}

// SignerAttester is an Attester that signs with a key (sign.Attest):
// AttachSBOM with it pushes the SBOM as a signed in-toto attestation too,
// which cosign verify-attestation --type spdxjson (or cyclonedx) reads.
type SignerAttester struct {
	Signer signature.SignerVerifier
	// Options are sign's (registry options, clock).
	Options []sign.Option
	signed []sign.Signed
}

// Signed lists what a has attested, in order (none for a nil a).
func (a *SignerAttester) Signed() []sign.Signed {
	if a == nil {
		return nil
	}
	return a.signed
}

var _ Attester = (*SignerAttester)(nil)

// Attest implements Attester.
func (a *SignerAttester) Attest(ctx context.Context, ref, predicateType string, predicate []byte) error {
	if a.Signer == nil {
		return fmt.Errorf("attest %s: no signing key", ref)
	}
	s, err := sign.Attest(ctx, ref, a.Signer, predicateType, predicate, a.Options...)
	if err != nil {
		return err
	}
	a.signed = append(a.signed, s)
	return nil
}

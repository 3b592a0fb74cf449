package verbs

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/sbom"
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
		case matrix.Warn, matrix.UnknownFact:
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
	signed  []sign.Signed
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

// SignSpec is how SignImage signs.
type SignSpec struct {
	// Signer is the private key.
	Signer signature.SignerVerifier
	// Format is where signatures go (default sign.FormatBundle).
	Format sign.Format
	// SBOM is the SBOM's format (default SPDX JSON).
	SBOM sbom.Format
	// Name names the image in the SBOM (its tag); default the reference.
	Name string
	// Registry are the registry options.
	Registry []images.Option
}

// SignedImage is what SignImage signed and attached.
type SignedImage struct {
	// Signatures are the cosign signatures (the index and each platform).
	Signatures []sign.Signed `json:"signatures"`
	// Attestations are the signed statements: a test result per report,
	// an SBOM per platform.
	Attestations []sign.Signed `json:"attestations"`
	// SBOMs are the plain SBOM referrers (what trivy reads), by digest.
	SBOMs []string `json:"sboms,omitempty"`
}

// SignImage signs the image ref names (REPO@DIGEST, already validated)
// with spec.Signer: the manifest and each platform's (sign.Sign), each of
// reps as a signed test-result statement (AttestReport), and, from the
// inventory each platform's report collected in the validation's walk
// (validate.Options.Inventory), that platform's SBOM as a plain referrer
// and a signed attestation (AttachSBOM with a SignerAttester). Statements
// about a platform are attached to the platform's manifest and, for a
// multi-platform index, to the index too, so gpuimg verify and cosign
// verify-attestation find them from the tag as from a pull by platform
// digest. On an error, what was attached stays and the SignedImage
// returned lists it.
func SignImage(ctx context.Context, ref string, reps []*validate.Report, spec SignSpec) (*SignedImage, error) {
	if spec.Signer == nil {
		return nil, fmt.Errorf("sign %s: no signing key", ref)
	}
	top, err := name.NewDigest(ref)
	if err != nil {
		return nil, fmt.Errorf("sign %s: want REPOSITORY@DIGEST: %w", ref, err)
	}
	format := spec.Format
	if format == "" {
		format = sign.FormatBundle
	}
	sopts := []sign.Option{sign.WithFormat(format), sign.WithRegistryOptions(spec.Registry...)}
	aopts := []sign.Option{sign.WithRegistryOptions(spec.Registry...)}
	out := &SignedImage{}
	if out.Signatures, err = sign.Sign(ctx, ref, spec.Signer, sopts...); err != nil {
		return out, fmt.Errorf("sign %s: %w", ref, err)
	}
	// targets is where statements about the manifest d go.
	targets := func(d string) []string {
		if d == "" || d == top.DigestStr() {
			return []string{ref}
		}
		return []string{top.Context().Digest(d).String(), ref}
	}
	nm := spec.Name
	if nm == "" {
		nm = ref
	}
	sbomDone := map[string]bool{}
	for _, rep := range reps {
		for _, t := range targets(rep.Digest) {
			s, err := AttestReport(ctx, t, rep, spec.Signer, aopts...)
			if err != nil {
				return out, fmt.Errorf("attest the validation report to %s: %w", t, err)
			}
			out.Attestations = append(out.Attestations, s)
		}
		if sbomDone[rep.Digest] {
			continue
		}
		sbomDone[rep.Digest] = true
		doc, err := ReportSBOM(nm, rep, spec.SBOM)
		if err != nil {
			return out, err
		}
		att := &SignerAttester{Signer: spec.Signer, Options: aopts}
		d, err := AttachSBOM(ctx, ref, doc, att, spec.Registry...)
		out.Attestations = append(out.Attestations, att.Signed()...)
		if err != nil {
			return out, err
		}
		out.SBOMs = append(out.SBOMs, d)
		if ts := targets(doc.Digest); len(ts) > 1 {
			s, err := sign.Attest(ctx, ref, spec.Signer, doc.Format.PredicateType(), doc.Document, aopts...)
			if err != nil {
				return out, fmt.Errorf("attest the SBOM of %s to %s: %w", doc.Digest, ref, err)
			}
			out.Attestations = append(out.Attestations, s)
		}
	}
	return out, nil
}

// CosignPassword is the password of an encrypted cosign key, from
// COSIGN_PASSWORD as cosign reads it (set and empty: no password).
func CosignPassword() ([]byte, error) {
	p, ok := os.LookupEnv("COSIGN_PASSWORD")
	if !ok {
		return nil, errors.New("the key is encrypted (cosign generate-key-pair); set COSIGN_PASSWORD to its password (empty for none)")
	}
	return []byte(p), nil
}

// LoadSigner loads a private key for signing (sign.LoadPrivateKey: a
// cosign key file, a PEM key, env://VAR), an encrypted key's password
// from COSIGN_PASSWORD.
func LoadSigner(key string) (signature.SignerVerifier, error) {
	return sign.LoadPrivateKey(key, CosignPassword)
}

package verbs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/validate"
)

// The SLSA verification summary (VSA) that images promote records.
const (
	// PredicateVSA is SLSA's verification summary predicate, v1.
	PredicateVSA = "https://slsa.dev/verification_summary/v1"
	// VSAVerifierID is verifier.id in the VSAs gpuimg writes (what
	// slsa-verifier verify-vsa --verifier-id expects).
	VSAVerifierID = "https://github.com/gpuimg/gpuimg"
	// AnnotationVSAPredicateType names the envelope's predicate type on
	// its referrer manifest (a gpuimg convention: plain DSSE envelopes
	// have no registered annotation).
	AnnotationVSAPredicateType = "dev.gpuimg.predicateType"
	// VSA results.
	VSAPassed = "PASSED"
	VSAFailed = "FAILED"
)

// VSA is the verification summary predicate (SLSA v1.1
// verification_summary): who verified what against which policy, when,
// and the result.
type VSA struct {
	Verifier           VSAVerifier          `json:"verifier"`
	TimeVerified       time.Time            `json:"timeVerified"`
	ResourceURI        string               `json:"resourceUri"`
	Policy             ResourceDescriptor   `json:"policy"`
	InputAttestations  []ResourceDescriptor `json:"inputAttestations,omitempty"`
	VerificationResult string               `json:"verificationResult"`
	VerifiedLevels     []string             `json:"verifiedLevels"`
}

// VSAVerifier identifies the verifier.
type VSAVerifier struct {
	ID      string            `json:"id"`
	Version map[string]string `json:"version,omitempty"`
}

// ResourceDescriptor is in-toto's resource descriptor (the fields used).
type ResourceDescriptor struct {
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest,omitempty"`
}

// VSASpec is how PromoteRecorded signs its decision.
type VSASpec struct {
	// Signer is the private key; the envelope verifies with its public
	// key (slsa-verifier: ECDSA or RSA keys; ed25519 keys sign with
	// Ed25519ph, as cosign's do, which slsa-verifier does not read).
	Signer signature.SignerVerifier
	// Version is gpuimg's version (verifier.version.gpuimg).
	Version string
	// Now stamps timeVerified; default time.Now.
	Now func() time.Time
}

// Decision is a promotion's outcome and its signed summary.
type Decision struct {
	// Message is Promote's (the tag moved, and the report that allowed it).
	Message string `json:"message,omitempty"`
	// Digest is the image's digest, the VSA's subject.
	Digest string `json:"digest"`
	// VSA is the summary written.
	VSA VSA `json:"vsa"`
	// Envelope is the signed DSSE envelope's JSON, as attached.
	Envelope []byte `json:"-"`
	// Referrer is the digest of the envelope's referrer manifest.
	Referrer string `json:"referrer"`
	// Bundle is the same statement attested in cosign v3's layout (a
	// Sigstore bundle referrer), which cosign verify-attestation reads.
	Bundle sign.Signed `json:"bundle"`
}

// PolicyURI names a promotion policy as a URI for the VSA's policy
// field: gpuimg:images-promote?require=…&gpu=…&min_driver=….
func PolicyURI(p validate.PromotionPolicy) string {
	q := url.Values{}
	req := p.Require
	if req == "" {
		req = "gpu"
	}
	q.Set("require", req)
	if p.GPU != "" {
		q.Set("gpu", p.GPU)
	}
	if !p.MinDriver.IsZero() {
		q.Set("min_driver", p.MinDriver.String())
	}
	return "gpuimg:images-promote?" + q.Encode()
}

// VerifiedLevels are the levels a passed policy verifies: the kind of
// validation (GPUIMG_VALIDATION_STATIC or _GPU), and the GPU and the
// driver floor when the policy names them. SLSA track levels
// (SLSA_BUILD_LEVEL_n) are not claimed: promotion checks validation
// reports, not provenance.
func VerifiedLevels(p validate.PromotionPolicy) []string {
	req := p.Require
	if req == "" {
		req = "gpu"
	}
	out := []string{"GPUIMG_VALIDATION_" + levelWord(req)}
	if p.GPU != "" {
		out = append(out, "GPUIMG_GPU_"+levelWord(p.GPU))
	}
	if !p.MinDriver.IsZero() {
		out = append(out, "GPUIMG_MIN_DRIVER_"+levelWord(p.MinDriver.String()))
	}
	return out
}

func levelWord(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

// PromoteRecorded is Promote that records its decision: a signed SLSA
// verification summary about ref's digest (PASSED with the tag moved, or
// FAILED with it left as it was), in a plain DSSE envelope attached to
// the digest as a referrer of artifact type sign.EnvelopeMediaType, which
// slsa-verifier verify-vsa checks (--subject-digest the digest,
// --verifier-id VSAVerifierID, --resource-uri REPOSITORY:TAG), and the
// same statement in cosign v3's bundle layout (sign.Attest), which cosign
// verify-attestation --type https://slsa.dev/verification_summary/v1
// checks. A refused
// promotion returns its Decision and an error wrapping
// images.ErrNotPromoted; an error reading the registry returns no
// Decision and writes nothing.
func PromoteRecorded(ctx context.Context, ref, tag string, policy validate.PromotionPolicy, spec VSASpec, opts ...images.Option) (*Decision, error) {
	if spec.Signer == nil {
		return nil, errors.New("promote: no signing key for the verification summary")
	}
	now := time.Now
	if spec.Now != nil {
		now = spec.Now
	}
	dig, reports, err := images.Referrers(ctx, ref, images.ReportArtifactType, opts...)
	if err != nil {
		return nil, err
	}
	passed := false
	for _, a := range reports {
		if ok, _ := policy.Accept(a.ReportFacts()); ok {
			passed = true
			break
		}
	}
	v := VSA{
		Verifier:           VSAVerifier{ID: VSAVerifierID},
		TimeVerified:       now().UTC().Truncate(time.Second),
		ResourceURI:        dig.Context().Tag(tag).String(),
		Policy:             ResourceDescriptor{URI: PolicyURI(policy)},
		VerificationResult: VSAPassed,
		VerifiedLevels:     VerifiedLevels(policy),
	}
	if spec.Version != "" {
		v.Verifier.Version = map[string]string{"gpuimg": spec.Version}
	}
	if !passed {
		v.VerificationResult, v.VerifiedLevels = VSAFailed, []string{}
	}
	// The inputs: the report that allowed it (as images.Promote picks
	// it, the first accepted), or every report seen when none did.
	for _, a := range reports {
		if ok, _ := policy.Accept(a.ReportFacts()); ok == passed {
			alg, hex, _ := strings.Cut(a.Digest, ":")
			v.InputAttestations = append(v.InputAttestations, ResourceDescriptor{URI: dig.Context().Digest(a.Digest).String(), Digest: map[string]string{alg: hex}})
			if ok {
				break
			}
		}
	}
	d := &Decision{Digest: dig.DigestStr(), VSA: v}
	pred, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if d.Envelope, err = sign.SignStatement(ctx, d.Digest, PredicateVSA, pred, spec.Signer); err != nil {
		return nil, fmt.Errorf("sign the verification summary: %w", err)
	}
	// The summary is attached before the tag moves: a promoted tag
	// always has its record.
	ann := map[string]string{images.AnnotationCreated: v.TimeVerified.Format(time.RFC3339), AnnotationVSAPredicateType: PredicateVSA}
	if d.Referrer, err = images.Attach(ctx, dig.String(), sign.EnvelopeMediaType, d.Envelope, ann, opts...); err != nil {
		return nil, fmt.Errorf("attach the verification summary: %w", err)
	}
	// And as a bundle: slsa-verifier reads only the plain envelope,
	// cosign v3 only bundles.
	if d.Bundle, err = sign.Attest(ctx, dig.String(), spec.Signer, PredicateVSA, pred, sign.WithRegistryOptions(opts...), sign.WithClock(func() time.Time { return v.TimeVerified })); err != nil {
		return nil, fmt.Errorf("attest the verification summary: %w", err)
	}
	d.Message, err = Promote(ctx, dig.String(), tag, policy, opts...)
	if err != nil && !errors.Is(err, images.ErrNotPromoted) {
		return nil, err
	}
	return d, err
}

// VSAs lists the DSSE envelopes attached to ref (PromoteRecorded's), each
// as attached; check one with sign.VerifyEnvelope or slsa-verifier.
func VSAs(ctx context.Context, ref string, opts ...images.Option) ([]images.Attached, error) {
	_, atts, err := images.Referrers(ctx, ref, sign.EnvelopeMediaType, opts...)
	return atts, err
}

package verbs

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// TestPromoteRecorded: a promotion the policy allows records a PASSED
// VSA about the digest, signed in a plain DSSE envelope attached before
// the tag moves; a refused one records FAILED and leaves the tag alone.
// The envelope verifies with the key's public key (sigstore's DSSE
// verifier) and not with another key.
func TestPromoteRecorded(t *testing.T) {
	s := newServer(t)
	repo := s.host + "/ml/torch"
	pushIndex(t, repo+":staging", "linux/amd64")
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if _, err := AttachReport(t.Context(), repo+":staging", &validate.Report{Kind: "static", Verdict: matrix.Pass, Created: created}, Judged{GPU: "h100", Driver: "535.104.05"}); err != nil {
		t.Fatal(err)
	}
	sv, pub := testKey(t)
	_, other := testKey(t)
	now := func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	db := builtin(t)
	staging, err := remote.Head(mustRef(t, repo+":staging"))
	if err != nil {
		t.Fatal(err)
	}

	pass := validate.PromotionPolicy{Require: "static", GPU: "h100", MinDriver: matrix.MustVersion("535"), DB: db}
	d, err := PromoteRecorded(t.Context(), repo+":staging", "stable", pass, VSASpec{Signer: sv, Version: "test", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if stable, err := remote.Head(mustRef(t, repo+":stable")); err != nil || stable.Digest != staging.Digest {
		t.Errorf("stable %v (%v), want staging's %s", stable, err, staging.Digest)
	}
	check := func(d *Decision, result string, levels []string) {
		t.Helper()
		payload, err := sign.VerifyEnvelope(t.Context(), d.Envelope, pub)
		if err != nil {
			t.Fatalf("the envelope does not verify with the key: %v", err)
		}
		if _, err := sign.VerifyEnvelope(t.Context(), d.Envelope, other); err == nil {
			t.Error("the envelope verifies with another key")
		}
		var st struct {
			Type          string `json:"_type"`
			Subject       []struct{ Digest map[string]string }
			PredicateType string
			Predicate     VSA
		}
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		p := st.Predicate
		if st.Type != "https://in-toto.io/Statement/v1" || st.PredicateType != PredicateVSA || len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != staging.Digest.String() {
			t.Errorf("statement %s %s about %v, want a VSA about %s", st.Type, st.PredicateType, st.Subject, staging.Digest)
		}
		if p.Verifier.ID != VSAVerifierID || p.Verifier.Version["gpuimg"] != "test" || p.ResourceURI != mustRef(t, repo+":stable").String() ||
			!p.TimeVerified.Equal(now()) || p.VerificationResult != result || !slices.Equal(p.VerifiedLevels, levels) || len(p.InputAttestations) != 1 {
			t.Errorf("predicate %+v, want %s with levels %v", p, result, levels)
		}
		atts, err := VSAs(t.Context(), repo+"@"+staging.Digest.String())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(atts, func(a images.Attached) bool {
			return a.Digest == d.Referrer && string(a.Payload) == string(d.Envelope) && a.Annotations[AnnotationVSAPredicateType] == PredicateVSA
		}) {
			t.Errorf("referrers %+v: the envelope %s is not attached", atts, d.Referrer)
		}
	}
	check(d, VSAPassed, []string{"GPUIMG_VALIDATION_STATIC", "GPUIMG_GPU_H100", "GPUIMG_MIN_DRIVER_535"})
	// The same statement as a bundle, for cosign verify-attestation.
	res, err := sign.Verify(t.Context(), repo+"@"+staging.Digest.String(), pub)
	if err != nil {
		t.Fatal(err)
	}
	if vs := res.Verified(PredicateVSA); len(vs) != 1 || d.Bundle.Referrer == "" || !strings.Contains(string(vs[0].Predicate), `"verificationResult":"PASSED"`) {
		t.Errorf("bundle attestations of the VSA: %+v (referrer %q)", vs, d.Bundle.Referrer)
	}
	if !strings.Contains(PolicyURI(pass), "require=static") || !strings.Contains(PolicyURI(pass), "gpu=h100") {
		t.Errorf("policy URI %s", PolicyURI(pass))
	}

	refuse := validate.PromotionPolicy{Require: "gpu", DB: db}
	d, err = PromoteRecorded(t.Context(), repo+":staging", "gated", refuse, VSASpec{Signer: sv, Version: "test", Now: now})
	if !errors.Is(err, images.ErrNotPromoted) || d == nil {
		t.Fatalf("refused promotion: %v, %v; want ErrNotPromoted with a decision", d, err)
	}
	if _, err := remote.Head(mustRef(t, repo+":gated")); err == nil {
		t.Error("gated written by a refused promotion")
	}
	payload, err := sign.VerifyEnvelope(t.Context(), d.Envelope, pub)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(payload), `"verificationResult":"FAILED"`) || !strings.Contains(string(payload), `"resourceUri":"`+mustRef(t, repo+":gated").String()) ||
		!strings.Contains(string(payload), `"verifiedLevels":[]`) {
		t.Errorf("refused promotion's VSA: %s", payload)
	}
	if _, err := PromoteRecorded(t.Context(), repo+":staging", "x", pass, VSASpec{}); err == nil {
		t.Error("no key: no error")
	}
}

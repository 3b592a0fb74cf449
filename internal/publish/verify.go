package publish

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// unchanged says whether v's tag holds an image with v's inputs and, for
// every GPU of the file's validate: (and, for a multi-platform file, every
// platform), a validation report the file's validate: accepts; it returns
// the image's digest and one of the reports.
func (r *runner) unchanged(ctx context.Context, v Variant) (string, *validate.Report, bool) {
	platforms := r.platforms()
	// The check gpuimg build makes before it solves (builder.InputsLabel).
	if _, ok, err := images.Labelled(ctx, v.Tag, InputsLabel, v.Inputs, append(slices.Clip(r.registry()), images.WithPlatform(platforms[0]))...); err != nil || !ok {
		return "", nil, false // not there, unreadable or other inputs: build it
	}
	var spec verbs.Acceptance
	for _, p := range platforms {
		spec.Platforms = append(spec.Platforms, p.String())
	}
	for _, g := range r.gpus() {
		spec.Policies = append(spec.Policies, r.policy(g))
	}
	dig, found, ok, err := verbs.Accepted(ctx, v.Tag, spec, r.registry()...)
	if err != nil || !ok {
		return "", nil, false
	}
	if r.signer != nil && len(r.require) > 0 {
		ver, err := r.verify(ctx, v.Tag)
		if err != nil || !ver.OK() {
			return "", nil, false // not signed as signing: asks: rebuild and sign it
		}
	}
	return dig, found, true
}

// verify checks ref's evidence against signing.require with the signing
// key's public key.
func (r *runner) verify(ctx context.Context, ref string) (*verbs.Verification, error) {
	pub, err := r.signer.PublicKey()
	if err != nil {
		return nil, err
	}
	return verbs.VerifyImage(ctx, ref, pub, r.require, sign.WithRegistryOptions(r.registry()...))
}

// loadSigner loads signing:'s key, once per run.
func (r *runner) loadSigner() error {
	if !r.f.Signing.Enabled() {
		return nil
	}
	req, err := r.f.Signing.Required()
	if err != nil {
		return fmt.Errorf("%s: signing.require: %w", r.f.name(), err)
	}
	sv, err := verbs.LoadSigner(r.f.Signing.Key)
	if err != nil {
		return fmt.Errorf("%s: signing.key %s: %w", r.f.name(), r.f.Signing.Key, err)
	}
	pub, err := sv.PublicKey()
	if err != nil {
		return fmt.Errorf("%s: signing.key %s: public key: %w", r.f.name(), r.f.Signing.Key, err)
	}
	if r.key, err = signKey(r.f.Signing.Key, pub); err != nil {
		return fmt.Errorf("%s: signing.key %s: %w", r.f.name(), r.f.Signing.Key, err)
	}
	r.signer, r.require = sv, req
	return nil
}

// signResult is the report's signing outcome: status and reason, the
// run's key and format, and what s lists as signed and attached.
func (r *runner) signResult(status SignStatus, reason string, s *verbs.SignedImage) *SignResult {
	out := &SignResult{Status: status, Reason: reason, Key: r.key, Format: r.f.Signing.Format()}
	if s == nil {
		return out
	}
	out.SBOMs = s.SBOMs
	for _, x := range s.Signatures {
		if x.Provenance != "" {
			// BuildKit's provenance, signed by sign.Sign.
			out.Attestations = append(out.Attestations, Attestation{Kind: AttestProvenance, Subject: x.Digest, PredicateType: x.PredicateType, Referrer: x.Referrer})
			continue
		}
		out.Signatures = append(out.Signatures, SignedManifest{Digest: x.Digest, MediaType: x.MediaType, Referrer: x.Referrer, LegacyTag: x.LegacyTag})
	}
	for _, x := range s.Attestations {
		out.Attestations = append(out.Attestations, Attestation{Kind: attestationKind(x.PredicateType), Subject: x.Digest, PredicateType: x.PredicateType, Referrer: x.Referrer})
	}
	return out
}

// attestationKind is what a statement of predicate type p is evidence of.
func attestationKind(p string) AttestationKind {
	switch p {
	case verbs.PredicateTestResult:
		return AttestValidation
	case verbs.PredicateSPDX, verbs.PredicateCycloneDX:
		return AttestSBOM
	case sign.SLSAProvenanceV1:
		return AttestProvenance
	}
	return AttestOther
}

// signKey identifies signing.key: ref as written (a URL's user
// information and query dropped, in case a KMS URI carries a token), and
// the fingerprint of pub when known.
func signKey(ref string, pub crypto.PublicKey) (SignKey, error) {
	k := SignKey{Ref: ref}
	if u, err := url.Parse(ref); err == nil && u.Scheme != "" && (u.User != nil || u.RawQuery != "") {
		u.User, u.RawQuery = nil, ""
		k.Ref = u.String()
	}
	if pub == nil {
		return k, nil
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return k, fmt.Errorf("public key fingerprint: %w", err)
	}
	sum := sha256.Sum256(der)
	k.Fingerprint = "sha256:" + hex.EncodeToString(sum[:])
	return k, nil
}

// finishSigning gives every result without a signing outcome, when the
// file signs, a skipped one saying why (the variant failed before
// signing, or the run was a dry run).
func (r *runner) finishSigning() {
	if !r.f.Signing.Enabled() {
		return
	}
	for i := range r.rep.Results {
		res := &r.rep.Results[i]
		if res.Signing != nil {
			continue
		}
		reason := "not signed"
		switch {
		case res.Outcome == Planned:
			reason = "dry run: nothing signed"
		case res.Outcome == Failed && res.Error != "":
			step, _, _ := strings.Cut(res.Error, ":")
			reason = "the variant failed at " + step + " before signing; nothing signed"
		}
		res.Signing = r.signResult(SignSkipped, reason, nil)
	}
}

// gpus are the GPUs the file validates for; one empty name when none.
func (r *runner) gpus() []string {
	if len(r.f.Validate.GPU) == 0 {
		return []string{""}
	}
	return r.f.Validate.GPU
}

// policy is what a report must show for the file's validate: on gpu.
func (r *runner) policy(gpu string) validate.PromotionPolicy {
	return validate.PromotionPolicy{Require: "static", GPU: gpu, MinDriver: r.f.Validate.Driver, DB: r.db}
}

// platforms are the platforms validated: the file's, else linux/amd64.
func (r *runner) platforms() []*v1.Platform {
	var out []*v1.Platform
	for i := range r.f.Platforms {
		out = append(out, &r.f.Platforms[i])
	}
	if len(out) == 0 {
		out = []*v1.Platform{{OS: "linux", Architecture: "amd64"}}
	}
	return out
}

// validate inspects the pushed image, every platform of it, once per GPU
// of validate:, attaches each report to digestRef, and returns the worst
// verdict and the compressed size (the largest platform's).
func (r *runner) validate(ctx context.Context, v Variant, digestRef string) (matrix.Status, int64, []*validate.Report, error) {
	spec := verbs.Spec{
		// With signing, the walk that validates also collects what the
		// SBOM lists: the layers are read once for both.
		Options:   validate.Options{Name: v.Tag, DB: r.db, Driver: r.f.Validate.Driver, Inventory: r.signer != nil, Strict: r.f.Validate.Strict},
		Platforms: r.platforms(),
		GPUs:      r.gpus(),
	}
	reps, err := verbs.Validate(ctx, images.Ref{Transport: images.Registry, Name: digestRef}, spec, r.registry()...)
	var ve *verbs.Error
	switch {
	case errors.As(err, &ve) && ve.Step == verbs.Inspecting:
		return "", 0, nil, fmt.Errorf("%s: %w", ve.Platform, ve.Err)
	case err != nil:
		return "", 0, nil, err
	}
	var judged verbs.Judged
	if !r.f.Validate.Driver.IsZero() {
		judged.Driver = r.f.Validate.Driver.String()
	}
	var verdicts []matrix.Finding
	var size int64
	var failed []string
	var out []*validate.Report
	for _, rp := range reps {
		out = append(out, rp.Report)
		size = max(size, rp.Size.Compressed)
		judged.GPU = rp.GPU
		if _, err := verbs.AttachValidation(ctx, digestRef, rp.Report, judged, verbs.AttachSpec{Registry: r.registry()}); err != nil {
			return "", 0, nil, fmt.Errorf("attach report: %w", err)
		}
		verdicts = append(verdicts, matrix.Finding{Name: "validate", Status: rp.Verdict})
		for _, c := range rp.Checks {
			if matrix.VerdictOf([]matrix.Finding{c}, r.f.Validate.Strict) == matrix.Fail {
				msg := c.Name + ": " + c.Message
				if rp.Platform != "" {
					msg = rp.Platform + " " + msg
				}
				failed = append(failed, msg)
			}
		}
	}
	verdict := matrix.Verdict(verdicts)
	if verdict == matrix.Fail && len(failed) > 0 {
		return verdict, size, out, fmt.Errorf("static validation failed (%s); the report is attached to %s, the tag was not written", strings.Join(failed, "; "), digestRef)
	}
	return verdict, size, out, nil
}

// publish points variant i's tag at digest (when tag), copies it to the
// mirrors and moves the moving tags it owns. A failure is recorded in the
// result (and returned); steps done stay done.
func (r *runner) publish(ctx context.Context, i int, digest string, tag bool) error {
	v := r.variants[i]
	res := &r.rep.Results[i]
	digestRef := r.f.Repository + "@" + digest
	if err := r.importTargets(ctx, i, digestRef); err != nil {
		return err
	}
	if tag {
		r.event(i, "tagging %s", v.Tag)
		if _, err := images.Copy(ctx, digestRef, []string{v.Tag}, r.registry()...); err != nil {
			res.Error = "tag: " + err.Error()
			return err
		}
	}
	if len(r.f.Mirrors) > 0 {
		var dsts []string
		for _, m := range r.f.Mirrors {
			dsts = append(dsts, m+":"+v.Name)
		}
		r.event(i, "copying to %d mirrors", len(dsts))
		if _, err := images.Copy(ctx, digestRef, dsts, r.registry()...); err != nil {
			res.Error = "mirror: " + err.Error()
			return err
		}
		res.Mirrors = dsts
	}
	policy := r.policy(r.gpus()[0])
	for _, t := range r.promote[v.Name] {
		if _, err := verbs.Promote(ctx, digestRef, t, policy, r.registry()...); err != nil {
			res.Error = "promote " + t + ": " + err.Error()
			return err
		}
		res.Tags = append(res.Tags, r.f.Repository+":"+t)
	}
	return nil
}

// evidenceList is "signature, sbom and validation".
func evidenceList(es []verbs.Evidence) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = string(e)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

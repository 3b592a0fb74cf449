package verbs

import (
	"context"
	"fmt"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// Import imports the image src names into target t's registry as dst
// (images.Import: converted to the form t takes, the tag written last),
// after validating it in full with t (validate.TargetCheck: everything
// gpuimg validate --target checks, against db; a failed check refuses the
// push with images.ErrRefused and every reason, nothing pushed). The
// other images an index push carries get the link check Export and
// Convert run (withLinkCheck).
func Import(ctx context.Context, src string, t matrix.Target, dst string, db *matrix.DB, opts ...images.Option) (*images.ImportResult, error) {
	check := validate.TargetCheck(t, validate.Options{Name: src, DB: db})
	return images.Import(ctx, src, t, dst, check, withLinkCheck(opts)...)
}

// Signed is an import and what became of signatures: the source's are
// about its digest, and a conversion gives the pushed image another one.
type Signed struct {
	*images.ImportResult
	// Signed are the signatures of the pushed image, when a key was given.
	Signed []sign.Signed `json:"signed,omitempty"`
	// Signatures says, in a sentence, whether the pushed image is signed
	// and whether the source's signatures apply to it.
	Signatures string `json:"signatures,omitempty"`
}

// ImportSigned is Import, then, when signer is not nil, sign.Sign of the
// pushed image by digest (signOpts: its format, how the registry is
// reached). Without a signer, a conversion that changed the digest is
// said plainly in Signatures: the source's signatures, attestations and
// SBOMs are about the old digest and do not verify for the new one.
func ImportSigned(ctx context.Context, src string, t matrix.Target, dst string, db *matrix.DB, signer signature.SignerVerifier, signOpts []sign.Option, opts ...images.Option) (*Signed, error) {
	res, err := Import(ctx, src, t, dst, db, opts...)
	if res == nil {
		return nil, err
	}
	out := &Signed{ImportResult: res}
	if err != nil || res.Verdict == matrix.Fail {
		return out, err
	}
	switch {
	case signer != nil && res.DryRun:
		out.Signatures = "would sign the pushed image with the key given"
	case signer != nil:
		signed, err := sign.Sign(ctx, res.Ref, signer, signOpts...)
		out.Signed = signed
		if err != nil {
			return out, fmt.Errorf("sign the imported image %s (pushed; sign it again with gpuimg sign): %w", res.Ref, err)
		}
		out.Signatures = fmt.Sprintf("signed the pushed image %s with the key given", res.Digest)
	case res.DigestChanged:
		out.Signatures = fmt.Sprintf("not signed: the conversion changed the digest (%s -> %s), so the source's signatures and attestations do not carry over to it; import with --key, or gpuimg sign %s --key KEY",
			res.SourceDigest, orPending(res.Digest), orPending(res.Ref))
	default:
		out.Signatures = fmt.Sprintf("not signed here: the digest is the source's (%s), so its signatures verify for it, but they stay in the source repository (gpuimg images copy carries them)", res.SourceDigest)
	}
	return out, nil
}

func orPending(s string) string {
	if s == "" {
		return "the new digest"
	}
	return s
}

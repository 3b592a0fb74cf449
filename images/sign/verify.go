package sign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gpuimg/gpuimg/images"
)

// maxBundle bounds what is read of one signature blob.
const maxBundle = 16 << 20

// Statement is one signed statement found for an image, verified or not.
type Statement struct {
	// PredicateType is the statement's predicate type (for a legacy
	// signature: CosignSignPredicateType). For a bundle that does not
	// verify it is what the referrer's annotation claims.
	PredicateType string `json:"predicate_type"`
	// Predicate is the statement's predicate, when it verified.
	Predicate json.RawMessage `json:"predicate,omitempty"`
	// Source is where it was found: the referrer's digest, or the legacy
	// sha256-<hex>.sig tag.
	Source string `json:"source"`
	// Format is FormatBundle or FormatLegacy.
	Format Format `json:"format"`
	// Verified is true when the signature verifies with the key and the
	// statement's subject is the image's digest.
	Verified bool `json:"verified"`
	// Error says why it did not verify.
	Error string `json:"error,omitempty"`
}

// Result is what Verify found for one manifest.
type Result struct {
	// Ref is the reference asked for; Digest what it resolved to.
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	// Statements are every signature and attestation found, verified
	// first, then by predicate type.
	Statements []Statement `json:"statements"`
}

// Verified are the statements of predicateType that verified.
func (r *Result) Verified(predicateType string) []Statement {
	var out []Statement
	for _, s := range r.Statements {
		if s.Verified && s.PredicateType == predicateType {
			out = append(out, s)
		}
	}
	return out
}

// Verify checks, offline, the signatures and attestations of the manifest
// ref names (resolved to its digest; for an index, the index itself) with
// publicKey: Sigstore bundles found through the Referrers API (or its tag
// fallback) and legacy sha256-<hex>.sig signatures. Each is verified with
// sigstore-go (key material, no transparency log or timestamps required,
// the statement's subject must be the digest). It returns every statement
// found, verified or not; an error only when the image cannot be read.
func Verify(ctx context.Context, ref string, publicKey crypto.PublicKey, opts ...Option) (*Result, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	verifier, err := signature.LoadDefaultVerifier(publicKey, loadOptions...)
	if err != nil {
		return nil, fmt.Errorf("load public key: %w", err)
	}
	trusted := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(verifier, time.Time{}, time.Time{}), nil
	})
	sv, err := verify.NewVerifier(trusted, verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	r, ro, err := images.Remote(ctx, ref, o.registry...)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Head(r, ro...)
	if err != nil {
		return nil, images.Explain("resolve", r, err)
	}
	raw, err := digestBytes(desc.Digest)
	if err != nil {
		return nil, err
	}
	dig := r.Context().Digest(desc.Digest.String())
	res := &Result{Ref: ref, Digest: desc.Digest.String()}
	bundles, err := verifyBundles(dig, sv, raw, ro)
	if err != nil {
		return nil, err
	}
	legacy, err := verifyLegacy(dig, verifier, ro)
	if err != nil {
		return nil, err
	}
	// An empty list, not null, in JSON for an image nothing is attached to.
	res.Statements = append([]Statement{}, slices.Concat(bundles, legacy)...)
	sort.SliceStable(res.Statements, func(i, j int) bool {
		a, b := res.Statements[i], res.Statements[j]
		if a.Verified != b.Verified {
			return a.Verified
		}
		return a.PredicateType < b.PredicateType
	})
	return res, nil
}

func verifyBundles(dig name.Digest, sv *verify.Verifier, raw []byte, ro []remote.Option) ([]Statement, error) {
	// No artifactType filter: some registries (go-containerregistry's
	// own) report a referrer's config media type as its artifactType,
	// which for cosign's layout is the empty descriptor's; cosign's
	// GetBundles lists every referrer too.
	idx, err := remote.Referrers(dig, ro...)
	if err != nil {
		return nil, images.Explain("list referrers of", dig, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Statement
	for _, d := range m.Manifests {
		if d.ArtifactType != BundleMediaType && d.Annotations[AnnotationContent] == "" {
			continue
		}
		st := Statement{Source: d.Digest.String(), Format: FormatBundle, PredicateType: d.Annotations[AnnotationPredicateType]}
		b, err := readBundle(dig.Context().Digest(d.Digest.String()), ro)
		if err != nil {
			st.Error = err.Error()
			out = append(out, st)
			continue
		}
		vr, err := sv.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", raw), verify.WithKey()))
		if err != nil {
			st.Error = err.Error()
			out = append(out, st)
			continue
		}
		if vr.Statement != nil {
			st.PredicateType = vr.Statement.GetPredicateType()
			if p := vr.Statement.GetPredicate(); p != nil {
				if pj, err := protojson.Marshal(p); err == nil {
					st.Predicate = pj
				}
			}
		}
		st.Verified = true
		out = append(out, st)
	}
	return out, nil
}

// readBundle reads the Sigstore bundle in the one layer of the referrer
// at d.
func readBundle(d name.Digest, ro []remote.Option) (*bundle.Bundle, error) {
	img, err := remote.Image(d, ro...)
	if err != nil {
		return nil, images.Explain("read referrer", d, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != 1 {
		return nil, fmt.Errorf("referrer %s has %d layers; a Sigstore bundle has one", d.DigestStr(), len(layers))
	}
	blob, err := readLayer(layers[0])
	if err != nil {
		return nil, err
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(blob); err != nil {
		return nil, fmt.Errorf("parse bundle %s: %w", d.DigestStr(), err)
	}
	return &b, nil
}

func readLayer(l v1.Layer) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxBundle))
}

// verifyLegacy checks the simple-signing layers of dig's sha256-<hex>.sig
// image, if there is one.
func verifyLegacy(dig name.Digest, verifier signature.Verifier, ro []remote.Option) ([]Statement, error) {
	h, err := v1.NewHash(dig.DigestStr())
	if err != nil {
		return nil, err
	}
	tag := legacyTag(dig.Context(), h)
	img, err := remote.Image(tag, ro...)
	if err != nil {
		if te, ok := errors.AsType[*transport.Error](err); ok && te.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, images.Explain("read legacy signatures", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var out []Statement
	for i, l := range layers {
		if string(m.Layers[i].MediaType) != SimpleSigningMediaType {
			continue
		}
		st := Statement{PredicateType: CosignSignPredicateType, Source: tag.String(), Format: FormatLegacy}
		if err := checkLegacy(l, m.Layers[i].Annotations[AnnotationSignature], dig, verifier); err != nil {
			st.Error = err.Error()
		} else {
			st.Verified = true
		}
		out = append(out, st)
	}
	return out, nil
}

func checkLegacy(l v1.Layer, b64 string, dig name.Digest, verifier signature.Verifier) error {
	pl, err := readLayer(l)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("legacy signature: %w", err)
	}
	if err := verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(pl)); err != nil {
		return fmt.Errorf("legacy signature: %w", err)
	}
	var c payload.Cosign
	if err := json.Unmarshal(pl, &c); err != nil {
		return fmt.Errorf("legacy payload: %w", err)
	}
	if got := c.Image.DigestStr(); got != dig.DigestStr() {
		return fmt.Errorf("legacy payload signs %s, not %s", got, dig.DigestStr())
	}
	return nil
}

package sign

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	intotov1 "github.com/in-toto/attestation/go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gpuimg/gpuimg/images"
)

// Media types, predicate types and annotation keys of cosign v3's layout
// (cosign v3.1.3: pkg/oci/remote/write.go WriteAttestationNewBundleFormat,
// pkg/types/predicate.go, pkg/oci/static/signature.go).
const (
	// BundleMediaType is the artifact type of a referrer holding a
	// Sigstore bundle, and its one layer's media type.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// CosignSignPredicateType is the predicate of cosign sign's statement
	// (an empty predicate): "this manifest is signed".
	CosignSignPredicateType = "https://sigstore.dev/cosign/sign/v1"
	// AnnotationPredicateType names the statement's predicate type on the
	// referrer manifest, so verifiers can filter without reading bundles.
	AnnotationPredicateType = "dev.sigstore.bundle.predicateType"
	// AnnotationContent says what the bundle holds ("dsse-envelope").
	AnnotationContent = "dev.sigstore.bundle.content"
	// SimpleSigningMediaType is the layer media type of legacy (cosign v2)
	// signatures in a sha256-<hex>.sig image.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// AnnotationSignature holds a legacy layer's base64 signature.
	AnnotationSignature = "dev.cosignproject.cosign/signature"

	emptyMediaType  = "application/vnd.oci.empty.v1+json"
	createdKey      = "org.opencontainers.image.created"
	attestationType = "attestation-manifest" // BuildKit's vnd.docker.reference.type
)

// Format is where signatures go.
type Format string

// The signature formats.
const (
	// FormatBundle is cosign v3's: a Sigstore bundle as an OCI referrer.
	FormatBundle Format = "bundle"
	// FormatLegacy is cosign v2's: the sha256-<hex>.sig tag, which
	// verifiers older than cosign v3 (and NGC's users) read.
	FormatLegacy Format = "legacy"
	// FormatBoth writes both.
	FormatBoth Format = "both"
)

// ParseFormat parses a --signature-format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatBundle, FormatLegacy, FormatBoth:
		return f, nil
	}
	return "", fmt.Errorf("signature format %q: want bundle (cosign v3, the default), legacy (cosign v2's .sig tag) or both", s)
}

// Option configures Sign, Attest and Verify.
type Option func(*options) error

type options struct {
	format   Format
	registry []images.Option
	now      func() time.Time
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{format: FormatBundle, now: time.Now}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// WithFormat sets where Sign writes signatures. Attest always writes
// bundles; Verify reads every format. The default is FormatBundle.
func WithFormat(f Format) Option {
	return func(o *options) error {
		if _, err := ParseFormat(string(f)); err != nil {
			return err
		}
		o.format = f
		return nil
	}
}

// WithRegistryOptions sets how registries are reached (keychain, insecure
// registries, CA file, retries: images.Option). The default is images'
// defaults (Docker's config.json, TLS verified, loopback over HTTP).
func WithRegistryOptions(opts ...images.Option) Option {
	return func(o *options) error {
		o.registry = append(o.registry, opts...)
		return nil
	}
}

// WithClock sets the clock for the org.opencontainers.image.created
// annotation. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("WithClock: nil clock")
		}
		o.now = now
		return nil
	}
}

// Signed is one manifest signed or attested, and where the signature went.
type Signed struct {
	// Digest is the signed manifest's digest.
	Digest string `json:"digest"`
	// MediaType is the signed manifest's media type.
	MediaType string `json:"media_type"`
	// PredicateType is the statement's predicate type.
	PredicateType string `json:"predicate_type"`
	// Referrer is the digest of the bundle's referrer manifest (empty for
	// FormatLegacy).
	Referrer string `json:"referrer,omitempty"`
	// LegacyTag is the sha256-<hex>.sig tag written (FormatLegacy, FormatBoth).
	LegacyTag string `json:"legacy_tag,omitempty"`
	// Provenance is, for BuildKit provenance Sign re-signed, the digest
	// of the attestation manifest it was read from.
	Provenance string `json:"provenance,omitempty"`
}

// Sign signs the manifest ref names, resolved to its digest, with signer:
// an index and each of its platform manifests (BuildKit's attestation
// manifests are left out), each with cosign's sign statement
// (CosignSignPredicateType). With FormatBundle it writes cosign v3's
// referrer, with FormatLegacy cosign v2's sha256-<hex>.sig tag (appending
// to a signature image already there), with FormatBoth both. A signer is a
// sigstore signature.SignerVerifier: LoadPrivateKey's, or a caller's own.
// When the index holds SLSA v1 provenance from BuildKit (attestation
// manifests, which BuildKit does not sign), Sign also attests it, signed,
// in cosign attest's layout (predicate SLSAProvenanceV1) about its
// platform manifest and about the index, whatever the format (cosign's
// attestations are bundles).
// Each signature is pushed whole (its blobs before its manifest); on an
// error, the manifests signed before it keep their signatures, and the
// Signed returned list them.
func Sign(ctx context.Context, ref string, signer signature.SignerVerifier, opts ...Option) ([]Signed, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	kp, err := newKeypair(signer)
	if err != nil {
		return nil, err
	}
	r, ro, err := images.Remote(ctx, ref, o.registry...)
	if err != nil {
		return nil, err
	}
	targets, err := resolveTargets(r, ro, true)
	if err != nil {
		return nil, err
	}
	var out []Signed
	for _, d := range targets {
		s := Signed{Digest: d.Digest.String(), MediaType: string(d.MediaType), PredicateType: CosignSignPredicateType}
		if o.format != FormatLegacy {
			if s.Referrer, err = attest(ctx, r.Context(), d, kp, CosignSignPredicateType, nil, o, ro); err != nil {
				return out, err
			}
		}
		if o.format != FormatBundle {
			if s.LegacyTag, err = signLegacy(ctx, r.Context(), d, kp, ro); err != nil {
				return out, err
			}
		}
		out = append(out, s)
	}
	if targets[0].MediaType.IsIndex() {
		prov, err := signProvenance(ctx, r.Context(), targets[0], kp, o, ro)
		out = append(out, prov...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Attest signs an in-toto statement about the manifest ref names (resolved
// to its digest; an index is attested as a whole, not per platform) with
// predicateType and predicate (a JSON object: an SPDX or CycloneDX
// document, SLSA provenance, a test result) and attaches it in cosign v3's
// layout, as cosign attest does: `cosign verify-attestation --type
// predicateType` and Verify read it back.
func Attest(ctx context.Context, ref string, signer signature.SignerVerifier, predicateType string, predicate []byte, opts ...Option) (Signed, error) {
	if predicateType == "" {
		return Signed{}, errors.New("attest: empty predicate type")
	}
	o, err := makeOptions(opts...)
	if err != nil {
		return Signed{}, err
	}
	kp, err := newKeypair(signer)
	if err != nil {
		return Signed{}, err
	}
	r, ro, err := images.Remote(ctx, ref, o.registry...)
	if err != nil {
		return Signed{}, err
	}
	targets, err := resolveTargets(r, ro, false)
	if err != nil {
		return Signed{}, err
	}
	d := targets[0]
	s := Signed{Digest: d.Digest.String(), MediaType: string(d.MediaType), PredicateType: predicateType}
	s.Referrer, err = attest(ctx, r.Context(), d, kp, predicateType, predicate, o, ro)
	return s, err
}

// resolveTargets is the descriptor ref names and, for an index with
// children, each platform manifest's.
func resolveTargets(r name.Reference, ro []remote.Option, children bool) ([]v1.Descriptor, error) {
	desc, err := remote.Get(r, ro...)
	if err != nil {
		return nil, images.Explain("resolve", r, err)
	}
	top := v1.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}
	out := []v1.Descriptor{top}
	if !children || !desc.MediaType.IsIndex() {
		return out, nil
	}
	m, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("parse index %s: %w", r, err)
	}
	for _, c := range m.Manifests {
		if c.Annotations["vnd.docker.reference.type"] == attestationType || !c.MediaType.IsImage() {
			continue
		}
		out = append(out, v1.Descriptor{MediaType: c.MediaType, Digest: c.Digest, Size: c.Size})
	}
	return out, nil
}

// statement is the in-toto v1 statement about d, serialized as cosign
// does (protojson of in-toto/attestation's Statement, subject without a
// name).
func statement(d v1.Descriptor, predicateType string, predicate []byte) ([]byte, error) {
	pred := &structpb.Struct{}
	if len(predicate) > 0 {
		if err := protojson.Unmarshal(predicate, pred); err != nil {
			return nil, fmt.Errorf("predicate of %s: want a JSON object: %w", predicateType, err)
		}
	}
	st := &intotov1.Statement{
		Type:          intotov1.StatementTypeUri,
		Subject:       []*intotov1.ResourceDescriptor{{Digest: map[string]string{d.Digest.Algorithm: d.Digest.Hex}}},
		PredicateType: predicateType,
		Predicate:     pred,
	}
	return protojson.Marshal(st)
}

// attest signs the statement about d into a bundle and pushes it as a
// referrer of d in repo; it returns the referrer's digest.
func attest(ctx context.Context, repo name.Repository, d v1.Descriptor, kp *keypair, predicateType string, predicate []byte, o *options, ro []remote.Option) (string, error) {
	payload, err := statement(d, predicateType, predicate)
	if err != nil {
		return "", err
	}
	b, err := dsseBundle(ctx, payload, kp)
	if err != nil {
		return "", fmt.Errorf("sign %s: %w", d.Digest, err)
	}
	bundleJSON, err := protojson.Marshal(b)
	if err != nil {
		return "", fmt.Errorf("marshal bundle: %w", err)
	}
	ann := map[string]string{
		createdKey:              o.now().UTC().Format(time.RFC3339),
		AnnotationContent:       "dsse-envelope",
		AnnotationPredicateType: predicateType,
	}
	return writeReferrer(repo, d, BundleMediaType, bundleJSON, ann, ro)
}

// referrerManifest is an OCI image manifest with the artifactType field
// (v1.Manifest has none).
type referrerManifest struct {
	v1.Manifest
	ArtifactType string `json:"artifactType,omitempty"`
}

type rawManifest struct {
	raw []byte
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// writeReferrer pushes blob as the one layer of an artifact of
// artifactType whose subject is d, laid out as cosign's WriteReferrer
// (config: the empty descriptor, its blob {} uploaded); remote.Put keeps
// the referrers tag index on registries without the Referrers API.
func writeReferrer(repo name.Repository, d v1.Descriptor, artifactType string, blob []byte, ann map[string]string, ro []remote.Option) (string, error) {
	cfg := static.NewLayer([]byte("{}"), types.OCIConfigJSON)
	layer := static.NewLayer(blob, types.MediaType(artifactType))
	for _, l := range []v1.Layer{cfg, layer} {
		if err := remote.WriteLayer(repo, l, ro...); err != nil {
			return "", fmt.Errorf("upload signature blob to %s: %w", repo, err)
		}
	}
	cfgDigest, _ := cfg.Digest()
	layerDigest, _ := layer.Digest()
	m := referrerManifest{Manifest: v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        v1.Descriptor{MediaType: emptyMediaType, ArtifactType: artifactType, Digest: cfgDigest, Size: 2},
		Layers:        []v1.Descriptor{{MediaType: types.MediaType(artifactType), Digest: layerDigest, Size: int64(len(blob))}},
		Subject:       &v1.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size},
		Annotations:   ann,
	}, ArtifactType: artifactType}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return "", err
	}
	dst := repo.Digest(h.String())
	if err := remote.Put(dst, rawManifest{raw}, ro...); err != nil {
		return "", images.Explain("push signature to", dst, err)
	}
	return h.String(), nil
}

// legacyTag is cosign v2's signature tag of digest d.
func legacyTag(repo name.Repository, d v1.Hash) name.Tag {
	return repo.Tag(d.Algorithm + "-" + d.Hex + ".sig")
}

// digestBytes is a sha256 digest's raw bytes.
func digestBytes(d v1.Hash) ([]byte, error) {
	if d.Algorithm != "sha256" {
		return nil, fmt.Errorf("digest %s: only sha256 digests are signed", d)
	}
	return hex.DecodeString(d.Hex)
}

// dsseBundle signs payload (an in-toto statement) as a DSSE envelope and
// wraps it in a Sigstore bundle v0.3 whose verification material is the
// key's hint, field for field what sigstore-go's sign.Bundle writes for a
// key with no transparency log or timestamp authority (the bundle cosign
// sign --key writes with --tlog-upload=false). It is assembled here from
// protobuf-specs' types because sigstore-go's sign package imports
// rekor's PKCS#7 code, which links cobra into library packages.
func dsseBundle(ctx context.Context, payload []byte, kp *keypair) (*protobundle.Bundle, error) {
	sig, _, err := kp.SignData(ctx, pae(InTotoPayloadType, payload))
	if err != nil {
		return nil, err
	}
	return &protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: string(kp.hint)}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload:     payload,
			PayloadType: InTotoPayloadType,
			Signatures:  []*protodsse.Signature{{Sig: sig}},
		}},
	}, nil
}

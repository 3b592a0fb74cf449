package sign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// SLSA and BuildKit names of the provenance Sign re-signs
// (moby/buildkit docs/attestations/attestation-storage.md,
// slsa-provenance.md).
const (
	// SLSAProvenanceV1 is SLSA provenance v1's predicate type, what
	// BuildKit writes with attest:provenance (version=v1, its default)
	// and cosign verify-attestation --type slsaprovenance1 reads.
	SLSAProvenanceV1 = "https://slsa.dev/provenance/v1"
	// annotationRefDigest is, on an attestation manifest's descriptor in
	// the index, the digest of the platform manifest it is about.
	annotationRefDigest = "vnd.docker.reference.digest"
	// annotationLayerPredicate is, on an attestation layer, its
	// statement's predicate type.
	annotationLayerPredicate = "in-toto.io/predicate-type"
)

// buildkitProvenance is one SLSA v1 statement BuildKit stored in an
// index, about one platform manifest.
type buildkitProvenance struct {
	subject     v1.Descriptor // the platform manifest
	attestation v1.Hash       // BuildKit's attestation manifest
	predicate   []byte
}

// findProvenance reads the SLSA v1 provenance BuildKit attached to the
// platform manifests of the index at dig: each attestation manifest
// (vnd.docker.reference.type=attestation-manifest) whose layer holds an
// in-toto statement of predicate SLSAProvenanceV1 about the manifest its
// descriptor names. Provenance of another version (v0.2) is left alone.
func findProvenance(dig name.Digest, ro []remote.Option) ([]buildkitProvenance, error) {
	desc, err := remote.Get(dig, ro...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dig, err)
	}
	if !desc.MediaType.IsIndex() {
		return nil, nil
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("parse index %s: %w", dig, err)
	}
	byDigest := map[v1.Hash]v1.Descriptor{}
	for _, m := range idx.Manifests {
		byDigest[m.Digest] = m
	}
	var out []buildkitProvenance
	for _, m := range idx.Manifests {
		if m.Annotations["vnd.docker.reference.type"] != attestationType {
			continue
		}
		h, err := v1.NewHash(m.Annotations[annotationRefDigest])
		if err != nil {
			continue
		}
		subject, ok := byDigest[h]
		if !ok {
			continue
		}
		preds, err := provenanceLayers(dig.Context().Digest(m.Digest.String()), subject.Digest, ro)
		if err != nil {
			return nil, err
		}
		for _, p := range preds {
			out = append(out, buildkitProvenance{
				subject:     v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size},
				attestation: m.Digest, predicate: p,
			})
		}
	}
	return out, nil
}

// provenanceLayers are the SLSA v1 predicates in the attestation manifest
// at att whose statement is about subject.
func provenanceLayers(att name.Digest, subject v1.Hash, ro []remote.Option) ([][]byte, error) {
	img, err := remote.Image(att, ro...)
	if err != nil {
		return nil, fmt.Errorf("read attestation manifest %s: %w", att, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("read attestation manifest %s: %w", att, err)
	}
	var out [][]byte
	for _, ld := range m.Layers {
		if ld.Annotations[annotationLayerPredicate] != SLSAProvenanceV1 {
			continue
		}
		l, err := img.LayerByDigest(ld.Digest)
		if err != nil {
			return nil, fmt.Errorf("read provenance layer %s: %w", ld.Digest, err)
		}
		blob, err := readLayer(l)
		if err != nil {
			return nil, fmt.Errorf("read provenance layer %s: %w", ld.Digest, err)
		}
		var st struct {
			PredicateType string `json:"predicateType"`
			Subject       []struct {
				Digest map[string]string `json:"digest"`
			} `json:"subject"`
			Predicate json.RawMessage `json:"predicate"`
		}
		if err := json.Unmarshal(blob, &st); err != nil {
			return nil, fmt.Errorf("provenance layer %s of %s: not an in-toto statement: %w", ld.Digest, att.DigestStr(), err)
		}
		if st.PredicateType != SLSAProvenanceV1 || len(st.Predicate) == 0 {
			continue
		}
		about := false
		for _, s := range st.Subject {
			about = about || s.Digest[subject.Algorithm] == subject.Hex
		}
		if about {
			out = append(out, st.Predicate)
		}
	}
	return out, nil
}

// signProvenance re-signs, as cosign attestations (cosign attest's
// layout, predicate SLSAProvenanceV1), the provenance BuildKit stored
// unsigned in the index top: each statement about its platform manifest,
// and about the index too, which is what a tag resolves to (so that
// cosign verify-attestation IMAGE:TAG and gpuimg verify find it).
func signProvenance(ctx context.Context, repo name.Repository, top v1.Descriptor, kp *keypair, o *options, ro []remote.Option) ([]Signed, error) {
	found, err := findProvenance(repo.Digest(top.Digest.String()), ro)
	if err != nil {
		return nil, err
	}
	var out []Signed
	for _, p := range found {
		for _, d := range []v1.Descriptor{p.subject, top} {
			s := Signed{Digest: d.Digest.String(), MediaType: string(d.MediaType), PredicateType: SLSAProvenanceV1, Provenance: p.attestation.String()}
			if s.Referrer, err = attest(ctx, repo, d, kp, SLSAProvenanceV1, p.predicate, o, ro); err != nil {
				return out, fmt.Errorf("sign BuildKit's provenance of %s: %w", p.subject.Digest, err)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

package testenv

import (
	"bytes"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// AttestedIndex is an image index as BuildKit pushes one with
// compression=zstd and provenance on: for each architecture an OCI image
// whose layers (the tars given, lowest first) are zstd-compressed, and an
// attestation manifest (an in-toto SLSA provenance layer, platform
// unknown/unknown, vnd.docker.reference.type=attestation-manifest)
// pointing at it. edit, if set, changes each image's configuration
// (entrypoint, ports, labels); OS and architecture are set before it.
func AttestedIndex(tars [][]byte, archs []string, edit func(*v1.ConfigFile)) (v1.ImageIndex, error) {
	return attestedIndex(tars, archs, edit, provenanceV02)
}

// AttestedIndexSLSA1 is AttestedIndex with SLSA v1 provenance, as
// BuildKit v0.33 writes by default (predicate
// https://slsa.dev/provenance/v1, statement v1, runDetails.builder.id
// builderID).
func AttestedIndexSLSA1(tars [][]byte, archs []string, builderID string) (v1.ImageIndex, error) {
	return attestedIndex(tars, archs, nil, func(subject v1.Hash) (string, string) {
		return "https://slsa.dev/provenance/v1", fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","predicateType":"https://slsa.dev/provenance/v1","subject":[{"name":"pkg:docker/fixture","digest":{"sha256":%q}}],"predicate":{"buildDefinition":{"buildType":"https://github.com/moby/buildkit/blob/master/docs/attestations/slsa-definitions.md","externalParameters":{"request":{"frontend":"dockerfile.v0"}}},"runDetails":{"builder":{"id":%q},"metadata":{"invocationID":"fixture"}}}}`, subject.Hex, builderID)
	})
}

// provenanceV02 is BuildKit's SLSA v0.2 statement about subject.
func provenanceV02(subject v1.Hash) (string, string) {
	return "https://slsa.dev/provenance/v0.2", fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://slsa.dev/provenance/v0.2","subject":[{"name":"_","digest":{"sha256":%q}}],"predicate":{"builder":{"id":""},"buildType":"https://mobyproject.org/buildkit@v1"}}`, subject.Hex)
}

func attestedIndex(tars [][]byte, archs []string, edit func(*v1.ConfigFile), stmt func(v1.Hash) (string, string)) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range archs {
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		for i, b := range tars {
			l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
				tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
			if err != nil {
				return nil, fmt.Errorf("layer %d: %w", i, err)
			}
			if img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: fmt.Sprintf("COPY layer%d /", i)}}); err != nil {
				return nil, err
			}
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", arch
		if edit != nil {
			edit(cfg)
		}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		att, err := attestation(stmt(d))
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx,
			mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}},
			mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
				Platform:    &v1.Platform{OS: "unknown", Architecture: "unknown"},
				Annotations: map[string]string{"vnd.docker.reference.digest": d.String(), "vnd.docker.reference.type": "attestation-manifest"},
			}})
	}
	return idx, nil
}

// attestation is BuildKit's attestation manifest: one in-toto statement
// layer, stmt, of predicate type pred.
func attestation(pred, stmt string) (v1.Image, error) {
	l := static.NewLayer([]byte(stmt), "application/vnd.in-toto+json")
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{Layer: l, Annotations: map[string]string{"in-toto.io/predicate-type": pred}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "unknown", "unknown"
	return mutate.ConfigFile(img, cfg)
}

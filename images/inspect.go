package images

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Inspection is what images inspect shows of a registry image: crane
// manifest and crane config, skopeo inspect and the referrers together.
type Inspection struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	MediaType string `json:"media_type"`
	// Size is the bytes a pull moves: the manifests, every platform's
	// config and its compressed layers (a layer shared by platforms once).
	Size      int64              `json:"size"`
	Platforms []PlatformManifest `json:"platforms"`
	Referrers []InspectReferrer  `json:"referrers"`
}

// PlatformManifest is one image of an index (or the image itself).
type PlatformManifest struct {
	Platform  string        `json:"platform"`
	Digest    string        `json:"digest"`
	MediaType string        `json:"media_type"`
	Size      int64         `json:"size"` // config and compressed layers
	Layers    int           `json:"layers"`
	Config    ConfigSummary `json:"config"`
}

// ConfigSummary is the part of an image config that says how it runs.
type ConfigSummary struct {
	Env        []string          `json:"env"`
	Entrypoint []string          `json:"entrypoint"`
	Cmd        []string          `json:"cmd"`
	User       string            `json:"user"`
	WorkingDir string            `json:"working_dir"`
	Labels     map[string]string `json:"labels"`
}

// InspectReferrer is one artifact attached to the image or one of its
// platform manifests, found as Copy finds them (the OCI Referrers API or
// its sha256-<hex> tag fallback, and cosign v2's .sig/.att/.sbom tags).
type InspectReferrer struct {
	Referrer
	// Kind says what it is: signature, attestation, sbom, validation
	// report, sigstore bundle, or the artifact type itself.
	Kind string `json:"kind"`
}

// Inspect reads ref's manifest (and, for an index, each platform's), each
// config, and what refers to them. It reads no layer.
func Inspect(ctx context.Context, ref string, opts ...Option) (*Inspection, error) {
	o, r, err := prepare(ref, opts)
	if err != nil {
		return nil, err
	}
	ro := o.remote(ctx)
	desc, err := remote.Get(r, ro...)
	if err != nil {
		return nil, explain("inspect", r, err)
	}
	out := &Inspection{Reference: r.String(), Digest: desc.Digest.String(), MediaType: string(desc.MediaType),
		Size: desc.Size, Platforms: []PlatformManifest{}, Referrers: []InspectReferrer{}}
	seen := map[v1.Hash]bool{}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", r, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", r, err)
		}
		for _, m := range im.Manifests {
			if m.Annotations["vnd.docker.reference.type"] == "attestation-manifest" || !m.MediaType.IsImage() {
				continue // BuildKit's attestations: referrers in all but name
			}
			img, err := idx.Image(m.Digest)
			if err != nil {
				return nil, fmt.Errorf("inspect %s: %w", r.Context().Digest(m.Digest.String()), err)
			}
			pm, err := platformManifest(img, m.Platform, seen)
			if err != nil {
				return nil, fmt.Errorf("inspect %s: %w", r.Context().Digest(m.Digest.String()), err)
			}
			out.Size += m.Size + pm.Size
			out.Platforms = append(out.Platforms, pm)
		}
	} else {
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", r, err)
		}
		pm, err := platformManifest(img, nil, seen)
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", r, err)
		}
		out.Size += pm.Size
		out.Platforms = append(out.Platforms, pm)
	}
	refs, err := findReferrers(ctx, o, r, out.Digest)
	if err != nil {
		return nil, err
	}
	for _, x := range refs {
		if x.Tag == "" && (x.ArtifactType == "" || x.ArtifactType == emptyJSON) {
			x.ArtifactType = artifactType(ctx, o, r.Context().Digest(x.Digest).String())
		}
		out.Referrers = append(out.Referrers, InspectReferrer{Referrer: x, Kind: referrerKind(x)})
	}
	return out, nil
}

// platformManifest summarises one image; seen holds the layers counted
// already (shared by platforms), which add nothing to Size again.
func platformManifest(img v1.Image, p *v1.Platform, seen map[v1.Hash]bool) (PlatformManifest, error) {
	var pm PlatformManifest
	d, err := img.Digest()
	if err != nil {
		return pm, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return pm, err
	}
	m, err := img.Manifest()
	if err != nil {
		return pm, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return pm, err
	}
	pm = PlatformManifest{Digest: d.String(), MediaType: string(mt), Layers: len(m.Layers), Size: m.Config.Size}
	if p == nil {
		p = cf.Platform()
	}
	if p != nil {
		pm.Platform = p.String()
	}
	for _, l := range m.Layers {
		if !seen[l.Digest] {
			seen[l.Digest] = true
			pm.Size += l.Size
		}
	}
	c := cf.Config
	pm.Config = ConfigSummary{Env: nonNil(c.Env), Entrypoint: nonNil(c.Entrypoint), Cmd: nonNil(c.Cmd), User: c.User, WorkingDir: c.WorkingDir, Labels: c.Labels}
	if pm.Config.Labels == nil {
		pm.Config.Labels = map[string]string{}
	}
	return pm, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// referrerKind names what a referrer is from its artifact type or its
// cosign v2 tag.
func referrerKind(r Referrer) string {
	at := strings.ToLower(r.ArtifactType)
	switch {
	case strings.HasSuffix(r.Tag, ".sig"):
		return "signature (cosign v2 tag)"
	case strings.HasSuffix(r.Tag, ".att"):
		return "attestation (cosign v2 tag)"
	case strings.HasSuffix(r.Tag, ".sbom"):
		return "sbom (cosign v2 tag)"
	case r.ArtifactType == ReportArtifactType:
		return "validation report"
	case strings.Contains(at, "sigstore.bundle"):
		return "sigstore bundle (signature or attestation)"
	case strings.Contains(at, "spdx") || strings.Contains(at, "cyclonedx"):
		return "sbom"
	case at == "":
		return "artifact"
	}
	return r.ArtifactType
}

// SortedLabels are the label keys of c, sorted.
func (c ConfigSummary) SortedLabels() []string {
	keys := make([]string, 0, len(c.Labels))
	for k := range c.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// emptyJSON is OCI's empty descriptor media type, which some registries
// (and the tag fallback) report as the artifact type of an artifact whose
// manifest names its type only in artifactType or its layer.
const emptyJSON = "application/vnd.oci.empty.v1+json"

// artifactType reads a referrer's manifest for its type: artifactType,
// else its first layer's media type; "" when it cannot be read.
func artifactType(ctx context.Context, o *options, ref string) string {
	r, err := o.parse(ref)
	if err != nil {
		return ""
	}
	desc, err := remote.Get(r, o.remote(ctx)...)
	if err != nil {
		return ""
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return ""
	}
	switch {
	case m.ArtifactType != "" && m.ArtifactType != emptyJSON:
		return m.ArtifactType
	case len(m.Layers) > 0:
		return string(m.Layers[0].MediaType)
	}
	return ""
}

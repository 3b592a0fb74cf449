package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Referrer is one manifest Copy carried along because it refers to a
// copied manifest: a cosign signature or attestation, an SBOM, a
// validation report (OCI 1.1 referrers), or a cosign v2 tag
// (sha256-<hex>.sig, .att, .sbom).
type Referrer struct {
	// Digest is the referrer's manifest digest; Subject the digest it
	// refers to.
	Digest  string `json:"digest"`
	Subject string `json:"subject"`
	// ArtifactType is the referrer's artifact type (empty for a tag).
	ArtifactType string `json:"artifact_type,omitempty"`
	// Tag is the cosign v2 tag it was found at, for those.
	Tag string `json:"tag,omitempty"`
}

// maxReferrerDepth bounds how far referrers of referrers are followed (a
// signature of an SBOM is two deep).
const maxReferrerDepth = 3

// legacySuffixes are the tags cosign v2 keeps beside a digest.
var legacySuffixes = [...]string{".sig", ".att", ".sbom"}

// findReferrers lists, in the source repository, what refers to the
// manifest at top and, for an index, to each of its child manifests
// (platform images and attestation manifests): the referrers the
// Referrers API (or its sha256-<hex> tag fallback, which remote.Referrers
// reads) reports, their own referrers in turn, and cosign v2's tags.
func findReferrers(ctx context.Context, opt *options, src name.Reference, top string) ([]Referrer, error) {
	repo := src.Context()
	ro := opt.remote(ctx)
	subjects := []string{top}
	desc, err := remote.Get(repo.Digest(top), ro...)
	if err != nil {
		return nil, explain("read", src, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return nil, fmt.Errorf("parse index of %s: %w", src, err)
		}
		for _, m := range idx.Manifests {
			subjects = append(subjects, m.Digest.String())
		}
	}
	seen := map[string]bool{}
	var out []Referrer
	for depth := 0; depth < maxReferrerDepth && len(subjects) > 0; depth++ {
		var next []string
		for _, s := range subjects {
			dig := repo.Digest(s)
			idx, err := remote.Referrers(dig, ro...)
			if err != nil {
				return nil, explain("list referrers of", dig, err)
			}
			m, err := idx.IndexManifest()
			if err != nil {
				return nil, fmt.Errorf("list referrers of %s: %w", dig, err)
			}
			for _, d := range m.Manifests {
				if seen[d.Digest.String()] {
					continue
				}
				seen[d.Digest.String()] = true
				out = append(out, Referrer{Digest: d.Digest.String(), Subject: s, ArtifactType: d.ArtifactType})
				next = append(next, d.Digest.String())
			}
			if depth > 0 {
				continue
			}
			h, err := v1.NewHash(s)
			if err != nil {
				return nil, err
			}
			for _, suffix := range legacySuffixes {
				tag := repo.Tag(h.Algorithm + "-" + h.Hex + suffix)
				td, err := remote.Head(tag, ro...)
				if err != nil {
					if te, ok := errors.AsType[*transport.Error](err); ok && te.StatusCode == http.StatusNotFound {
						continue
					}
					return nil, explain("read", tag, err)
				}
				out = append(out, Referrer{Digest: td.Digest.String(), Subject: s, Tag: tag.TagStr()})
			}
		}
		subjects = next
	}
	return out, nil
}

// copyReferrers pushes each referrer from the source repository to dst's
// repository, by digest (cosign v2's by its tag), after the image itself:
// a referrer's subject is then in place, and remote's push keeps the
// sha256-<hex> tag index where dst's registry has no Referrers API.
func copyReferrers(ctx context.Context, opt *options, src, dst name.Reference, refs []Referrer) error {
	puller, err := remote.NewPuller(opt.remote(ctx)...)
	if err != nil {
		return err
	}
	for _, r := range refs {
		from := src.Context().Digest(r.Digest)
		var to name.Reference = dst.Context().Digest(r.Digest)
		if r.Tag != "" {
			to = dst.Context().Tag(r.Tag)
		}
		desc, err := puller.Get(ctx, from)
		if err != nil {
			return explain("read referrer", from, err)
		}
		if err := push(ctx, opt, to, desc, nil); err != nil {
			return fmt.Errorf("copy referrer %s of %s: %w", r.Digest, r.Subject, err)
		}
	}
	return nil
}

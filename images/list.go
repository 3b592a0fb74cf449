package images

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"github.com/gpuimg/gpuimg/matrix"
)

// TagInfo describes one tag of a repository.
type TagInfo struct {
	Tag       string    `json:"tag"`
	Digest    string    `json:"digest"`
	MediaType string    `json:"media_type"`
	Size      int64     `json:"size"` // compressed bytes of the (first platform's) image
	Created   time.Time `json:"created"`
	// Stack summarises the dev.gpuimg.stack label ("cuda12.2.2-torch2.3.1-py3.10 ubuntu22.04": matrix.Stack.Tag and the OS).
	Stack string `json:"stack,omitempty"`
	// Kind is what the tag holds (TagKind): an image or index people
	// pull, or what cosign and the referrers tag fallback keep beside one.
	Kind TagKind `json:"kind"`
}

// TagKind is what a tag of a repository holds.
type TagKind string

// Tag kinds: an image or index pushed to be pulled, or a tag that holds
// something about another manifest: cosign v2's sha256-<hex>.sig, .att
// and .sbom, and the OCI 1.1 referrers tag fallback sha256-<hex> (an
// index of the manifest's referrers, where the registry has no
// Referrers API).
const (
	KindImage       TagKind = "image"
	KindIndex       TagKind = "index"
	KindSignature   TagKind = "signature"
	KindAttestation TagKind = "attestation"
	KindSBOM        TagKind = "sbom"
	KindReferrers   TagKind = "referrers"
)

// reDigestTag is a tag named after a digest: cosign's and the referrers
// fallback's.
var reDigestTag = regexp.MustCompile(`^sha256-[0-9a-f]{64}(\.sig|\.att|\.sbom)?$`)

// kindOf is the kind of tag t whose manifest has media type mt.
func kindOf(t string, mt types.MediaType) TagKind {
	if m := reDigestTag.FindStringSubmatch(t); m != nil {
		switch m[1] {
		case ".sig":
			return KindSignature
		case ".att":
			return KindAttestation
		case ".sbom":
			return KindSBOM
		}
		if mt.IsIndex() {
			return KindReferrers
		}
	}
	if mt.IsIndex() {
		return KindIndex
	}
	return KindImage
}

// List returns a repository's tags with their digests, sizes, creation
// times and stack summaries, newest first.
func List(ctx context.Context, repo string, opts ...Option) ([]TagInfo, error) {
	r, ref, err := prepare(repo+":latest", opts)
	if err != nil {
		return nil, err
	}
	rp := ref.Context()
	tags, err := listTags(ctx, r, rp)
	if err != nil {
		return nil, explain("list", ref, err)
	}
	out := make([]TagInfo, len(tags))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, t := range tags {
		g.Go(func() error {
			tr := rp.Tag(t)
			desc, err := remote.Get(tr, r.remote(gctx)...)
			if err != nil {
				return explain("read", tr, err)
			}
			ti := TagInfo{Tag: t, Digest: desc.Digest.String(), MediaType: string(desc.MediaType), Kind: kindOf(t, desc.MediaType)}
			img, err := desc.Image()
			if err == nil {
				ti.Size, ti.Created, ti.Stack = imageSummary(img)
			}
			out[i] = ti
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].Tag < out[j].Tag
	})
	return out, nil
}

func imageSummary(img v1.Image) (size int64, created time.Time, stack string) {
	if m, err := img.Manifest(); err == nil {
		size = m.Config.Size
		for _, l := range m.Layers {
			size += l.Size
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return size, created, ""
	}
	created = cfg.Created.UTC()
	if st, ok, err := matrix.StackFromLabels(cfg.Config.Labels); ok && err == nil {
		stack = st.Tag() + " " + st.OS
	}
	return size, created, stack
}

// Delete removes a manifest from its registry: by digest, or the digest a
// tag points at (which removes every tag on that digest; the registry must
// allow deletes).
func Delete(ctx context.Context, ref string, opts ...Option) (string, error) {
	r, rf, err := prepare(ref, opts)
	if err != nil {
		return "", err
	}
	d, ok := rf.(name.Digest)
	if !ok {
		desc, err := remote.Head(rf, r.remote(ctx)...)
		if err != nil {
			return "", explain("resolve", rf, err)
		}
		d = rf.Context().Digest(desc.Digest.String())
	}
	if err := remote.Delete(d, r.remote(ctx)...); err != nil {
		return "", explain("delete", d, fmt.Errorf("%w (is deleting enabled on the registry?)", err))
	}
	return d.DigestStr(), nil
}

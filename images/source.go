package images

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/daemon"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/matrix"
)

// Source is what a reference names at its top level, over any transport
// gpuimg reads: one image, or an index (manifest list) with its platform
// images and attestation manifests. Unlike Open it keeps the index, so
// the wrapping can be described (Packaging) and converted (Import).
// Close releases temporary files.
type Source struct {
	Ref Ref
	// Digest and MediaType are the top-level manifest's.
	Digest    string
	MediaType string
	index     v1.ImageIndex // nil for one image
	image     v1.Image      // nil for an index
	close     func() error
}

// Close removes temporary files made by OpenSource.
func (s *Source) Close() error {
	if s == nil || s.close == nil {
		return nil
	}
	return s.close()
}

// OpenSource reads the top level of what r names; layers are read
// lazily. An oci-archive is unpacked under WithTempDir's directory.
func OpenSource(ctx context.Context, r Ref, opts ...Option) (*Source, error) {
	opt, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	s := &Source{Ref: r}
	switch r.Transport {
	case Registry:
		ref, err := opt.parse(r.Name)
		if err != nil {
			return nil, err
		}
		desc, err := remote.Get(ref, opt.remote(ctx)...)
		if err != nil {
			return nil, explain("read", ref, err)
		}
		if desc.MediaType.IsIndex() {
			s.index, err = desc.ImageIndex()
		} else if s.image, err = desc.Image(); err == nil {
			s.image = countedImage{Image: s.image}
		}
		if err != nil {
			return nil, explain("read", ref, err)
		}
	case OCI, OCIArchive, DockerArchive:
		if s.index, s.image, s.close, err = openLocal(ctx, r, opt); err != nil {
			return nil, err
		}
	case DockerDaemon:
		ref, err := name.ParseReference(r.Name)
		if err != nil {
			return nil, err
		}
		if s.image, err = daemon.Image(ref, daemon.WithContext(ctx)); err != nil {
			return nil, fmt.Errorf("read %s from the Docker daemon: %w", r, err)
		}
	default:
		return nil, fmt.Errorf("unknown transport %q", r.Transport)
	}
	var (
		d  v1.Hash
		mt types.MediaType
	)
	if s.index != nil {
		if d, err = s.index.Digest(); err == nil {
			mt, err = s.index.MediaType()
		}
	} else if d, err = s.image.Digest(); err == nil {
		mt, err = s.image.MediaType()
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("read %s: %w", r, err), s.Close())
	}
	s.Digest, s.MediaType = d.String(), string(mt)
	return s, nil
}

// spoolTo makes the source's layers read through sp: the first reader
// fetches each blob into sp's directory, later readers read that file.
func (s *Source) spoolTo(sp *spool) {
	if s.index != nil {
		s.index = newSpooledIndex(s.index, sp)
	} else {
		s.image = spooledImage{Image: s.image, s: sp}
	}
}

// IsAttestation says whether an index entry is an attestation manifest
// rather than a platform image: BuildKit marks them with
// vnd.docker.reference.type=attestation-manifest and platform
// unknown/unknown; OCI artifacts carry an artifact type other than an
// image configuration's.
func IsAttestation(d v1.Descriptor) bool {
	return d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" ||
		(d.Platform != nil && d.Platform.OS == "unknown") ||
		(d.ArtifactType != "" && d.ArtifactType != string(types.OCIConfigJSON) && d.ArtifactType != string(types.DockerConfigJSON))
}

// entries are the platform images of the index, attestations left out,
// and how many attestations there are.
func (s *Source) entries() (imgs []v1.Descriptor, attestations int, err error) {
	m, err := s.index.IndexManifest()
	if err != nil {
		return nil, 0, fmt.Errorf("read index of %s: %w", s.Ref, err)
	}
	for _, d := range m.Manifests {
		switch {
		case IsAttestation(d):
			attestations++
		case d.MediaType.IsImage():
			imgs = append(imgs, d)
		}
	}
	return imgs, attestations, nil
}

// Image is the image for platform (os/arch[/variant]; "" takes the first
// of an index, or the one image). A single image is returned whatever
// its platform.
func (s *Source) Image(platform string) (v1.Image, error) {
	if s.index == nil {
		return s.image, nil
	}
	imgs, _, err := s.entries()
	if err != nil {
		return nil, err
	}
	for _, d := range imgs {
		if platform == "" || (d.Platform != nil && platformString(d.Platform) == platform) {
			img, err := s.index.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("read the %s image of %s: %w", platformString(d.Platform), s.Ref, err)
			}
			if s.Ref.Transport == Registry {
				img = countedImage{Image: img}
			}
			return img, nil
		}
	}
	return nil, fmt.Errorf("%s has no image for %s", s.Ref, platform)
}

// Packaging describes how the source is wrapped, with the image-level
// facts (media type, layer compressions, compressed size) of the image t
// would run (Target.Platform), else of the first.
func (s *Source) Packaging(t matrix.Target) (matrix.Packaging, error) {
	p := matrix.Packaging{MediaType: s.MediaType, Index: s.index != nil}
	if s.index != nil {
		imgs, att, err := s.entries()
		if err != nil {
			return p, err
		}
		p.Attestations = att
		for _, d := range imgs {
			p.Platforms = append(p.Platforms, platformString(d.Platform))
		}
		if len(imgs) == 0 {
			return p, fmt.Errorf("%s is an index without images", s.Ref)
		}
	} else {
		cfg, err := s.image.ConfigFile()
		if err != nil {
			return p, fmt.Errorf("read config of %s: %w", s.Ref, err)
		}
		p.Platforms = []string{platformString(cfg.Platform())}
	}
	p.Platform = p.Platforms[0]
	if pl, ok := t.Platform(p.Platforms); ok {
		p.Platform = pl
	}
	img, err := s.Image(p.Platform)
	if err != nil {
		return p, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return p, fmt.Errorf("read %s: %w", s.Ref, err)
	}
	p.ImageMediaType = string(mt)
	layers, err := img.Layers()
	if err != nil {
		return p, fmt.Errorf("read layers of %s: %w", s.Ref, err)
	}
	for _, l := range layers {
		lmt, err := l.MediaType()
		if err != nil {
			return p, err
		}
		c := matrix.CompressionOf(string(lmt))
		if c != "" && !slices.Contains(p.Compressions, c) {
			p.Compressions = append(p.Compressions, c)
		}
		n, err := l.Size()
		if err != nil {
			return p, fmt.Errorf("read layer size of %s: %w", s.Ref, err)
		}
		p.Compressed += n
	}
	return p, nil
}

// platformString writes a platform as os/arch[/variant], "unknown" for
// none.
func platformString(p *v1.Platform) string {
	if p == nil || p.OS == "" {
		return "unknown"
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

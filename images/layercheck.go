package images

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// LayerCheck judges one image's layers before Export, Convert or Import
// commits any of it: an error refuses the image, and the verb returns it
// wrapped, nothing written. Export and Convert run it on what they staged
// (the layout or archive under a temporary name, the recompressed
// layers), so a registry's blobs are read once; Import runs it before
// pushing. gpuimg passes
// validate.RefuseLinkEscapes (hard links whose target leaves the root,
// names written through a symlink laid down earlier, in any layer), so
// the three verbs refuse what validate's unsafe-paths check fails.
type LayerCheck func(ctx context.Context, img v1.Image) error

// WithLayerCheck has Export, Convert and Import run c on every platform
// image they write (attestation manifests are not file systems and are
// not judged). Import's ImportCheck judges the image it validates, so c
// runs there on the other images an index push carries.
func WithLayerCheck(c LayerCheck) Option {
	return func(o *options) error {
		o.layerCheck = c
		return nil
	}
}

// checkLayers runs the layer check, if one is set, on img or on every
// platform image of idx (nested indexes included) but skip's: what names
// the image being written, for the error.
func (o *options) checkLayers(ctx context.Context, what string, idx v1.ImageIndex, img v1.Image, skip v1.Hash) error {
	if o.layerCheck == nil {
		return nil
	}
	if idx == nil {
		return o.checkImage(ctx, what, img)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("read the index of %s: %w", what, err)
	}
	for _, d := range m.Manifests {
		switch {
		case IsAttestation(d) || d.Digest == skip:
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return fmt.Errorf("read index %s of %s: %w", d.Digest, what, err)
			}
			if err := o.checkLayers(ctx, what, child, nil, skip); err != nil {
				return err
			}
		case d.MediaType.IsImage():
			img, err := idx.Image(d.Digest)
			if err != nil {
				return fmt.Errorf("read the %s image of %s: %w", platformString(d.Platform), what, err)
			}
			if err := o.checkImage(ctx, what+" ("+platformString(d.Platform)+")", img); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *options) checkImage(ctx context.Context, what string, img v1.Image) error {
	if err := o.layerCheck(ctx, img); err != nil {
		return fmt.Errorf("%s: nothing written: %w", what, err)
	}
	return nil
}

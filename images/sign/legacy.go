package sign

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/gpuimg/gpuimg/images"
)

// signLegacy writes cosign v2's signature of d: a simple-signing payload
// (critical.image.docker-manifest-digest = d) as a layer of the image
// tagged sha256-<hex>.sig, the signature in its annotation; a signature
// image already there keeps its layers (an identical payload and
// signature is not added twice). It returns the tag.
func signLegacy(ctx context.Context, repo name.Repository, d v1.Descriptor, kp *keypair, ro []remote.Option) (string, error) {
	pl, err := payload.Cosign{Image: repo.Digest(d.Digest.String())}.MarshalJSON()
	if err != nil {
		return "", err
	}
	sig, _, err := kp.SignData(ctx, pl)
	if err != nil {
		return "", err
	}
	b64 := base64.StdEncoding.EncodeToString(sig)
	tag := legacyTag(repo, d.Digest)
	base, err := legacyBase(tag, ro)
	if err != nil {
		return "", err
	}
	layers, err := base.Layers()
	if err != nil {
		return "", err
	}
	m, err := base.Manifest()
	if err != nil {
		return "", err
	}
	for i, l := range layers {
		if m.Layers[i].Annotations[AnnotationSignature] == b64 {
			if c, err := readLayer(l); err == nil && bytes.Equal(c, pl) {
				return tag.String(), nil
			}
		}
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(pl, SimpleSigningMediaType),
		Annotations: map[string]string{AnnotationSignature: b64},
	})
	if err != nil {
		return "", err
	}
	if err := remote.Write(tag, img, ro...); err != nil {
		return "", images.Explain("push legacy signature to", tag, err)
	}
	return tag.String(), nil
}

// legacyBase is the signature image at tag, or cosign's empty one (OCI
// manifest and config media types).
func legacyBase(tag name.Tag, ro []remote.Option) (v1.Image, error) {
	img, err := remote.Image(tag, ro...)
	if err == nil {
		return img, nil
	}
	if te, ok := errors.AsType[*transport.Error](err); ok && te.StatusCode == http.StatusNotFound {
		return mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), nil
	}
	return nil, images.Explain("read legacy signatures", tag, err)
}

package images

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Remote is how a package beside this one (images/sign) reaches the
// registry that ref names with the same keychain, TLS, retries and user
// agent as every verb here: ref parsed (loopback and insecure registries
// over plain HTTP) and go-containerregistry's remote options for one
// operation under ctx. Local transports (oci:, docker-archive:, …) are
// refused: they hold no referrers.
func Remote(ctx context.Context, ref string, opts ...Option) (name.Reference, []remote.Option, error) {
	o, r, err := prepare(ref, opts)
	if err != nil {
		return nil, nil, err
	}
	return r, o.remote(ctx), nil
}

// Explain wraps a registry error of op on ref as every verb of this
// package does: a refused login names how to log in, a 404 says "not
// found".
func Explain(op string, ref name.Reference, err error) error {
	return explain(op, ref, err)
}

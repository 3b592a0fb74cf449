package images

import "github.com/google/go-containerregistry/pkg/v1/remote"

// RetryBackoff is how the options retry a transient registry failure
// (WithRetryBackoff, WithRetries), for registry work done outside this
// package: builder retries BuildKit's pushes with it, so a build's push is
// retried as a copy is. The default tries 6 times, waiting 250 ms, then
// twice as long each time.
func RetryBackoff(opts ...Option) (remote.Backoff, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return remote.Backoff{}, err
	}
	return o.backoff, nil
}

package images

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Tags lists a repository's tags without reading any manifest (List
// reads every tag's manifest and config, too much for nvidia/cuda's
// thousands of tags).
func Tags(ctx context.Context, repo string, opts ...Option) ([]string, error) {
	r, ref, err := prepare(repo+":latest", opts)
	if err != nil {
		return nil, err
	}
	tags, err := listTags(ctx, r, ref.Context())
	if err != nil {
		return nil, explain("list", ref, err)
	}
	return tags, nil
}

// ConfigEnv returns the Env of an image's config ("CUDA_VERSION=12.4.1");
// for an index, of its image for the WithPlatform platform (default
// linux/amd64).
func ConfigEnv(ctx context.Context, ref string, opts ...Option) ([]string, error) {
	r, rf, err := prepare(ref, opts)
	if err != nil {
		return nil, err
	}
	extra := []remote.Option{}
	if r.platform == nil {
		extra = append(extra, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	}
	img, err := remote.Image(rf, r.remote(ctx, extra...)...)
	if err != nil {
		return nil, explain("read", rf, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config of %s: %w", rf, err)
	}
	return cfg.Config.Env, nil
}

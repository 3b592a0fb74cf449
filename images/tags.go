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
func Tags(ctx context.Context, repo string, r Remote) ([]string, error) {
	ref, err := r.parse(repo + ":latest")
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(ref.Context(), r.options(ctx)...)
	if err != nil {
		return nil, explain("list", ref, err)
	}
	return tags, nil
}

// ConfigEnv returns the Env of an image's config ("CUDA_VERSION=12.4.1");
// for an index, of its linux/amd64 image.
func ConfigEnv(ctx context.Context, ref string, r Remote) ([]string, error) {
	rf, err := r.parse(ref)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(rf, r.options(ctx, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))...)
	if err != nil {
		return nil, explain("read", rf, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config of %s: %w", rf, err)
	}
	return cfg.Config.Env, nil
}

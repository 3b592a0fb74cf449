package upstream

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/matrix"
)

// cudaRegistry is a distribution registry on loopback (ggcr's
// registry.New) holding nvidia/cuda-style tags: multi-platform indexes
// whose images carry NVIDIA's env (CUDA_VERSION, NV_CUDNN_VERSION).
type cudaRegistry struct {
	t    *testing.T
	host string
}

func newCUDARegistry(t *testing.T) *cudaRegistry {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	return &cudaRegistry{t: t, host: strings.TrimPrefix(srv.URL, "http://")}
}

// push writes repo:tag as an index of linux/amd64 and linux/arm64 images
// with env.
func (r *cudaRegistry) push(repo, tag string, env ...string) {
	r.t.Helper()
	r.pushIndex(repo, tag, env...)
}

func (r *cudaRegistry) pushIndex(repo, tag string, env ...string) v1.ImageIndex {
	r.t.Helper()
	idx := v1.ImageIndex(empty.Index)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 1)
		if err != nil {
			r.t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			r.t.Fatal(err)
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", arch
		cfg.Config.Env = append([]string{"PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			r.t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	ref, err := name.NewTag(r.host + "/" + repo + ":" + tag)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		r.t.Fatal(err)
	}
	return idx
}

// mirrorImages tags one image per CUDA release db has base images for,
// one older release below the data's floor, and latest. The updater
// reads no config of a release the data has, so they share one index.
func (r *cudaRegistry) mirrorImages(repo string, db *matrix.DB) {
	r.t.Helper()
	idx := r.pushIndex(repo, "latest", "CUDA_VERSION=0")
	tags := []string{"9.0.176-base-ubuntu16.04"}
	seen := map[string]bool{}
	for _, b := range db.BaseImages {
		if v := b.CUDA.String(); !seen[v] {
			seen[v] = true
			tags = append(tags, v+"-base-"+b.OS[0])
		}
	}
	for _, tag := range tags {
		ref, err := name.NewTag(r.host + "/" + repo + ":" + tag)
		if err != nil {
			r.t.Fatal(err)
		}
		if err := remote.Tag(ref, idx); err != nil {
			r.t.Fatal(err)
		}
	}
}

package images_test

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/gpuimg/gpuimg/images"
)

// TestLabelled checks the question gpuimg build and publish ask before
// they build: does the tag hold an image with this label value (for the
// platform), and what digest does it resolve to. A missing tag is not an
// error.
func TestLabelled(t *testing.T) {
	reg := newRegistry(t, nil)
	labelled := func(arch, value string) v1.Image {
		img, err := random.Image(512, 1)
		must(t, err)
		cfg, err := img.ConfigFile()
		must(t, err)
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", arch
		cfg.Config.Labels = map[string]string{"dev.gpuimg.inputs": value}
		img, err = mutate.ConfigFile(img, cfg)
		must(t, err)
		return img
	}
	single := labelled("amd64", "sha256:one")
	push(t, reg+"/ml/a:1", single)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: labelled("amd64", "sha256:one"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: labelled("arm64", "sha256:other"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	push(t, reg+"/ml/multi:1", idx)
	arm := &v1.Platform{OS: "linux", Architecture: "arm64"}
	for _, tc := range []struct {
		name, ref, value string
		platform         *v1.Platform
		want             bool
		digest           string
	}{
		{"same value", reg + "/ml/a:1", "sha256:one", nil, true, digestOf(t, single)},
		{"other value", reg + "/ml/a:1", "sha256:two", nil, false, digestOf(t, single)},
		{"no such tag", reg + "/ml/a:2", "sha256:one", nil, false, ""},
		{"an image of another platform", reg + "/ml/a:1", "sha256:one", arm, false, digestOf(t, single)},
		{"an index: its digest, the platform's label", reg + "/ml/multi:1", "sha256:one", nil, true, digestOf(t, idx)},
		{"an index: another platform's label", reg + "/ml/multi:1", "sha256:one", arm, false, digestOf(t, idx)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []images.Option
			if tc.platform != nil {
				opts = append(opts, images.WithPlatform(tc.platform))
			}
			d, ok, err := images.Labelled(t.Context(), tc.ref, "dev.gpuimg.inputs", tc.value, opts...)
			if err != nil || ok != tc.want || d != tc.digest {
				t.Errorf("Labelled = %q, %v, %v; want %q, %v, no error", d, ok, err, tc.digest, tc.want)
			}
		})
	}
}

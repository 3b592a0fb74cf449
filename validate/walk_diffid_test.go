package validate

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// sizedLayer declares another compressed size than its bytes have.
type sizedLayer struct {
	v1.Layer
	size int64
}

func (l sizedLayer) Size() (int64, error) { return l.size, nil }

// TestWalkChecksDiffIDs (issue 23.7): Walk hashes each layer's
// uncompressed stream and refuses one whose content is not what the
// config's diff_ids say, a config with another number of diff IDs than
// layers, and a negative declared size, naming the layer.
func TestWalkChecksDiffIDs(t *testing.T) {
	base := image(t, layer(t, file{"etc/os-release", "ID=debian\n"}), layer(t, file{"app/serve", "#!/bin/sh\n"}))
	cfg, err := base.ConfigFile()
	must(t, err)
	ls, err := base.Layers()
	must(t, err)
	other := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("c", 64)}
	withDiffIDs := func(ids ...v1.Hash) v1.Image {
		c := cfg.DeepCopy()
		c.RootFS.DiffIDs = ids
		img, err := mutate.ConfigFile(base, c)
		must(t, err)
		return img
	}
	ids := cfg.RootFS.DiffIDs
	tests := []struct {
		name string
		img  v1.Image
		want string // in the error; "" walks
	}{
		{"intact", base, ""},
		{"second diff ID wrong", withDiffIDs(ids[0], other), "layer 1 (" + mustDigest(t, ls[1]) + "): its content hashes to " + ids[1].String() + ", but the config's diff_ids give " + other.String()},
		{"diff IDs swapped", withDiffIDs(ids[1], ids[0]), "but the config's diff_ids give"},
		{"one diff ID for two layers", withDiffIDs(ids[0]), "lists 1 diff_ids for 2 layers"},
		{"negative declared size", image(t, sizedLayer{ls[0], -5}), "layer 0 (" + mustDigest(t, ls[0]) + ") declares a size of -5 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := walkAll(t, tt.img, Limits{Jobs: 1})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("walk: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("walk: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func mustDigest(t *testing.T, l v1.Layer) string {
	t.Helper()
	d, err := l.Digest()
	must(t, err)
	return d.String()
}

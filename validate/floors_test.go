package validate

import (
	"strings"
	"testing"
)

// TestInspectFloorsOf: validate computes an image's floors as the
// resolver computes a stack's (matrix.DB.FloorsOf): the image's CUDA
// release's own floor (cuda.yaml: 12.2.0 ships 535.54.03, not 12.2.2's
// 535.104.05), or a wheel's higher one, named as the wheel's.
func TestInspectFloorsOf(t *testing.T) {
	for _, tt := range []struct {
		cuda, torchCUDA, runtime string
		strict, by               string
	}{
		{"12.2.0", "12.1", "", "535.54.03", "set by the image's CUDA 12.2.0"},
		{"12.2.2", "12.1", "", "535.104.05", "set by the image's CUDA 12.2.2"},
		{"12.4.0", "12.4", "", "550.54.15", "set by torch 2.5.1: CUDA 12.4, counted at its newest patch 12.4.1"},
		{"12.2.2", "12.1", "12.4.127", "550.54.15", "set by nvidia-cuda-runtime-cu12 12.4.127: CUDA 12.4"},
		{"", "12.4", "", "550.54.15", "set by torch 2.5.1: CUDA 12.4"},
	} {
		c := &checker{db: db(t), r: &Report{}}
		c.r.Found.CUDA = tt.cuda
		c.r.Found.Torch = &TorchInfo{Version: "2.5.1", CUDA: tt.torchCUDA}
		c.r.Found.Packages = map[string]string{}
		if tt.runtime != "" {
			c.r.Found.Packages["nvidia-cuda-runtime-cu12"] = tt.runtime
		}
		f := c.floors()
		if f.Strict.String() != tt.strict || !strings.HasPrefix(f.Detail, tt.by) {
			t.Errorf("%s + cu%s + %q: floors %s (%s), want %s (%s)", tt.cuda, tt.torchCUDA, tt.runtime, f.Strict, f.Detail, tt.strict, tt.by)
		}
	}
}

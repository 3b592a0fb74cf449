package images

import (
	"errors"
	"testing"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// TestCheckLayerMember judges layer members against the bytes their
// archive stores: the bomb bound (200 times, past 256 MiB) and nothing
// else, so an honest uncompressed layer of any size passes.
func TestCheckLayerMember(t *testing.T) {
	for _, tc := range []struct {
		name         string
		size, stored int64
		refused      bool
	}{
		{"64 GiB of holes in 8 KiB", 64 << 30, 8 << 10, true},
		{"64 GiB from 300 MiB (218 times)", 64 << 30, 300 << 20, true},
		{"64 GiB from 400 MiB (163 times)", 64 << 30, 400 << 20, false},
		{"an honest 20 GiB layer", 20 << 30, 20<<30 + 4096, false},
		{"256 MiB from nothing: not past the bound's start", 256 << 20, 0, false},
		{"256 MiB and 1 byte from nothing", 256<<20 + 1, 0, true},
		{"an empty layer", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLayerMember("layer.tar", tc.size, tc.stored)
			if refused := errors.Is(err, bound.ErrBound); refused != tc.refused {
				t.Errorf("refused %v (%v), want %v", refused, err, tc.refused)
			}
		})
	}
}

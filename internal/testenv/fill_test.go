package testenv

import (
	"bytes"
	"compress/gzip"
	"testing"
)

// TestFillCompression checks what each Fill compresses to with gzip: the
// default stays incompressible, HalfCompressible about 2:1 (what real
// CUDA libraries give), and both are the same for the same seed.
func TestFillCompression(t *testing.T) {
	for _, tc := range []struct {
		fill     Fill
		min, max float64 // compressed / original
	}{
		{Incompressible, 0.99, 1.01},
		{HalfCompressible, 0.45, 0.60},
	} {
		const n = 1 << 20
		data := tc.fill.bytes("seed", n)
		if len(data) != n || data != tc.fill.bytes("seed", n) || data == tc.fill.bytes("other", n) {
			t.Fatalf("fill %d: %d bytes, or not the same for the same seed, or the same for another", tc.fill, len(data))
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if r := float64(buf.Len()) / n; r < tc.min || r > tc.max {
			t.Errorf("fill %d compresses to %.3f of its size, want %.2f to %.2f", tc.fill, r, tc.min, tc.max)
		}
	}
	if mb := StackMB(); mb < 2900 || mb > 3200 {
		t.Errorf("StackMB() = %.1f, want torch 2.6.0's CUDA 12.4 install, about 3 GB", mb)
	}
}

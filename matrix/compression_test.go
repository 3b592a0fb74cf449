package matrix

import "testing"

// TestCompressionWritten: builds and images convert write zstd, gzip and
// estargz; uncompressed is read only, and anything else is no
// compression.
func TestCompressionWritten(t *testing.T) {
	for _, tt := range []struct {
		c    Compression
		want bool
	}{
		{CompressionZstd, true},
		{CompressionGzip, true},
		{CompressionEstargz, true},
		{CompressionUncompressed, false},
		{"", false},
		{"lz4", false},
		{"ZSTD", false},
	} {
		if got := tt.c.Written(); got != tt.want {
			t.Errorf("%q.Written() = %v, want %v", tt.c, got, tt.want)
		}
	}
	ws := WrittenCompressions()
	ws[0] = "lz4" // the caller's slice
	if WrittenCompressions()[0] != CompressionZstd {
		t.Error("WrittenCompressions shares its slice")
	}
}

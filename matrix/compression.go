package matrix

import "slices"

// Compression is a layer compression, one type for every place that
// names one: a target's compressions:, what an image's layers are
// (Packaging), a build's --compression (builder), images convert, and the
// reports.
type Compression string

// Layer compressions.
const (
	CompressionGzip         Compression = "gzip"
	CompressionZstd         Compression = "zstd"
	CompressionEstargz      Compression = "estargz"
	CompressionUncompressed Compression = "uncompressed"
)

// WrittenCompressions are the compressions gpuimg writes layers in, a
// build's (BuildKit's exporters) and images.Convert's alike: zstd,
// gzip and estargz. Uncompressed layers are read, never written. The
// slice is the caller's.
func WrittenCompressions() []Compression {
	return []Compression{CompressionZstd, CompressionGzip, CompressionEstargz}
}

// Written says whether gpuimg writes layers in c (WrittenCompressions).
func (c Compression) Written() bool {
	return slices.Contains(WrittenCompressions(), c)
}

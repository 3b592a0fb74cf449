package images

import (
	"fmt"
	"io"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// countedImage is a registry image whose layers count the compressed
// bytes their streams read (CompressedRead): a registry can declare any
// layer size (1 TiB, sent chunked without a Content-Length), so the
// decompression-bomb ratio of validate.Walk is judged against the bytes
// that actually came.
type countedImage struct{ v1.Image }

func (i countedImage) Layers() ([]v1.Layer, error) {
	ls, err := i.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for j, l := range ls {
		out[j] = newCountedLayer(l)
	}
	return out, nil
}

func (i countedImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	return newCountedLayer(l), nil
}

func (i countedImage) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDiffID(h)
	if err != nil {
		return nil, err
	}
	return newCountedLayer(l), nil
}

// countedLayer counts the compressed bytes read through it.
type countedLayer struct {
	v1.Layer
	n *atomic.Int64
}

func newCountedLayer(l v1.Layer) v1.Layer { return countedLayer{Layer: l, n: new(atomic.Int64)} }

// CompressedRead is how many compressed bytes the layer's streams have
// read so far (validate.Walk's bomb ratio).
func (c countedLayer) CompressedRead() int64 { return c.n.Load() }

func (c countedLayer) Compressed() (io.ReadCloser, error) {
	rc, err := c.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	return &countingReadCloser{ReadCloser: rc, n: c.n}, nil
}

// Uncompressed decompresses the counted compressed stream, as
// go-containerregistry's remote layers decompress theirs.
func (c countedLayer) Uncompressed() (io.ReadCloser, error) {
	rc, err := c.Compressed()
	if err != nil {
		return nil, err
	}
	ul, err := partial.CompressedToLayer(openedBlob{l: c.Layer, rc: rc})
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("open layer: %w", err)
	}
	u, err := ul.Uncompressed()
	if err != nil {
		rc.Close()
		return nil, err
	}
	return u, nil
}

type countingReadCloser struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingReadCloser) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// bombReader is a layer's uncompressed stream that fails once it has
// expanded more than bound.MaxRatio times the compressed bytes read (or,
// for layers that do not count them, their checked size), past
// bound.MinBombBytes: what validate refuses as a bomb, convert refuses to
// expand and stage.
type bombReader struct {
	io.ReadCloser
	n          int64
	compressed func() int64
	what       string
}

// newBombReader bounds rc, the uncompressed stream of l (declared size
// declared; 0 when not known, which leaves layers that do not count
// their compressed bytes unchecked).
func newBombReader(rc io.ReadCloser, l v1.Layer, declared int64, what string) *bombReader {
	compressed := func() int64 { return declared }
	if cc, ok := l.(interface{ CompressedRead() int64 }); ok {
		start := cc.CompressedRead()
		compressed = func() int64 {
			if c := cc.CompressedRead() - start; declared <= 0 || c < declared {
				return max(1, c)
			}
			return declared
		}
	}
	return &bombReader{ReadCloser: rc, compressed: compressed, what: what}
}

func (b *bombReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if c := b.compressed(); b.n > bound.MinBombBytes && c > 0 && b.n/c > bound.MaxRatio {
		return n, fmt.Errorf("%s: %w: a decompression bomb: %d compressed bytes already expand to %d, more than %d times (validate refuses it too; the limit is fixed)",
			b.what, bound.ErrBound, c, b.n, bound.MaxRatio)
	}
	return n, err
}

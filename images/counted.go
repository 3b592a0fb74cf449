package images

import (
	"fmt"
	"io"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
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

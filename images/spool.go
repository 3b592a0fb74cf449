package images

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// spool fetches each source blob once, into a temporary file that every
// later reader then reads: the destinations of a copy (copying to N
// registries reads the source 1 time instead of N), or an import's
// validation and then its push. Blobs are verified against their digest as
// they are fetched (go-containerregistry's remote layers check on EOF).
type spool struct {
	dir string
	mu  sync.Mutex
	m   map[v1.Hash]*spooled
}

type spooled struct {
	once sync.Once
	path string
	err  error
}

func newSpool(dir string) *spool { return &spool{dir: dir, m: map[v1.Hash]*spooled{}} }

func (s *spool) open(l v1.Layer) (io.ReadCloser, error) {
	d, err := l.Digest()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	e, ok := s.m[d]
	if !ok {
		e = &spooled{path: filepath.Join(s.dir, d.Algorithm+"-"+d.Hex)}
		s.m[d] = e
	}
	s.mu.Unlock()
	e.once.Do(func() { e.err = fetch(l, e.path) })
	if e.err != nil {
		return nil, e.err
	}
	return os.Open(e.path)
}

func fetch(l v1.Layer, path string) error {
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path + ".part")
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return fmt.Errorf("fetch blob: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".part", path)
}

// spooledLayer serves its compressed bytes from the spool.
type spooledLayer struct {
	v1.Layer
	s *spool
}

func (l spooledLayer) Compressed() (io.ReadCloser, error) { return l.s.open(l.Layer) }

// Uncompressed decompresses the spooled bytes (gzip, zstd or none, as
// go-containerregistry detects them), so a reader of the content, such as
// validation, does not fetch the blob again.
func (l spooledLayer) Uncompressed() (io.ReadCloser, error) {
	cl, err := partial.CompressedToLayer(compressedOnly{l})
	if err != nil {
		return nil, err
	}
	return cl.Uncompressed()
}

// compressedOnly hides a layer's own Uncompressed from
// partial.CompressedToLayer, which then reads Compressed.
type compressedOnly struct{ l spooledLayer }

func (c compressedOnly) Digest() (v1.Hash, error)            { return c.l.Digest() }
func (c compressedOnly) Compressed() (io.ReadCloser, error)  { return c.l.Compressed() }
func (c compressedOnly) Size() (int64, error)                { return c.l.Size() }
func (c compressedOnly) MediaType() (types.MediaType, error) { return c.l.MediaType() }
func (c compressedOnly) DiffID() (v1.Hash, error)            { return c.l.DiffID() }

// spooledImage hands out spooled layers; manifests and configs are small
// and read as they are.
type spooledImage struct {
	v1.Image
	s *spool
}

func (i spooledImage) Layers() ([]v1.Layer, error) {
	ls, err := i.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for j, l := range ls {
		out[j] = spooledLayer{Layer: l, s: i.s}
	}
	return out, nil
}

func (i spooledImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	return spooledLayer{Layer: l, s: i.s}, nil
}

// spooledIndex hands out spooled images and indexes.
type spooledIndex struct {
	idx
	s *spool
}

// idx names the embedded index so spooledIndex can override ImageIndex.
type idx = v1.ImageIndex

func newSpooledIndex(i v1.ImageIndex, s *spool) spooledIndex { return spooledIndex{idx: i, s: s} }

func (x spooledIndex) Image(h v1.Hash) (v1.Image, error) {
	img, err := x.idx.Image(h)
	if err != nil {
		return nil, err
	}
	return spooledImage{Image: img, s: x.s}, nil
}

func (x spooledIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	child, err := x.idx.ImageIndex(h)
	if err != nil {
		return nil, err
	}
	return newSpooledIndex(child, x.s), nil
}

package images

import (
	"io"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
)

// Progress is how far a long read or write has come: Bytes of Total
// (compressed layer bytes; several destinations of a copy add up), and
// for a read, LayersDone of Layers.
type Progress struct {
	Bytes, Total       int64
	LayersDone, Layers int
}

// progressSink adds up the reports of concurrent reads and pushes and
// hands the sum to the caller's function, one call at a time.
type progressSink struct {
	fn    func(Progress)
	mu    sync.Mutex
	parts map[string]Progress
}

func newProgressSink(fn func(Progress)) *progressSink {
	if fn == nil {
		return nil
	}
	return &progressSink{fn: fn, parts: map[string]Progress{}}
}

// set records part's state and reports the sum; a nil sink is silent.
func (s *progressSink) set(part string, p Progress) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parts[part] = p
	var sum Progress
	for _, q := range s.parts {
		sum.Bytes += q.Bytes
		sum.Total += q.Total
		sum.LayersDone += q.LayersDone
		sum.Layers += q.Layers
	}
	s.fn(sum)
}

// readMeter counts the compressed bytes of an image's layers as they are
// read. A layer read twice (a check, then the conversion) counts once:
// its bytes are the most read of it in one pass, and it is done once.
type readMeter struct {
	sink *progressSink
	mu   sync.Mutex
	p    Progress
	read map[v1.Hash]int64
	done map[v1.Hash]bool
}

func (m *readMeter) add(layer v1.Hash, readSoFar int64, layerDone bool) {
	m.mu.Lock()
	if m.read == nil {
		m.read, m.done = map[v1.Hash]int64{}, map[v1.Hash]bool{}
	}
	if prev := m.read[layer]; readSoFar > prev {
		m.p.Bytes += readSoFar - prev
		m.read[layer] = readSoFar
	}
	if layerDone && !m.done[layer] {
		m.done[layer] = true
		m.p.LayersDone++
	}
	p := m.p
	m.mu.Unlock()
	m.sink.set("read", p)
}

// progressImage reports the reads of its layers' bytes (validate, sbom,
// export, convert read them all) to a meter. Uncompressed reads go
// through Compressed (partial.CompressedToLayer), so both count.
type progressImage struct {
	v1.Image
	m *readMeter
}

// withReadProgress wraps img when s is set.
func withReadProgress(img v1.Image, s *progressSink) v1.Image {
	if s == nil {
		return img
	}
	m := &readMeter{sink: s}
	if mf, err := img.Manifest(); err == nil {
		m.p.Layers = len(mf.Layers)
		for _, l := range mf.Layers {
			m.p.Total += l.Size
		}
	}
	return progressImage{Image: img, m: m}
}

func (i progressImage) Layers() ([]v1.Layer, error) {
	ls, err := i.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for j, l := range ls {
		if out[j], err = partial.CompressedToLayer(&progressLayer{Layer: l, m: i.m}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (i progressImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToLayer(&progressLayer{Layer: l, m: i.m})
}

// progressLayer counts what is read of its compressed stream.
type progressLayer struct {
	v1.Layer
	m *readMeter
}

func (l *progressLayer) Compressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	size, err := l.Size()
	if err != nil {
		size = -1
	}
	h, err := l.Digest()
	if err != nil {
		return nil, err
	}
	return &countingReader{rc: rc, m: l.m, size: size, layer: h}, nil
}

// countingReader reports each read, and the layer done at its end: its
// size read (a decompressor stops at its trailer, before io.EOF), or
// io.EOF.
type countingReader struct {
	rc         io.ReadCloser
	m          *readMeter
	layer      v1.Hash
	size, read int64
	done       bool
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.read += int64(n)
	end := (err == io.EOF || r.size >= 0 && r.read >= r.size) && !r.done
	if end {
		r.done = true
	}
	if n > 0 || end {
		r.m.add(r.layer, r.read, end)
	}
	return n, err
}

func (r *countingReader) Close() error { return r.rc.Close() }

// withIndexReadProgress wraps idx when s is set: the layers of every
// image below it (each platform's, attestation manifests' too, nested
// indexes walked) count in one meter whose totals are their compressed
// sizes, each distinct layer once, so an export of a whole index shows
// every platform's layers.
func withIndexReadProgress(idx v1.ImageIndex, s *progressSink) (v1.ImageIndex, error) {
	if s == nil {
		return idx, nil
	}
	m := &readMeter{sink: s}
	if err := indexTotals(idx, m, map[v1.Hash]bool{}); err != nil {
		return nil, err
	}
	return progressIndex{index: idx, m: m}, nil
}

// indexTotals adds the layers of idx's images, each digest once, to m's
// totals.
func indexTotals(idx v1.ImageIndex, m *readMeter, seen map[v1.Hash]bool) error {
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return err
			}
			if err := indexTotals(child, m, seen); err != nil {
				return err
			}
		case d.MediaType.IsImage():
			img, err := idx.Image(d.Digest)
			if err != nil {
				return err
			}
			mf, err := img.Manifest()
			if err != nil {
				return err
			}
			for _, l := range mf.Layers {
				if !seen[l.Digest] {
					seen[l.Digest] = true
					m.p.Layers++
					m.p.Total += l.Size
				}
			}
		}
	}
	return nil
}

// progressIndex hands out its images (and nested indexes) with their
// layer reads counted in one meter.
type progressIndex struct {
	index
	m *readMeter
}

// index is v1.ImageIndex under a name progressIndex can embed beside its
// own ImageIndex method.
type index = v1.ImageIndex

func (i progressIndex) Image(h v1.Hash) (v1.Image, error) {
	img, err := i.index.Image(h)
	if err != nil {
		return nil, err
	}
	return progressImage{Image: img, m: i.m}, nil
}

func (i progressIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	idx, err := i.index.ImageIndex(h)
	if err != nil {
		return nil, err
	}
	return progressIndex{index: idx, m: i.m}, nil
}

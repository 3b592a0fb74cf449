package validate

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/errgroup"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Limits bound what Walk reads, so a hostile image cannot exhaust memory
// or time. Zero fields take the defaults noted.
type Limits struct {
	// MaxEntries is the most tar entries over all layers (default 5,000,000).
	MaxEntries int
	// MaxRatio is the largest uncompressed/compressed ratio a layer may
	// reach once past MinBombBytes (default 200).
	MaxRatio int64
	// MinBombBytes is where the ratio check starts (default 256 MiB).
	MinBombBytes int64
	// Jobs is how many layers are read at once (default GOMAXPROCS).
	Jobs int
	// MaxELFObjects is the most ELF files whose dynamic section the
	// libs/closure check reads (default 200,000).
	MaxELFObjects int
	// MaxELFBytes is how far into a file its dynamic section may lie
	// (default 8 GiB); the bytes before it are the layer stream the walk
	// reads anyway, and are not kept.
	MaxELFBytes int64
	// MaxSecretScanFileBytes is how much of one text file the secrets
	// check reads (default 256 MiB); MaxSecretScanBytes is how much over
	// all files (default 16 GiB). A file cut short makes the check a
	// warning, not a pass (scan.go).
	MaxSecretScanFileBytes int64
	MaxSecretScanBytes     int64
	// MaxPathBytes is the longest entry name, cleaned (default 4096,
	// Linux's PATH_MAX: docker and containerd cannot create a longer
	// one).
	MaxPathBytes int
	// MaxPathDepth is the most directories an entry name may have
	// (default 1024).
	MaxPathDepth int
	// MaxTotalPathBytes bounds the names of all entries of all layers
	// together, which the walk keeps (default 512 MiB).
	MaxTotalPathBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxEntries == 0 {
		l.MaxEntries = 5_000_000
	}
	if l.MaxRatio == 0 {
		l.MaxRatio = bound.MaxRatio
	}
	if l.MinBombBytes == 0 {
		l.MinBombBytes = bound.MinBombBytes
	}
	if l.Jobs <= 0 {
		l.Jobs = runtime.GOMAXPROCS(0)
	}
	if l.MaxPathBytes == 0 {
		l.MaxPathBytes = 4096
	}
	if l.MaxPathDepth == 0 {
		l.MaxPathDepth = 1024
	}
	if l.MaxTotalPathBytes == 0 {
		l.MaxTotalPathBytes = 512 << 20
	}
	return l
}

// checkPath bounds one cleaned entry name, and with total (shared by the
// layers) all of them: resolving whiteouts walks a name's components, and
// the walk keeps every name.
func (l Limits) checkPath(p string, total *atomic.Int64) error {
	if len(p) > l.MaxPathBytes {
		return fmt.Errorf("an entry name of %d bytes (%s): %w: longer than %d bytes, which docker and containerd cannot create", len(p), bound.Quote(p), bound.ErrBound, l.MaxPathBytes)
	}
	if d := strings.Count(p, "/"); d > l.MaxPathDepth {
		return fmt.Errorf("an entry %d directories deep (%s): %w: deeper than %d", d, bound.Quote(p), bound.ErrBound, l.MaxPathDepth)
	}
	if n := total.Add(int64(len(p))); n > l.MaxTotalPathBytes {
		return fmt.Errorf("entry names: %w: more than %d MiB of names over all layers", bound.ErrBound, l.MaxTotalPathBytes>>20)
	}
	return nil
}

// Entry is one file of the image's final filesystem.
type Entry struct {
	// Path is clean and relative to the root ("usr/lib/libcudart.so.12").
	Path   string
	Header *tar.Header
	// Layer is the index of the layer it comes from (0 = base).
	Layer int
}

// LayerStats describes one layer as read.
type LayerStats struct {
	Index        int    `json:"index"`
	Digest       string `json:"digest"`
	Size         int64  `json:"size"`              // compressed
	Uncompressed int64  `json:"uncompressed_size"` // bytes of the tar stream
	Files        int    `json:"files"`
}

// Unsafe is a layer entry that would escape the root if extracted: its
// name, a link's target, or a name written through a symlink laid down
// earlier (links.go).
type Unsafe struct {
	Layer int    `json:"layer"`
	Name  string `json:"name"`
	// Reason says how it escapes; empty for a name with "..".
	Reason string `json:"reason,omitempty"`
}

// WalkResult summarises a walk.
type WalkResult struct {
	Layers []LayerStats `json:"layers"`
	Unsafe []Unsafe     `json:"unsafe,omitempty"`
	// Files counts the entries of the final filesystem.
	Files   int `json:"files"`
	visible map[string]int
}

// ErrBomb is wrapped when a layer expands beyond the limits.
var ErrBomb = errors.New("layer expands beyond the limit")

// Visitor sees each entry of each layer; r yields its content (regular
// files only) and must not be kept after return. Whether the entry is
// part of the final filesystem is known after Walk returns
// (WalkResult.Visible).
type Visitor func(e Entry, r io.Reader) error

// Walk streams the image's layers and calls visit for every entry of every
// layer; the result says which entries are visible in the final
// filesystem (WalkResult.Visible): whiteouts (.wh.NAME, .wh..wh..opq) are
// applied, and a file deleted or replaced by a later layer is not visible.
// Layers are read concurrently (Limits.Jobs at a time), so visit must be
// safe for concurrent use; within one layer, entries come in order.
// Nothing is written to disk and memory grows with the number of paths,
// not with file sizes. Each layer's uncompressed stream is hashed as it is
// read and must match the config's diff_ids entry; a mismatch (or a
// config listing another number of diff IDs than there are layers) is an
// error naming the layer.
func Walk(ctx context.Context, img v1.Image, lim Limits, visit Visitor) (*WalkResult, error) {
	lim = lim.withDefaults()
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("list layers: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	if len(cfg.RootFS.DiffIDs) != len(layers) {
		return nil, fmt.Errorf("the image config lists %d diff_ids for %d layers: the image is corrupt (docker and containerd refuse it); rebuild or export it again", len(cfg.RootFS.DiffIDs), len(layers))
	}
	res := &WalkResult{Layers: make([]LayerStats, len(layers))}
	lists := make([][]rec, len(layers))
	unsafe := make([][]Unsafe, len(layers))
	var entries counts
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(lim.Jobs)
	for i := len(layers) - 1; i >= 0; i-- {
		g.Go(func() error {
			st, list, bad, err := walkLayer(gctx, i, layers[i], cfg.RootFS.DiffIDs[i], lim, &entries, visit)
			res.Layers[i], lists[i], unsafe[i] = st, list, bad
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, u := range unsafe {
		res.Unsafe = append(res.Unsafe, u...)
	}
	res.Unsafe = append(res.Unsafe, linkEscapes(lists)...)
	res.resolveVisible(lists)
	return res, nil
}

// resolveVisible marks which entries of lists (one per layer, base first)
// the final filesystem holds, newest layer first. Whiteouts, opaque
// directories and non-directories are marks in a tree of names, one
// component per level, stamped with their layer: judging a name walks
// its components once, so the work is linear in the names' bytes (a map
// keyed by every parent hashed each parent whole: quadratic).
func (w *WalkResult) resolveVisible(lists [][]rec) {
	w.visible = map[string]int{}
	marks := &markNode{}
	for i := len(lists) - 1; i >= 0; i-- {
		for _, r := range lists[i] {
			switch r.kind {
			case recOpaque:
				n := marks.node(r.path)
				n.v.opaqueBy = max(n.v.opaqueBy, i+1)
				continue
			case recWhiteout:
				n := marks.node(r.path)
				n.v.hiddenBy = max(n.v.hiddenBy, i+1)
				continue
			}
			if _, ok := w.visible[r.path]; ok || hides(marks, r.path, i) {
				continue
			}
			w.visible[r.path] = i
			if r.kind != recDir {
				n := marks.node(r.path)
				n.v.hiddenBy = max(n.v.hiddenBy, i+1)
			}
			w.Layers[i].Files++
			w.Files++
		}
	}
}

// visMarks are the marks resolveVisible keeps on a name. hiddenBy (a
// whiteout, or a non-directory: it and everything below are gone) and
// opaqueBy (an opaque directory: everything below is gone) are the
// newest layer that set them, plus one (0: none).
type visMarks struct{ hiddenBy, opaqueBy int }

// markNode is one name of the tree resolveVisible keeps (nametree.go).
type markNode = nameNode[visMarks]

// hides reports whether a layer above layer removed p or one of its
// parents, replaced a parent by a non-directory, or made a parent (the
// root included) opaque. A mark on the root itself hides nothing but
// through opaqueBy: no entry is the root.
func hides(n *markNode, p string, layer int) bool {
	above := func(by int) bool { return by > layer+1 }
	for p != "" {
		if above(n.v.opaqueBy) {
			return true
		}
		c, rest := nextComponent(p)
		if n = n.child(c); n == nil {
			return false
		}
		if above(n.v.hiddenBy) {
			return true
		}
		p = rest
	}
	return false
}

// Visible reports whether the entry at path in layer is part of the final
// filesystem.
func (w *WalkResult) Visible(layer int, path string) bool {
	l, ok := w.visible[path]
	return ok && l == layer
}

type recKind uint8

const (
	recFile recKind = iota
	recDir
	recWhiteout
	recOpaque
	recSymlink
	recHardlink
)

type rec struct {
	path string
	kind recKind
	link string // a link's target
}

// linkEscapes replays every layer's entries in order through a linkTable
// and lists those that would escape the root when extracted.
func linkEscapes(lists [][]rec) []Unsafe {
	t := newLinkTable()
	var out []Unsafe
	for i, list := range lists {
		t.startLayer()
		for _, r := range list {
			if why := t.add(r); why != "" {
				out = append(out, Unsafe{Layer: i, Name: r.path, Reason: why})
			}
		}
	}
	return out
}

// walkLayer reads layer i once, checking its uncompressed content against
// diffID (the config's diff_ids entry) as it streams: docker and
// containerd refuse a layer whose content is not what the config says.
func walkLayer(ctx context.Context, i int, l v1.Layer, diffID v1.Hash, lim Limits, entries *counts, visit Visitor) (LayerStats, []rec, []Unsafe, error) {
	st := LayerStats{Index: i}
	var list []rec
	var bad []Unsafe
	if d, err := l.Digest(); err == nil {
		st.Digest = d.String()
	}
	var err error
	if st.Size, err = l.Size(); err != nil {
		return st, nil, nil, fmt.Errorf("layer %d size: %w", i, err)
	}
	if st.Size < 0 {
		return st, nil, nil, fmt.Errorf("layer %d (%s) declares a size of %d bytes, which no blob has: the manifest is corrupt", i, st.Digest, st.Size)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return st, nil, nil, fmt.Errorf("open layer %d (%s): %w", i, st.Digest, err)
	}
	defer rc.Close()
	sum := sha256.New()
	compressed := compressedSoFar(l, st.Size)
	cr := &countingReader{r: io.TeeReader(rc, sum), check: func(n int64) error {
		if c := compressed(); n > lim.MinBombBytes && c > 0 && n/c > lim.MaxRatio {
			return fmt.Errorf("%w: layer %d (%s) is %d bytes compressed (read so far; %d declared) and already %d uncompressed", ErrBomb, i, st.Digest, c, st.Size, n)
		}
		return nil
	}}
	tr := tar.NewReader(cr)
	// Visitors read entries' logical content, which a sparse file makes
	// from holes without reading the stream: count it against the same
	// ratio, so a petabyte of holes is a bomb, not a scan without end.
	var bomb error // set once, kept: the visitor may swallow it
	content := &countingReader{r: tr, check: func(n int64) error {
		if c := compressed(); bomb == nil && n > lim.MinBombBytes && c > 0 && n/c > lim.MaxRatio {
			bomb = fmt.Errorf("%w: layer %d (%s) is %d bytes compressed (read so far; %d declared) and its files already read as %d bytes (sparse files)", ErrBomb, i, st.Digest, c, st.Size, n)
		}
		return bomb
	}}
	for {
		if err := context.Cause(ctx); err != nil {
			return st, nil, nil, err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, ErrBomb) {
				return st, nil, nil, err
			}
			return st, nil, nil, fmt.Errorf("read layer %d (%s): %w", i, st.Digest, err)
		}
		if n := entries.n.Add(1); n > int64(lim.MaxEntries) {
			return st, nil, nil, fmt.Errorf("image has more than %d files; raise the limit if this is expected", lim.MaxEntries)
		}
		p, ok := cleanPath(h.Name)
		if !ok {
			bad = append(bad, Unsafe{Layer: i, Name: h.Name})
			continue
		}
		if err := lim.checkPath(p, &entries.names); err != nil {
			return st, nil, nil, fmt.Errorf("layer %d (%s): %w", i, st.Digest, err)
		}
		dir, base := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case base == ".wh..wh..opq":
			list = append(list, rec{path: dir, kind: recOpaque})
			continue
		case strings.HasPrefix(base, ".wh."):
			list = append(list, rec{path: path.Join(dir, strings.TrimPrefix(base, ".wh.")), kind: recWhiteout})
			continue
		case p == "":
			continue
		}
		ent := rec{path: p, kind: recFile}
		switch h.Typeflag {
		case tar.TypeDir:
			ent.kind = recDir
		case tar.TypeSymlink:
			ent.kind, ent.link = recSymlink, h.Linkname
		case tar.TypeLink:
			ent.kind, ent.link = recHardlink, h.Linkname
		}
		list = append(list, ent)
		var r io.Reader = content
		if h.Typeflag != tar.TypeReg {
			r = strings.NewReader("")
		}
		err = visit(Entry{Path: p, Header: h, Layer: i}, r)
		if bomb != nil {
			return st, nil, nil, bomb
		}
		if err != nil {
			if errors.Is(err, ErrBomb) {
				return st, nil, nil, err
			}
			return st, nil, nil, fmt.Errorf("read /%s in layer %d (%s): %w", p, i, st.Digest, err)
		}
	}
	// Drain what the tar reader left, so the count is the stream's size.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return st, nil, nil, fmt.Errorf("read layer %d (%s): %w", i, st.Digest, err)
	}
	st.Uncompressed = cr.n
	if got := hex.EncodeToString(sum.Sum(nil)); diffID.Algorithm != "sha256" || got != diffID.Hex {
		return st, nil, nil, fmt.Errorf("layer %d (%s): its content hashes to sha256:%s, but the config's diff_ids give %s: the image is corrupt (docker and containerd refuse it); rebuild or export it again", i, st.Digest, got, diffID)
	}
	return st, list, bad, nil
}

// compressedSoFar returns how many compressed bytes of l the walk has
// read, for the bomb ratio: a registry may declare any size (1 TiB, sent
// chunked), so a layer that counts its compressed bytes (images'
// registry layers: CompressedRead) is judged against the bytes that
// came, at least 1; others against their declared size, which their
// source checked (a layout's file size, an archive's member).
func compressedSoFar(l v1.Layer, declared int64) func() int64 {
	cc, ok := l.(interface{ CompressedRead() int64 })
	if !ok {
		return func() int64 { return declared }
	}
	start := cc.CompressedRead()
	return func() int64 { return max(1, min(declared, cc.CompressedRead()-start)) }
}

// counts are what the layers read at once count together: entries, and
// bytes of entry names.
type counts struct{ n, names atomic.Int64 }

// cleanPath makes a tar name relative to the root; ok is false for names
// that would escape it ("../etc/passwd").
func cleanPath(name string) (string, bool) {
	n := strings.TrimPrefix(name, "./")
	if slices.Contains(strings.Split(n, "/"), "..") {
		return "", false
	}
	c := path.Clean("/" + n)
	return strings.TrimPrefix(c, "/"), true
}

// countingReader counts bytes and stops the stream when check fails.
type countingReader struct {
	r     io.Reader
	n     int64
	check func(n int64) error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if cerr := c.check(c.n); cerr != nil {
		return n, cerr
	}
	return n, err
}

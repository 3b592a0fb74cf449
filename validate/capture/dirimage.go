package capture

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DirImage is the root filesystem at root as a one-layer image with the
// environment env: an uncompressed layer streamed from the directory on
// each read, never copied. Its diff ID is the hash of one pass over the
// tree, taken on first use; a file that changes between that pass and a
// later read makes the walk fail with a diff ID mismatch (capture a
// quiet system, or an image of it).
//
// The walk reads what a capture needs and no more (tree.go): it stays on
// root's file system, leaves out kernel and runtime file systems, other
// mounts, container runtimes' storage and caches, and streams a file's
// content only when a capture check reads it (install records, version
// files, CUDA libraries); every other file is its name and mode, empty.
// opt bounds it (files, bytes, time) and reports its progress.
func DirImage(ctx context.Context, root string, env []string, opt ...TreeOptions) (v1.Image, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("open root filesystem %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("root filesystem %s is not a directory: give dir:PATH of a directory", root)
	}
	var o TreeOptions
	if len(opt) > 0 {
		o = opt[0]
	}
	l := &dirLayer{ctx: ctx, root: root, tree: newTree(root, o)}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: l, MediaType: types.OCIUncompressedLayer})
	if err != nil {
		return nil, fmt.Errorf("image of %s: %w", root, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image of %s: %w", root, err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = env
	cfg.OS, cfg.Architecture = "linux", "amd64"
	return mutate.ConfigFile(img, cfg)
}

// dirLayer is a directory tree as an uncompressed tar layer: Digest is
// DiffID and Size the tar stream's length.
type dirLayer struct {
	ctx  context.Context //nolint:containedctx // v1.Layer's methods take none; the walk's own context cancels the reads
	root string
	tree *tree
	once sync.Once
	hash v1.Hash
	size int64
	err  error
}

func (l *dirLayer) sum() {
	l.once.Do(func() {
		h := sha256.New()
		n, err := io.Copy(h, l.stream())
		if err != nil {
			l.err = fmt.Errorf("read %s: %w", l.root, err)
			return
		}
		l.size, l.hash = n, v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", h.Sum(nil))}
	})
}

func (l *dirLayer) Digest() (v1.Hash, error) { l.sum(); return l.hash, l.err }
func (l *dirLayer) DiffID() (v1.Hash, error) { l.sum(); return l.hash, l.err }
func (l *dirLayer) Size() (int64, error)     { l.sum(); return l.size, l.err }
func (l *dirLayer) MediaType() (types.MediaType, error) {
	return types.OCIUncompressedLayer, nil
}
func (l *dirLayer) Compressed() (io.ReadCloser, error)   { return l.stream(), nil }
func (l *dirLayer) Uncompressed() (io.ReadCloser, error) { return l.stream(), nil }

// stream writes the tree as tar into a pipe, in lexical order.
func (l *dirLayer) stream() io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(l.tree.write(l.ctx, pw)) }()
	return pr
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

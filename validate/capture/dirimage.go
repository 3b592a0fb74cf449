package capture

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// skipRoot are top-level directories of a live root that hold no
// installed software (kernel and runtime file systems, temporary files,
// logs and caches): DirImage leaves them out.
var skipRoot = map[string]bool{"proc": true, "sys": true, "dev": true, "run": true, "tmp": true, "var/tmp": true, "var/log": true, "var/cache": true, "mnt": true, "media": true, "lost+found": true}

// skipDirNames are directories, wherever they are, that hold caches and
// history rather than installed software (pip's and Hugging Face's caches
// under ~/.cache, git objects, bytecode): DirImage leaves them out.
var skipDirNames = map[string]bool{".cache": true, ".git": true, "__pycache__": true, ".Trash": true}

// dataSuffixes name data files (checkpoints, data sets, archives, media)
// whose content no capture check reads: DirImage streams them empty, so a
// 50 GB model directory costs its names, not its bytes. The rpm
// database (reRPMDB) is read, whatever its suffix.
var dataSuffixes = []string{".safetensors", ".pt", ".pth", ".ckpt", ".bin", ".h5", ".hdf5", ".npy", ".npz", ".parquet", ".arrow", ".tfrecord", ".tar", ".zip", ".gz", ".zst", ".xz", ".bz2", ".jpg", ".jpeg", ".png", ".mp4", ".wav", ".flac", ".sqlite", ".db", ".log", ".onnx", ".gguf", ".pack"}

func dataFile(name string) bool {
	for _, s := range dataSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// DirImage is the root filesystem at root as a one-layer image with the
// environment env: an uncompressed layer streamed from the directory on
// each read, never copied. Its diff ID is the hash of one pass over the
// tree, taken on first use; a file that changes between that pass and a
// later read makes the walk fail with a diff ID mismatch (capture a
// quiet system, or an image of it).
func DirImage(ctx context.Context, root string, env []string) (v1.Image, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("open root filesystem %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("root filesystem %s is not a directory: give dir:PATH of a directory", root)
	}
	l := &dirLayer{ctx: ctx, root: root}
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
	go func() { pw.CloseWithError(writeTree(l.ctx, l.root, pw)) }()
	return pr
}

// writeTree writes root's tree as a tar stream: regular files, directories
// and symlinks with their modes and owners; sockets, devices and the
// directories of skipRoot are left out. A file that vanishes is skipped.
func writeTree(ctx context.Context, root string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if cerr := context.Cause(ctx); cerr != nil {
			return cerr
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (skipRoot[rel] || skipDirNames[d.Name()]) {
			return fs.SkipDir
		}
		return writeEntry(tw, p, rel, d)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, p, rel string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return nil //nolint:nilerr // vanished since the directory was listed
	}
	if !info.Mode().IsRegular() && !info.IsDir() && info.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(p); err != nil {
			return nil //nolint:nilerr // vanished
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return fmt.Errorf("tar header of %s: %w", p, err)
	}
	hdr.Name = rel
	if info.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname, hdr.AccessTime, hdr.ChangeTime = "", "", hdr.ModTime, hdr.ModTime
	if info.Mode().IsRegular() && dataFile(info.Name()) && !reRPMDB.MatchString(rel) {
		hdr.Size = 0
	}
	if !info.Mode().IsRegular() || hdr.Size == 0 {
		return tw.WriteHeader(hdr)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil //nolint:nilerr // unreadable or vanished: left out
	}
	defer f.Close()
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar header of %s: %w", p, err)
	}
	// A file that shrank since it was listed is padded with zeros: the
	// entry keeps the size its header gave.
	n, err := io.CopyN(tw, f, hdr.Size)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", p, err)
	}
	_, err = io.CopyN(tw, zeros{}, hdr.Size-n)
	return err
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

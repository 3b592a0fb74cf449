package capture

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of a directory tree's read (docs/faults.md). They hold for one
// pass; the time bound for all of them.
const (
	// DefaultMaxTreeFiles is the most entries (files, directories, links)
	// one pass writes, after the directories left out.
	DefaultMaxTreeFiles = 2_000_000
	// DefaultMaxTreeBytes is the most file content one pass streams (the
	// files a capture check reads: install records, CUDA libraries).
	DefaultMaxTreeBytes int64 = 32 << 30
	// DefaultMaxTreeTime is the longest all passes over a tree may take.
	DefaultMaxTreeTime = 20 * time.Minute
)

// progressEvery is how many entries pass between two progress reports.
const progressEvery = 2000

// TreeOptions bound and report DirImage's read of a tree.
type TreeOptions struct {
	// MaxFiles, MaxBytes and MaxTime default to DefaultMaxTree*.
	MaxFiles int
	MaxBytes int64
	MaxTime  time.Duration
	// Progress, when set, is called every few thousand entries and at the
	// end of each pass.
	Progress func(TreeProgress)
	// Stats, when set, receives the last pass's counts when it ends.
	Stats *TreeStats
	// otherFS says whether the directory at abs is another file system
	// than the root's; default: a mount point or another device.
	otherFS func(abs string, info fs.FileInfo) bool
}

// TreeProgress is how far a pass over the tree has come.
type TreeProgress struct {
	// Pass counts the reads of the tree: the hashing pass is 1 (a walk),
	// then validate's inventory and the install records read it again
	// (its listing replayed).
	Pass         int
	Files, Bytes int64
	// Dir is the directory being read, root-relative.
	Dir  string
	Done bool
}

// TreeStats are what one pass did: the entries it wrote, the files whose
// content it read and how many bytes, and the directories it left out
// (each with why).
type TreeStats struct {
	Passes  int
	Files   int64
	Bytes   int64
	Opened  []string
	Skipped []string
}

// skipRoot are top-level directories of a live root that hold no
// installed software (kernel and runtime file systems, temporary files,
// logs and caches) or only containers' (their runtimes' storage: a
// container is captured by container:NAME): the tree leaves them out.
var skipRoot = map[string]string{
	"proc": "kernel", "sys": "kernel", "dev": "kernel", "run": "runtime", "tmp": "temporary", "var/tmp": "temporary",
	"var/log": "logs", "var/cache": "cache", "mnt": "mounts", "media": "mounts", "lost+found": "fsck",
	"var/lib/docker": "container storage", "var/lib/containerd": "container storage", "var/lib/containers": "container storage",
	"var/lib/kubelet": "container storage", "var/lib/lxd": "container storage", "var/lib/lxc": "container storage",
	"var/lib/snapd": "snap storage", "snap": "snap storage", "swapfile": "swap",
}

// skipDirNames are directories, wherever they are, that hold caches and
// history rather than installed software (pip's and Hugging Face's caches
// under ~/.cache, git objects, bytecode).
var skipDirNames = map[string]bool{".cache": true, ".git": true, "__pycache__": true, ".Trash": true, ".npm": true, ".m2": true, ".gradle": true}

// skipDirSuffixes are caches and container storage found by path under a
// home or a prefix: Go's module cache, cargo's registry, rootless
// podman's storage.
var skipDirSuffixes = []string{"go/pkg/mod", ".cargo/registry", ".local/share/containers", ".local/share/docker"}

// dataSuffixes name data files (checkpoints, data sets, archives, media)
// whose content no capture check reads. They are listed here so that
// the rule is visible; readsContent leaves out every file it does not
// name anyway.
var dataSuffixes = []string{".safetensors", ".pt", ".pth", ".ckpt", ".bin", ".h5", ".hdf5", ".npy", ".npz", ".parquet", ".arrow", ".tfrecord", ".tar", ".zip", ".gz", ".zst", ".xz", ".bz2", ".jpg", ".jpeg", ".png", ".mp4", ".wav", ".flac", ".sqlite", ".db", ".log", ".onnx", ".gguf", ".pack"}

func dataFile(name string) bool {
	for _, s := range dataSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// contentNames are the files, by name, whose content validate's
// inventory or the capture's install records read.
var contentNames = map[string]bool{
	"os-release": true, "version.json": true, "version.txt": true, "nccl.conf": true, "pyvenv.cfg": true,
	"version.py": true, "cudnn_version.h": true, "nccl.h": true, "cuda.h": true,
	"METADATA": true, "INSTALLER": true, "direct_url.json": true,
}

// gpuLibPrefixes name the shared libraries whose content validate reads
// (sonames, fat binaries for the driver floor): CUDA's, NVIDIA's and the
// frameworks'.
var gpuLibPrefixes = []string{"libcu", "libnv", "libnccl", "libnpp", "libtorch", "libtensorflow", "libxla", "libjax", "libmagma", "libc10"}

// readsContent says whether a capture check reads the content of the
// regular file rel; any other file is streamed as its name, empty.
func readsContent(rel string) bool {
	base := path.Base(rel)
	switch {
	case reRPMDB.MatchString(rel):
		return true
	case dataFile(base):
		return false
	case contentNames[base], rel == "etc/environment", rel == "var/lib/apt/extended_states", rel == "var/lib/dpkg/status":
		return true
	case reDpkgList.MatchString(rel), strings.HasPrefix(rel, "var/lib/dpkg/status.d/"), reCondaMeta.MatchString(rel):
		return true
	}
	return gpuLib(rel, base)
}

// gpuLib says whether rel is a shared library that may hold GPU code:
// named like CUDA's or a framework's, under a CUDA directory, or a Python
// extension.
func gpuLib(rel, base string) bool {
	if !strings.HasSuffix(base, ".so") && !strings.Contains(base, ".so.") {
		return false
	}
	if strings.Contains(rel, "-packages/") || strings.Contains(rel, "cuda") {
		return true
	}
	for _, p := range gpuLibPrefixes {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

// tree is a directory tree read as tar, as a capture needs it.
type tree struct {
	root  string
	opt   TreeOptions
	start time.Time

	mu     sync.Mutex
	passes int
	// listing is the first complete pass's entries: later passes replay
	// it, so that a live machine's files that come and go between passes
	// change nothing but what a replayed file holds.
	listing []treeEntry
	skipped []string
}

// treeEntry is one entry of a pass, as written.
type treeEntry struct {
	name, link string
	typeflag   byte
	mode       int64
	uid, gid   int32
	size       int64
	mtime      time.Time
}

func (e *treeEntry) header() *tar.Header {
	return &tar.Header{Typeflag: e.typeflag, Name: e.name, Linkname: e.link, Mode: e.mode, Uid: int(e.uid), Gid: int(e.gid),
		Size: e.size, ModTime: e.mtime, AccessTime: e.mtime, ChangeTime: e.mtime}
}

func newTree(root string, opt TreeOptions) *tree {
	if opt.MaxFiles <= 0 {
		opt.MaxFiles = DefaultMaxTreeFiles
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxTreeBytes
	}
	if opt.MaxTime <= 0 {
		opt.MaxTime = DefaultMaxTreeTime
	}
	if opt.otherFS == nil {
		opt.otherFS = otherFS(root)
	}
	return &tree{root: root, opt: opt, start: time.Now()}
}

// pass is one read of the tree.
type pass struct {
	n     int
	files int64
	bytes int64
	open  []string
	skip  []string
}

// write writes the tree as a tar stream in lexical order: regular files,
// directories and symlinks with their modes and owners; sockets, devices
// and the directories the capture leaves out are not written. A file that
// vanishes is skipped. The first pass walks the tree and keeps its
// listing; the others replay it.
func (t *tree) write(ctx context.Context, w io.Writer) error {
	t.mu.Lock()
	t.passes++
	p := &pass{n: t.passes}
	listing := t.listing
	if listing != nil {
		p.skip = t.skipped
	}
	t.mu.Unlock()
	tw := tar.NewWriter(w)
	var err error
	if listing != nil {
		err = t.replay(ctx, tw, p, listing)
	} else {
		err = t.walk(ctx, tw, p)
	}
	if err != nil {
		return err
	}
	t.report(p, "", true)
	return tw.Close()
}

// walk walks the tree, writes it and keeps its listing.
func (t *tree) walk(ctx context.Context, tw *tar.Writer, p *pass) error {
	var listing []treeEntry
	err := filepath.WalkDir(t.root, func(abs string, d fs.DirEntry, err error) error {
		if cerr := context.Cause(ctx); cerr != nil {
			return cerr
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(t.root, abs)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if why := t.leaveOut(abs, rel, d); why != "" {
				p.skip = append(p.skip, "/"+rel+" ("+why+")")
				return fs.SkipDir
			}
		}
		if err := t.bound(p, rel, d.IsDir()); err != nil {
			return err
		}
		e, ok := t.entry(abs, rel, d)
		if !ok {
			return nil
		}
		listing = append(listing, e)
		return t.put(tw, p, abs, &e)
	})
	if err != nil {
		return err
	}
	t.mu.Lock()
	if t.listing == nil {
		t.listing, t.skipped = listing, p.skip
	}
	t.mu.Unlock()
	return nil
}

// replay writes a listing again, each file's content read anew.
func (t *tree) replay(ctx context.Context, tw *tar.Writer, p *pass, listing []treeEntry) error {
	for i := range listing {
		if cerr := context.Cause(ctx); cerr != nil {
			return cerr
		}
		e := &listing[i]
		rel := strings.TrimSuffix(e.name, "/")
		if err := t.bound(p, rel, e.typeflag == tar.TypeDir); err != nil {
			return err
		}
		if err := t.put(tw, p, filepath.Join(t.root, filepath.FromSlash(rel)), e); err != nil {
			return err
		}
	}
	return nil
}

// leaveOut says why the directory rel is left out, or "".
func (t *tree) leaveOut(abs, rel string, d fs.DirEntry) string {
	if why := skipRoot[rel]; why != "" {
		return why
	}
	if skipDirNames[d.Name()] {
		return "cache"
	}
	for _, s := range skipDirSuffixes {
		if rel == s || strings.HasSuffix(rel, "/"+s) {
			return "cache"
		}
	}
	if d.Name() == "pkgs" {
		if _, err := os.Stat(filepath.Join(filepath.Dir(abs), "conda-meta")); err == nil {
			return "conda's package cache"
		}
	}
	info, err := d.Info()
	if err == nil && t.opt.otherFS(abs, info) {
		return "another file system"
	}
	return ""
}

// bound fails the pass once it passes a bound, and reports progress.
func (t *tree) bound(p *pass, rel string, dir bool) error {
	p.files++
	if p.files > int64(t.opt.MaxFiles) {
		return fmt.Errorf("%s holds more than %d files after the directories left out (at /%s): capture dir:PATH of the part you need, or move data out of the root (docs/faults.md)", t.root, t.opt.MaxFiles, rel)
	}
	if p.files%progressEvery != 0 {
		return nil
	}
	if el := time.Since(t.start); el > t.opt.MaxTime {
		return fmt.Errorf("reading %s took more than %s (pass %d, %d files, at /%s): capture dir:PATH of the part you need (docs/faults.md)", t.root, t.opt.MaxTime, p.n, p.files, rel)
	}
	at := rel
	if !dir {
		at = path.Dir(rel)
	}
	t.report(p, at, false)
	return nil
}

func (t *tree) report(p *pass, dir string, done bool) {
	if t.opt.Progress != nil {
		t.opt.Progress(TreeProgress{Pass: p.n, Files: p.files, Bytes: p.bytes, Dir: dir, Done: done})
	}
	if done && t.opt.Stats != nil {
		t.mu.Lock()
		*t.opt.Stats = TreeStats{Passes: p.n, Files: p.files, Bytes: p.bytes, Opened: slices.Clone(p.open), Skipped: slices.Clone(p.skip)}
		t.mu.Unlock()
	}
}

// entry is the entry the walk writes for rel, or false for none (a
// socket, a device, a file that vanished). A regular file whose content
// no capture check reads is written empty.
func (t *tree) entry(abs, rel string, d fs.DirEntry) (treeEntry, bool) {
	info, err := d.Info()
	if err != nil {
		return treeEntry{}, false // vanished since the directory was listed
	}
	if !info.Mode().IsRegular() && !info.IsDir() && info.Mode()&fs.ModeSymlink == 0 {
		return treeEntry{}, false
	}
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		if link, err = os.Readlink(abs); err != nil {
			return treeEntry{}, false // vanished
		}
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return treeEntry{}, false
	}
	e := treeEntry{name: rel, link: hdr.Linkname, typeflag: hdr.Typeflag, mode: hdr.Mode, uid: int32(hdr.Uid), gid: int32(hdr.Gid), mtime: hdr.ModTime} //nolint:gosec // ids fit
	if info.IsDir() {
		e.name += "/"
	}
	if info.Mode().IsRegular() && readsContent(rel) {
		e.size = hdr.Size
	}
	return e, true
}

// put writes e, with its content read from abs up to the size it had
// when listed: a file that shrank, or vanished, since is padded with
// zeros.
func (t *tree) put(tw *tar.Writer, p *pass, abs string, e *treeEntry) error {
	if err := tw.WriteHeader(e.header()); err != nil {
		return fmt.Errorf("tar header of %s: %w", abs, err)
	}
	if e.size == 0 {
		return nil
	}
	if p.bytes+e.size > t.opt.MaxBytes {
		return fmt.Errorf("%s: the files a capture reads pass %d bytes at /%s: capture dir:PATH of the part you need (docs/faults.md)", t.root, t.opt.MaxBytes, e.name)
	}
	p.open = append(p.open, e.name)
	p.bytes += e.size
	var n int64
	if f, err := os.Open(abs); err == nil {
		n, err = io.CopyN(tw, f, e.size)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s: %w", abs, err)
		}
	}
	_, err := io.CopyN(tw, zeros{}, e.size-n)
	return err
}

// otherFS is the default TreeOptions.otherFS for root: a directory on
// another device than root's, or a mount point (/proc/self/mountinfo: a
// bind mount of the same device too), is another file system, as find
// -xdev leaves it.
func otherFS(root string) func(string, fs.FileInfo) bool {
	var dev uint64
	if st, err := os.Stat(root); err == nil {
		if s, ok := st.Sys().(*syscall.Stat_t); ok {
			dev = uint64(s.Dev) //nolint:unconvert // Dev's type differs by platform
		}
	}
	mounts := mountPoints()
	return func(abs string, info fs.FileInfo) bool {
		if a, err := filepath.Abs(abs); err == nil && mounts[a] {
			return true
		}
		s, ok := info.Sys().(*syscall.Stat_t)
		return ok && dev != 0 && uint64(s.Dev) != dev //nolint:unconvert // Dev's type differs by platform
	}
}

// mountPoints are this process's mount points, from /proc/self/mountinfo
// (none where it cannot be read).
func mountPoints() map[string]bool {
	out := map[string]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			out[unescapeMount(fields[4])] = true
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

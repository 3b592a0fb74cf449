package validate

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gpuimg/gpuimg/matrix"
)

// The libs/closure check: every ELF executable and shared object in the
// Python environments (site-packages, dist-packages) and in CUDA's
// library directories must find each of its DT_NEEDED libraries in the
// image, searched as ld.so searches (see closure.dirs), except the
// driver libraries the host injects (matrix.IsHostDriverLib). It reads, as the
// walk streams past, only each candidate's ELF header, program headers,
// dynamic segment and the strings it names (dynReader), the symlinks,
// and /etc/ld.so.conf with /etc/ld.so.conf.d.

const (
	defaultMaxELFObjects = 200_000
	defaultMaxELFBytes   = 8 << 30
	maxELFScan           = 64 << 20 // bytes of a file scanned for its strings
	maxLdConf            = 64 << 10
)

var (
	reClosureSite = regexp.MustCompile(`(?:^|/)(?:site|dist)-packages/`)
	reClosureCUDA = regexp.MustCompile(`^usr/local/cuda[^/]*/(?:[^/]+/)*(?:lib|lib64|compat)/[^/]+$`)
	reLdConf      = regexp.MustCompile(`^etc/ld\.so\.conf(?:\.d/[^/]+)?$`)
)

// elfDeps collects what the check needs during the walk; observe is safe
// for concurrent use.
type elfDeps struct {
	maxObjects int
	maxBytes   int64
	bufs       sync.Pool

	mu      sync.Mutex
	parsed  int
	skipped int
	objs    []elfObj
	links   []elfLink
	confs   []elfLink // path and content
}

type elfObj struct {
	layer int
	path  string
	dyn   *elfDyn
	err   string
	// fabricOnly: read for the fabric checks (inFabricScope), outside
	// the libs/closure check's scope.
	fabricOnly bool
}

type elfLink struct {
	layer        int
	path, target string
}

func newELFDeps(lim Limits) *elfDeps {
	x := &elfDeps{maxObjects: lim.MaxELFObjects, maxBytes: lim.MaxELFBytes}
	if x.maxObjects <= 0 {
		x.maxObjects = defaultMaxELFObjects
	}
	if x.maxBytes <= 0 {
		x.maxBytes = defaultMaxELFBytes
	}
	x.bufs.New = func() any { b := make([]byte, 32<<10); return &b }
	return x
}

// inClosureScope says whether the file at p is checked: it is in a
// Python environment, or in a lib, lib64 or compat directory under
// /usr/local/cuda* (not the link stubs, not Nsight's own tree).
func inClosureScope(p string) bool {
	if reClosureSite.MatchString(p) {
		return true
	}
	return reClosureCUDA.MatchString(p) && !strings.Contains(p, "/stubs/") && !strings.Contains(p, "/nsight")
}

func noop() {}

// observe is the walk's hook. It records symlinks and ld.so.conf files;
// for a candidate ELF file it returns a reader that feeds the bytes the
// other parsers read to a dynReader, and done, which reads on only as
// far as the dynReader needs and records what it found.
func (x *elfDeps) observe(e Entry, r io.Reader) (_ io.Reader, done func()) {
	h := e.Header
	switch {
	case h.Typeflag == tar.TypeSymlink:
		x.mu.Lock()
		x.links = append(x.links, elfLink{layer: e.Layer, path: e.Path, target: h.Linkname})
		x.mu.Unlock()
		return r, noop
	case h.Typeflag != tar.TypeReg:
		return r, noop
	case reLdConf.MatchString(e.Path):
		b := readSmall(r, maxLdConf)
		x.mu.Lock()
		x.confs = append(x.confs, elfLink{layer: e.Layer, path: e.Path, target: string(b)})
		x.mu.Unlock()
		return io.MultiReader(bytes.NewReader(b), r), noop
	}
	inScope, fabric := inClosureScope(e.Path), inFabricScope(e.Path)
	if h.Size < 64 || !inScope && !fabric || !strings.Contains(path.Base(e.Path), ".so") && h.Mode&0o111 == 0 {
		return r, noop
	}
	x.mu.Lock()
	if x.parsed >= x.maxObjects {
		x.skipped++
		x.mu.Unlock()
		return r, noop
	}
	x.parsed++
	x.mu.Unlock()
	dr := newDynReader(x.maxBytes, maxELFScan)
	tee := io.TeeReader(r, dr)
	return tee, func() {
		if !dr.done() {
			buf := x.bufs.Get().(*[]byte)
			for !dr.done() {
				if _, err := tee.Read(*buf); err != nil {
					break
				}
			}
			x.bufs.Put(buf)
		}
		dyn, err := dr.result()
		if dyn == nil && err == nil {
			return // not an ELF executable or shared object
		}
		o := elfObj{layer: e.Layer, path: e.Path, dyn: dyn, fabricOnly: !inScope}
		if err != nil {
			o.err = err.Error()
		}
		x.mu.Lock()
		x.objs = append(x.objs, o)
		x.mu.Unlock()
	}
}

// check is the libs/closure finding over the final filesystem (none when
// the image has no ELF object in scope).
func (x *elfDeps) check(w *WalkResult, env map[string]string) []Check {
	c := newClosure(x, w, env)
	var objs []*elfObj
	var unreadable []string
	for i := range x.objs {
		o := &x.objs[i]
		if o.fabricOnly || !w.Visible(o.layer, o.path) {
			continue
		}
		if o.err != "" {
			unreadable = append(unreadable, fmt.Sprintf("/%s: %s", o.path, o.err))
			continue
		}
		// A driver library's own needs are the host driver's
		// (matrix.IsHostDriverFile: CUDA's compat directory holds some).
		if !o.dyn.static && !matrix.IsHostDriverFile(path.Base(o.path)) {
			objs = append(objs, o)
		}
	}
	if len(objs) == 0 && len(unreadable) == 0 {
		return nil
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].path < objs[j].path })
	sort.Strings(unreadable)
	res := c.resolve(objs)

	var notes []string
	st := matrix.Pass
	if len(unreadable) > 0 {
		st = matrix.Warn
		notes = append(notes, fmt.Sprintf("%d could not be read, so their libraries are unknown: %s", len(unreadable), firstFew(unreadable, 3, "; ")))
	}
	if x.skipped > 0 {
		st = matrix.Warn
		notes = append(notes, fmt.Sprintf("%d more were not read (over Limits.MaxELFObjects, %d)", x.skipped, x.maxObjects))
	}
	var missing []missingLibs
	for _, m := range res.missing {
		if p, ok := matrix.OptionalPluginOf(m.path, m.names); ok {
			notes = append(notes, fmt.Sprintf("not counted: /%s needs %s (%s)", m.path, strings.Join(m.names, ", "), p.What))
		} else {
			missing = append(missing, m)
		}
	}
	note := ""
	if len(notes) > 0 {
		note = "; " + strings.Join(notes, "; ")
	}
	if len(missing) > 0 {
		var msgs []string
		for _, m := range missing {
			msgs = append(msgs, fmt.Sprintf("/%s needs %s", m.path, firstFew(m.names, 3, ", ")))
		}
		return []Check{{Name: "libs/closure", Status: matrix.Fail, Message: fmt.Sprintf(
			"%d of %d ELF objects need libraries the image does not provide: %s; install what provides them, or make the object's RPATH or RUNPATH, LD_LIBRARY_PATH or /etc/ld.so.conf.d reach their directory%s",
			len(missing), len(objs), firstFew(msgs, 5, "; "), note)}}
	}
	return []Check{{Name: "libs/closure", Status: st, Message: fmt.Sprintf(
		"%d ELF objects in the Python environment and CUDA's library directories find all %d of their needed libraries in the image (%d driver libraries left to the host)%s",
		len(objs), res.found, res.driver, note)}}
}

// firstFew joins the first n of list and says how many more there are.
func firstFew(list []string, n int, sep string) string {
	if len(list) <= n {
		return strings.Join(list, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(list[:n], sep), sep, len(list)-n)
}

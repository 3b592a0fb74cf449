package validate

import (
	"debug/elf"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// closure resolves DT_NEEDED names in the image's final filesystem.
type closure struct {
	w      *WalkResult
	links  map[string]string // visible symlinks: path → target
	ldPath []string          // LD_LIBRARY_PATH of the image config
	conf   []string          // directories of /etc/ld.so.conf{,.d}
}

type closureResult struct {
	found, driver int
	missing       []missingLibs
}

type missingLibs struct {
	path  string
	names []string
}

func newClosure(x *elfDeps, w *WalkResult, env map[string]string) *closure {
	c := &closure{w: w, links: map[string]string{}}
	for _, l := range x.links {
		if w.Visible(l.layer, l.path) {
			c.links[l.path] = l.target
		}
	}
	confs := map[string]string{}
	for _, f := range x.confs {
		if w.Visible(f.layer, f.path) {
			confs[f.path] = f.target
		}
	}
	c.conf = ldConfDirs(confs)
	for _, d := range strings.FieldsFunc(env["LD_LIBRARY_PATH"], func(r rune) bool { return r == ':' || r == ';' }) {
		// Relative entries are relative to the working directory of the
		// process, and $ORIGIN here is the main program's: neither is
		// known statically, so they are left out.
		if strings.HasPrefix(d, "/") && !strings.Contains(d, "$") {
			c.ldPath = append(c.ldPath, cleanRel(d))
		}
	}
	return c
}

// cleanRel turns an absolute path into the walk's form (no leading /).
func cleanRel(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

// realPath follows the symlinks of p, each component in turn as the
// kernel does, inside the image (".." stops at its root); ok is false
// after 40 links (ELOOP).
func (c *closure) realPath(p string) (string, bool) {
	parts := strings.Split(p, "/")
	done := ""
	for hops, i := 0, 0; i < len(parts); i++ {
		if parts[i] == "" {
			continue
		}
		cur := path.Join(done, parts[i])
		t, ok := c.links[cur]
		if !ok {
			done = cur
			continue
		}
		if hops++; hops > 40 {
			return "", false
		}
		if !strings.HasPrefix(t, "/") {
			t = path.Join("/"+done, t)
		}
		parts = append(strings.Split(cleanRel(t), "/"), parts[i+1:]...)
		done, i = "", -1
	}
	return done, true
}

// exists says whether p names a file of the final filesystem, through
// symlinks, and gives its real path.
func (c *closure) exists(p string) (string, bool) {
	r, ok := c.realPath(p)
	if !ok || r == "" {
		return "", false
	}
	_, ok = c.w.visible[r]
	return r, ok
}

// dirs is where ld.so looks for the libraries obj needs, in its order
// (glibc's elf/dl-load.c, _dl_map_object): DT_RPATH of obj and of the
// objects that load it, unless obj has DT_RUNPATH; LD_LIBRARY_PATH;
// DT_RUNPATH of obj; the ld.so cache; the default directories.
//
// Approximated: the loaders are every checked object that resolved a
// library to obj, not one chain, and the main program's RPATH (the
// Python interpreter's) is not used; the ld.so cache is taken to hold
// every library in the directories /etc/ld.so.conf names (gpuimg reads
// the configuration, not /etc/ld.so.cache, so a library added after the
// last ldconfig counts as found); the default directories are the union
// of Debian's and Red Hat's (/lib/<triplet>, /usr/lib/<triplet>, /lib64,
// /usr/lib64, /lib, /usr/lib); glibc-hwcaps subdirectories and the ELF
// class of the file found are not checked; $LIB expands to each of lib64
// and lib/<triplet>.
func (c *closure) dirs(obj *elfObj, loaders []*elfObj) []string {
	var ds []string
	if !obj.dyn.hasRunpath {
		ds = append(ds, expandSearch(obj.dyn.rpath, obj)...)
		for _, l := range loaders {
			if !l.dyn.hasRunpath {
				ds = append(ds, expandSearch(l.dyn.rpath, l)...)
			}
		}
	}
	ds = append(ds, c.ldPath...)
	ds = append(ds, expandSearch(obj.dyn.runpath, obj)...)
	ds = append(ds, c.conf...)
	return append(ds, defaultLibDirs(obj.dyn.machine)...)
}

func triplet(m elf.Machine) string {
	switch m {
	case elf.EM_AARCH64:
		return "aarch64-linux-gnu"
	case elf.EM_PPC64:
		return "powerpc64le-linux-gnu"
	}
	return "x86_64-linux-gnu"
}

func platform(m elf.Machine) string {
	switch m {
	case elf.EM_AARCH64:
		return "aarch64"
	case elf.EM_PPC64:
		return "ppc64le"
	}
	return "x86_64"
}

func defaultLibDirs(m elf.Machine) []string {
	t := triplet(m)
	return []string{"lib/" + t, "usr/lib/" + t, "lib64", "usr/lib64", "lib", "usr/lib"}
}

// expandSearch expands an RPATH or RUNPATH list for obj: $ORIGIN is the
// directory of obj's own file in the image, $LIB and $PLATFORM take
// their values for its machine. Empty and relative entries name the
// process's working directory, which is unknown here: they are left out.
func expandSearch(list []string, obj *elfObj) []string {
	origin := "/" + path.Dir(obj.path)
	var out []string
	for _, d := range list {
		if d == "" {
			continue
		}
		d = strings.NewReplacer("${ORIGIN}", origin, "$ORIGIN", origin, "${PLATFORM}", platform(obj.dyn.machine), "$PLATFORM", platform(obj.dyn.machine)).Replace(d)
		variants := []string{d}
		if strings.Contains(d, "$LIB") || strings.Contains(d, "${LIB}") {
			variants = nil
			for _, lib := range []string{"lib64", "lib/" + triplet(obj.dyn.machine)} {
				variants = append(variants, strings.NewReplacer("${LIB}", lib, "$LIB", lib).Replace(d))
			}
		}
		for _, v := range variants {
			if strings.HasPrefix(v, "/") && !strings.Contains(v, "$") {
				out = append(out, cleanRel(v))
			}
		}
	}
	return out
}

// find looks for name in dirs and gives the real path found.
func (c *closure) find(name string, dirs []string) (string, bool) {
	if strings.Contains(name, "/") {
		if !strings.HasPrefix(name, "/") {
			return "", true // relative to the working directory: not checkable
		}
		return c.exists(cleanRel(name))
	}
	for _, d := range dirs {
		if r, ok := c.exists(path.Join(d, name)); ok {
			return r, true
		}
	}
	return "", false
}

// resolve resolves the needed libraries of objs (sorted by path): first
// with each object's own search path; then, for what is missing, as
// ld.so would when the checked objects that load it (transitively) are
// loaded first: a name one of them found is already loaded, and ld.so
// matches a needed name against the sonames loaded before searching
// (it maps the needed libraries breadth-first, so an ancestor's are all
// mapped before a descendant's); and their RPATHs apply unless the
// object has a RUNPATH.
func (c *closure) resolve(objs []*elfObj) closureResult {
	var res closureResult
	byPath := map[string]*elfObj{}
	for _, o := range objs {
		byPath[o.path] = o
	}
	loadedBy := map[*elfObj][]*elfObj{}
	miss := map[*elfObj][]string{}
	found := map[*elfObj]map[string]bool{}
	for _, o := range objs {
		dirs := c.dirs(o, nil)
		found[o] = map[string]bool{}
		for _, n := range o.dyn.needed {
			if matrix.IsHostDriverLib(n) {
				res.driver++
				continue
			}
			r, ok := c.find(n, dirs)
			if !ok {
				miss[o] = append(miss[o], n)
				continue
			}
			res.found++
			found[o][n] = true
			if dep := byPath[r]; dep != nil && dep != o {
				loadedBy[dep] = append(loadedBy[dep], o)
			}
		}
	}
	for _, o := range objs {
		names := miss[o]
		if len(names) == 0 {
			continue
		}
		anc := ancestors(o, loadedBy)
		dirs := c.dirs(o, anc)
		var still []string
		for _, n := range names {
			loaded := slices.ContainsFunc(anc, func(a *elfObj) bool { return found[a][n] })
			if _, ok := c.find(n, dirs); loaded || ok && !o.dyn.hasRunpath {
				res.found++
			} else {
				still = append(still, n)
			}
		}
		if len(still) > 0 {
			res.missing = append(res.missing, missingLibs{path: o.path, names: still})
		}
	}
	return res
}

// ancestors are the objects that load o, and theirs, nearest first.
func ancestors(o *elfObj, loadedBy map[*elfObj][]*elfObj) []*elfObj {
	seen := map[*elfObj]bool{o: true}
	var out []*elfObj
	queue := []*elfObj{o}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, l := range loadedBy[cur] {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
				queue = append(queue, l)
			}
		}
	}
	return out
}

// ldConfDirs reads the directories ldconfig would cache from the image's
// /etc/ld.so.conf (following its include lines into /etc/ld.so.conf.d),
// or, without it, from every /etc/ld.so.conf.d/*.conf. Lines are
// directories (an "=TYPE" suffix is dropped), "include GLOB" and
// "hwcap" lines; # starts a comment. Includes outside /etc/ld.so.conf.d
// and configuration files that are symlinks are not followed.
func ldConfDirs(files map[string]string) []string {
	var dirs []string
	seen := map[string]bool{}
	var read func(p string, depth int)
	read = func(p string, depth int) {
		if seen[p] || depth > 8 {
			return
		}
		seen[p] = true
		for line := range strings.SplitSeq(files[p], "\n") {
			line, _, _ = strings.Cut(line, "#")
			f := strings.Fields(line)
			switch {
			case len(f) == 0 || f[0] == "hwcap":
			case f[0] == "include":
				for _, pat := range f[1:] {
					if !strings.HasPrefix(pat, "/") {
						pat = "/" + path.Join(path.Dir(p), pat)
					}
					for _, m := range matchConf(files, pat) {
						read(m, depth+1)
					}
				}
			default:
				for _, d := range strings.FieldsFunc(line, func(r rune) bool { return r == ':' || r == ',' || r == ' ' || r == '\t' }) {
					d, _, _ = strings.Cut(d, "=")
					if strings.HasPrefix(d, "/") {
						dirs = append(dirs, cleanRel(d))
					}
				}
			}
		}
	}
	if _, ok := files["etc/ld.so.conf"]; ok {
		read("etc/ld.so.conf", 0)
	} else {
		for _, m := range matchConf(files, "/etc/ld.so.conf.d/*.conf") {
			read(m, 0)
		}
	}
	return dirs
}

func matchConf(files map[string]string, pattern string) []string {
	var out []string
	for p := range files {
		if ok, _ := path.Match(pattern, "/"+p); ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

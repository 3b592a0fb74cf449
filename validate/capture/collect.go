package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/gpuimg/gpuimg/validate"
)

// What the capture reads beside validate's inventory, from the files that
// record how things were installed.
var (
	reDistInfo  = regexp.MustCompile(`^(.*/(?:site|dist)-packages)/([^/]+)\.dist-info/(METADATA|INSTALLER|direct_url\.json)$`)
	reCondaMeta = regexp.MustCompile(`^(.*)/conda-meta/[^/]+\.json$`)
	reRunfile   = regexp.MustCompile(`^usr/local/(cuda-[0-9]+\.[0-9]+)/`)
	reDpkgList  = regexp.MustCompile(`^var/lib/dpkg/info/[^/]+\.list$`)
	reVenvCfg   = regexp.MustCompile(`^(.*)/pyvenv\.cfg$`)
)

// maxMeta bounds a metadata file the capture reads whole.
const maxMeta = 4 << 20

// unownedRoots are where files that no package owns are reported.
var unownedRoots = []string{"opt/", "usr/local/", "srv/"}

// distMeta is what pip wrote in one dist-info directory.
type distMeta struct {
	name, version string
	requires      []string // Requires-Dist, as written
	installer     string
	directURL     *directURL
	layer         int // of METADATA
}

// directURL is PEP 610's direct_url.json.
type directURL struct {
	URL     string `json:"url"`
	VCSInfo *struct {
		VCS      string `json:"vcs"`
		CommitID string `json:"commit_id"`
	} `json:"vcs_info,omitempty"`
	DirInfo *struct {
		Editable bool `json:"editable"`
	} `json:"dir_info,omitempty"`
}

// condaPkg is one conda-meta record.
type condaPkg struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Channel string `json:"channel"`
	env     string
	ref     entryRef
}

// collector gathers, in one walk, the install records validate's
// inventory does not read. Safe for concurrent use (Walk's layers).
type collector struct {
	mu        sync.Mutex
	status    layered
	extended  layered
	environ   layered
	dists     map[string]*distMeta // dist-info dir → meta
	conda     []condaPkg
	owned     map[string]bool // dpkg-owned paths under unownedRoots
	dirs      map[string]bool // directories under unownedRoots
	files     []entryRef      // regular files and links under unownedRoots
	runfile   map[string]bool // usr/local/cuda-X.Y
	envRoots  []string        // venvs (pyvenv.cfg) and conda envs
	allFiles  []entryRef      // every regular file, for --files
	rpm       rpmFile         // the newest layer's rpm database, spooled
	wantFiles bool
}

// layered is a file's content from the newest layer that has it.
type layered struct {
	b     []byte
	layer int
	set   bool
}

func (l *layered) offer(b []byte, layer int) {
	if !l.set || layer > l.layer {
		*l = layered{b: b, layer: layer, set: true}
	}
}

// entryRef is a path and the layer it came from; link is a symlink's
// target, resolved against its directory.
type entryRef struct {
	path  string
	layer int
	link  string
}

func newCollector(wantFiles bool) *collector {
	return &collector{dists: map[string]*distMeta{}, owned: map[string]bool{}, dirs: map[string]bool{}, runfile: map[string]bool{}, wantFiles: wantFiles}
}

// visit is a validate.Visitor.
func (c *collector) visit(e validate.Entry, r io.Reader) error {
	p := e.Path
	regular := e.Header.Typeflag == 0 || e.Header.Typeflag == '0'
	link := e.Header.Typeflag == '2'
	if m := reRunfile.FindStringSubmatch(p); m != nil {
		c.locked(func() { c.runfile[m[1]] = true })
	}
	for _, root := range unownedRoots {
		if strings.HasPrefix(p, root) && e.Header.Typeflag == '5' {
			c.locked(func() { c.dirs[p] = true })
		}
		if strings.HasPrefix(p, root) && (regular || link) {
			ref := entryRef{path: p, layer: e.Layer}
			if link {
				ref.link = resolveLink(p, e.Header.Linkname)
			}
			c.locked(func() { c.files = append(c.files, ref) })
		}
	}
	if c.wantFiles && regular {
		c.locked(func() { c.allFiles = append(c.allFiles, entryRef{path: p, layer: e.Layer}) })
	}
	if !regular {
		return nil
	}
	switch {
	case p == "var/lib/dpkg/status":
		b := readMeta(r)
		c.locked(func() { c.status.offer(b, e.Layer) })
	case p == "var/lib/apt/extended_states":
		b := readMeta(r)
		c.locked(func() { c.extended.offer(b, e.Layer) })
	case p == "etc/environment":
		b := readMeta(r)
		c.locked(func() { c.environ.offer(b, e.Layer) })
	case reRPMDB.MatchString(p):
		return c.spoolRPMDB(path.Base(p), r, e.Layer)
	case reDpkgList.MatchString(p):
		c.ownedPaths(readMeta(r))
	case reVenvCfg.MatchString(p):
		c.locked(func() { c.envRoots = append(c.envRoots, path.Dir(p)+"/") })
	case reCondaMeta.MatchString(p):
		c.condaRecord(entryRef{path: p, layer: e.Layer}, readMeta(r))
	default:
		if m := reDistInfo.FindStringSubmatch(p); m != nil {
			c.distFile(m[1]+"/"+m[2]+".dist-info", m[3], e.Layer, readMeta(r))
		}
	}
	return nil
}

// resolveLink is a symlink's target as a root-relative path.
func resolveLink(p, target string) string {
	if path.IsAbs(target) {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	return strings.TrimPrefix(path.Join(path.Dir(p), target), "/")
}

func (c *collector) locked(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

func readMeta(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, maxMeta))
	return b
}

// ownedPaths records the paths a dpkg .list file names under the roots
// the capture reports unowned files in.
func (c *collector) ownedPaths(b []byte) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var keep []string
	for sc.Scan() {
		p := strings.TrimPrefix(sc.Text(), "/")
		for _, root := range unownedRoots {
			if strings.HasPrefix(p, root) {
				keep = append(keep, p)
			}
		}
	}
	c.locked(func() {
		for _, p := range keep {
			c.owned[p] = true
		}
	})
}

func (c *collector) condaRecord(ref entryRef, b []byte) {
	p := ref.path
	var pkg condaPkg
	pkg.ref = ref
	if json.Unmarshal(b, &pkg) != nil || pkg.Name == "" {
		return
	}
	pkg.env = strings.TrimSuffix(p[:strings.LastIndex(p, "/conda-meta/")], "/")
	c.locked(func() {
		c.conda = append(c.conda, pkg)
		c.envRoots = append(c.envRoots, pkg.env+"/")
	})
}

func (c *collector) distFile(dir, file string, layer int, b []byte) {
	c.locked(func() {
		d := c.dists[dir]
		if d == nil {
			d = &distMeta{}
			c.dists[dir] = d
		}
		switch file {
		case "METADATA":
			if d.name != "" && layer < d.layer {
				return
			}
			d.name, d.version, d.requires = parseMetadata(b)
			d.layer = layer
		case "INSTALLER":
			d.installer = strings.TrimSpace(string(b))
		case "direct_url.json":
			var u directURL
			if json.Unmarshal(b, &u) == nil {
				d.directURL = &u
			}
		}
	})
}

// parseMetadata reads Name, Version and Requires-Dist from core metadata
// (the header part, up to the first empty line).
func parseMetadata(b []byte) (name, version string, requires []string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxMeta)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(k) {
		case "name":
			name = v
		case "version":
			version = v
		case "requires-dist":
			requires = append(requires, v)
		}
	}
	return name, version, requires
}

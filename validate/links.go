package validate

import (
	"path"
	"strconv"
	"strings"
)

// Links laid down by a layer can carry a later entry out of the root: a
// hard link to "../../../etc/shadow", a symlink "lnk -> /etc" and then a
// file written as "lnk/passwd" (in the same layer or a later one). moby's
// pkg/archive refuses a hard link or symlink whose target, joined to the
// extraction directory (the symlink's own directory for a relative
// symlink), leaves it ("invalid hardlink %q -> %q", breakoutError), and
// unpacks in a chroot so nothing is written through a symlink to the
// host; containerd's archive/tar.go resolves every name with
// fs.RootPath (symlinks followed but kept inside the root) and its
// hardlinkRootPath keeps a hard link's target inside it too. A plain
// extractor (tar -x, a provider's own importer) has neither guard. So
// linkTable judges each entry as that plain extractor would see it: a
// name or hard-link target whose parents, resolved through the symlinks
// laid down so far, leave the root (".." above it, a symlink to an
// absolute path, more than maxLinkHops links) is unsafe, and so is a
// symlink whose relative target leaves the root from its directory.
// Layers that docker or BuildKit write never go through a symlink: a diff
// records the real path.

// maxLinkHops is how many symlinks one name may pass through, as Linux's
// MAXSYMLINKS (40): a longer chain is refused as ELOOP would.
const maxLinkHops = 40

// linkAt is a symlink and when it was laid down.
type linkAt struct {
	target string
	seq    int
}

// linkTable holds the symlinks of the layers read so far, in order. seq
// counts entries over all layers; removed and cleared record, for a path,
// the seq from which its subtree (removed: whiteouts and replacing
// entries) or its children (cleared: opaque directories) are gone, so a
// whiteout costs one map write, not a scan of every symlink below it.
type linkTable struct {
	links   map[string]linkAt
	removed map[string]int
	cleared map[string]int
	seq     int
	// layerStart is the seq of the first entry of the current layer: a
	// whiteout hides only what lower layers hold (OCI image-spec, layer.md).
	layerStart int
}

func newLinkTable() *linkTable {
	return &linkTable{links: map[string]linkAt{}, removed: map[string]int{}, cleared: map[string]int{}}
}

// startLayer marks where a new layer's entries begin.
func (t *linkTable) startLayer() { t.layerStart = t.seq + 1 }

// add records one entry of the current layer, in order, and says why it
// would escape the root when extracted ("" when it would not).
func (t *linkTable) add(r rec) string {
	t.seq++
	switch r.kind {
	case recWhiteout:
		t.removed[r.path] = max(t.removed[r.path], t.layerStart)
		return ""
	case recOpaque:
		t.cleared[r.path] = max(t.cleared[r.path], t.layerStart)
		return ""
	}
	why := t.through(r.path)
	switch r.kind {
	case recDir:
		delete(t.links, r.path) // a directory replaces a symlink, and merges with a directory
	case recSymlink:
		t.removed[r.path] = t.seq
		t.links[r.path] = linkAt{target: r.link, seq: t.seq}
		if why == "" {
			why = symlinkEscapes(r.path, r.link)
		}
	default:
		t.removed[r.path] = t.seq
		delete(t.links, r.path)
		if why == "" && r.kind == recHardlink {
			why = t.hardlinkEscapes(r.link)
		}
	}
	return why
}

// through says whether writing p goes through a symlink out of the root.
// Most names pass through none: their prefixes are looked up without
// allocating, and only a name that meets a symlink is resolved in full.
func (t *linkTable) through(p string) string {
	if len(t.links) == 0 {
		return ""
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && t.live(p[:i]) {
			if why := t.resolve(p, false); why != "" {
				return "its name " + why
			}
			return ""
		}
	}
	return ""
}

// live says whether a symlink laid down at p is still there.
func (t *linkTable) live(p string) bool {
	l, ok := t.links[p]
	if !ok {
		return false
	}
	if t.removed[p] > l.seq {
		return false
	}
	for dir := p; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			return t.cleared[""] <= l.seq
		}
		dir = dir[:i]
		if t.removed[dir] > l.seq || t.cleared[dir] > l.seq {
			return false
		}
	}
}

// hardlinkEscapes judges a hard link's target, which names a path from
// the root ("/etc/x" and "etc/x" are the same file, as GNU tar and moby
// read it); its last component is not followed (a hard link to a symlink
// links the symlink).
func (t *linkTable) hardlinkEscapes(target string) string {
	if target == "" {
		return "a hard link with no target"
	}
	if why := t.resolve(strings.TrimLeft(target, "/"), false); why != "" {
		return "a hard link to " + quoteShort(target) + " whose target " + why
	}
	return ""
}

// symlinkEscapes judges a symlink's own target as moby does: a relative
// target joined to the symlink's directory must stay in the root. An
// absolute target is resolved in the container's root at run time, and
// only matters when something is written through it (through).
func symlinkEscapes(p, target string) string {
	if target == "" {
		return "a symlink with no target"
	}
	if strings.HasPrefix(target, "/") {
		return ""
	}
	if escapesLexically(path.Dir(p), target) {
		return "a symlink to " + quoteShort(target) + ", which leaves the root from " + quoteShort("/"+path.Dir(p))
	}
	return ""
}

// escapesLexically says whether joining rel to dir (both relative to the
// root) climbs above the root at any point.
func escapesLexically(dir, rel string) bool {
	depth := 0
	if dir != "." && dir != "" {
		depth = strings.Count(dir, "/") + 1
	}
	for c := range strings.SplitSeq(rel, "/") {
		switch c {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// resolve walks p from the root, component by component, as open(2) in an
// extraction directory would, following the symlinks laid down so far
// (the last component too when followLast). It says why p leaves the
// root, or "" when it stays inside.
func (t *linkTable) resolve(p string, followLast bool) string {
	var stack []string // the resolved directories
	rest := strings.Split(p, "/")
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return "climbs above the root"
			}
			stack = stack[:len(stack)-1]
			continue
		}
		cur := strings.Join(append(stack, c), "/")
		if (len(rest) == 0 && !followLast) || !t.live(cur) {
			stack = append(stack, c)
			continue
		}
		target := t.links[cur].target
		if hops++; hops > maxLinkHops {
			return "passes through more than " + strconv.Itoa(maxLinkHops) + " symlinks"
		}
		if strings.HasPrefix(target, "/") {
			return "passes through the symlink /" + quoteShort(cur) + " -> " + quoteShort(target) + ", which leads outside the root when extracted"
		}
		rest = append(strings.Split(target, "/"), rest...)
		if len(rest) > 4096 {
			return "passes through symlinks that expand without end"
		}
	}
	return ""
}

// quoteShort shows at most 120 bytes of a name taken from a layer.
func quoteShort(s string) string {
	return truncate(s, 120)
}

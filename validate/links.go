package validate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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

// maxLinkExpansion bounds the bytes of symlink targets one name may be
// expanded by: maxLinkHops targets of PATH_MAX (4096) bytes, the longest
// symlink(2) makes.
const maxLinkExpansion = maxLinkHops * 4096

// linkMarks are what linkTable keeps on a name. seq is when the symlink
// laid there (to target) was laid, 0 when there is none; removed and
// cleared are the seq from which the name's subtree (removed: whiteouts
// and replacing entries) or its children (cleared: opaque directories)
// are gone, so a whiteout costs one mark, not a scan of every symlink
// below it.
type linkMarks struct {
	target                string
	seq, removed, cleared int
}

// linkNode is one name of the tree linkTable keeps (nametree.go): only
// symlinks and their parents have nodes, so a name with no node has no
// symlink at or below it.
type linkNode = nameNode[linkMarks]

// linkTable holds the symlinks of the layers read so far, in order, in a
// tree of name components: resolving a name walks its components once,
// so the work is linear in its bytes. seq counts entries over all layers.
type linkTable struct {
	root  *linkNode
	links int // symlinks laid so far
	// stack is resolve's, kept so that a deep name does not grow a new
	// one each time.
	stack []linkFrame
	seq   int
	// layerStart is the seq of the first entry of the current layer: a
	// whiteout hides only what lower layers hold (OCI image-spec, layer.md).
	layerStart int
}

func newLinkTable() *linkTable { return &linkTable{root: &linkNode{}} }

// startLayer marks where a new layer's entries begin.
func (t *linkTable) startLayer() { t.layerStart = t.seq + 1 }

// add records one entry of the current layer, in order, and says why it
// would escape the root when extracted ("" when it would not). Marks go
// only on names that have a node: a name without one has no symlink at
// or below it, and a symlink laid later is newer than the mark.
func (t *linkTable) add(r rec) string {
	t.seq++
	switch r.kind {
	case recWhiteout:
		if n := t.root.find(r.path); n != nil {
			n.v.removed = max(n.v.removed, t.layerStart)
		}
		return ""
	case recOpaque:
		if n := t.root.find(r.path); n != nil {
			n.v.cleared = max(n.v.cleared, t.layerStart)
		}
		return ""
	}
	why := t.through(r.path)
	switch r.kind {
	case recDir:
		if n := t.root.find(r.path); n != nil {
			n.v.seq, n.v.target = 0, "" // a directory replaces a symlink, and merges with a directory
		}
	case recSymlink:
		n := t.root.node(r.path)
		n.v = linkMarks{target: r.link, seq: t.seq, removed: t.seq, cleared: n.v.cleared}
		t.links++
		if why == "" {
			why = symlinkEscapes(r.path, r.link)
		}
	default:
		if n := t.root.find(r.path); n != nil {
			n.v.seq, n.v.target, n.v.removed = 0, "", t.seq
		}
		if why == "" && r.kind == recHardlink {
			why = t.hardlinkEscapes(r.link)
		}
	}
	return why
}

// through says whether writing p goes through a symlink out of the root.
func (t *linkTable) through(p string) string {
	if t.links == 0 {
		return ""
	}
	if why := t.resolve(p, false); why != "" {
		return "its name " + why
	}
	return ""
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
// root, or "" when it stays inside. Each component is looked up once in
// the tree; a symlink's target is pushed in front of what is left of the
// name, not joined to it, so the work is linear in p and the targets
// followed (at most maxLinkExpansion bytes).
func (t *linkTable) resolve(p string, followLast bool) string {
	stack := t.stack[:0] // the resolved directories
	stack = append(stack, linkFrame{n: t.root, gone: t.root.v.cleared})
	defer func() { t.stack = stack[:0] }()
	pending := []string{p} // what is left, the next part last
	hops, expanded := 0, 0
	for len(pending) > 0 {
		top := &pending[len(pending)-1]
		c, rest, more := strings.Cut(*top, "/")
		if *top = rest; !more {
			pending = pending[:len(pending)-1]
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 1 {
				return "climbs above the root"
			}
			stack = stack[:len(stack)-1]
			continue
		}
		parent := stack[len(stack)-1]
		n := parent.n.child(c)
		if (len(pending) == 0 && !followLast) || !parent.live(n) {
			stack = append(stack, parent.enter(n, c))
			continue
		}
		if hops++; hops > maxLinkHops {
			return "passes through more than " + strconv.Itoa(maxLinkHops) + " symlinks"
		}
		target := n.v.target
		if strings.HasPrefix(target, "/") {
			return "passes through the symlink /" + quoteShort(framesPath(stack, c)) + " -> " + quoteShort(target) + ", which leads outside the root when extracted"
		}
		if expanded += len(target) + 1; expanded > maxLinkExpansion {
			return "passes through symlinks that expand without end"
		}
		pending = append(pending, target)
	}
	return ""
}

// linkFrame is one directory resolve has walked into: its node (nil when
// the tree has none: nothing below is a symlink), its name, and the
// newest seq that removed it, a parent, or their children (the root's
// own removal does not count: no entry is the root).
type linkFrame struct {
	n    *linkNode
	name string
	gone int
}

// live says whether the symlink at n, a child of f, is still there.
func (f linkFrame) live(n *linkNode) bool {
	return n != nil && n.v.seq > 0 && n.v.removed <= n.v.seq && f.gone <= n.v.seq
}

// enter is the frame of f's child n, named c.
func (f linkFrame) enter(n *linkNode, c string) linkFrame {
	if n == nil {
		return linkFrame{name: c, gone: f.gone}
	}
	return linkFrame{n: n, name: c, gone: max(f.gone, n.v.removed, n.v.cleared)}
}

// framesPath is the name of c in the directory stack leads to, for a
// message: at most a little over what quoteShort shows is joined.
func framesPath(stack []linkFrame, c string) string {
	var b strings.Builder
	for _, f := range stack[1:] {
		if b.Len() > 120 {
			return b.String()
		}
		b.WriteString(f.name)
		b.WriteByte('/')
	}
	b.WriteString(c)
	return b.String()
}

// quoteShort shows at most 120 bytes of a name taken from a layer.
func quoteShort(s string) string {
	return truncate(s, 120)
}

// ErrUnsafePaths is wrapped by RefuseLinkEscapes's refusal.
var ErrUnsafePaths = errors.New("layer entries would escape the root when extracted")

// RefuseLinkEscapes walks img's layers as validate does (the same bounds:
// a bomb or an over-long name is an error) and refuses the image when an
// entry would escape the root when extracted: a name with "..", a link
// target leaving the root, a name written through a symlink laid down
// earlier in any layer (the unsafe-paths check). images.Export, Convert
// and Import run it before writing (images.WithLayerCheck).
func RefuseLinkEscapes(ctx context.Context, img v1.Image) error {
	res, err := Walk(ctx, img, Limits{}, func(Entry, io.Reader) error { return nil })
	if err != nil {
		return err
	}
	if len(res.Unsafe) > 0 {
		return fmt.Errorf("%w: %s; the image is unsafe to unpack (validate names the same entries under unsafe-paths)", ErrUnsafePaths, unsafeList(res.Unsafe))
	}
	return nil
}

package validate

import "strings"

// nameNode is one name of a tree of clean relative names, one component
// per level, with a value v of the pass that keeps it (resolveVisible's
// whiteout marks, linkTable's symlinks). Judging a name walks its
// components once, each hashed once, so the work is linear in the
// names' bytes; a map keyed by every parent hashes each parent whole,
// which is quadratic (15 names of 400,000 directories took 3 s each).
// Most directories have one child in a deep chain, so the first child
// is kept inline and a map is made only for a second.
type nameNode[T any] struct {
	first    string
	firstKid *nameNode[T]
	kids     map[string]*nameNode[T]
	v        T
}

// child returns the child named c, or nil; a nil n has no children.
func (n *nameNode[T]) child(c string) *nameNode[T] {
	switch {
	case n == nil:
		return nil
	case n.firstKid != nil && n.first == c:
		return n.firstKid
	}
	return n.kids[c]
}

// makeChild returns the child named c, making it when there is none.
func (n *nameNode[T]) makeChild(c string) *nameNode[T] {
	if k := n.child(c); k != nil {
		return k
	}
	k := &nameNode[T]{}
	if n.firstKid == nil {
		n.first, n.firstKid = c, k
		return k
	}
	if n.kids == nil {
		n.kids = map[string]*nameNode[T]{}
	}
	n.kids[c] = k
	return k
}

// node returns the node of the clean relative name p ("" is n itself),
// making it and its parents.
func (n *nameNode[T]) node(p string) *nameNode[T] {
	for p != "" {
		var c string
		c, p = nextComponent(p)
		n = n.makeChild(c)
	}
	return n
}

// find returns the node of p, or nil when the tree has none.
func (n *nameNode[T]) find(p string) *nameNode[T] {
	for p != "" && n != nil {
		var c string
		c, p = nextComponent(p)
		n = n.child(c)
	}
	return n
}

// nextComponent splits "a/b/c" into "a" and "b/c".
func nextComponent(p string) (string, string) {
	c, rest, _ := strings.Cut(p, "/")
	return c, rest
}

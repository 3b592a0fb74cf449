package pep508

import (
	"fmt"
	"strings"
)

// maxMarker bounds a marker's length and maxDepth its nesting of
// parentheses.
const (
	maxMarker = 4096
	maxDepth  = 32
)

// Marker is a parsed environment marker. The zero Marker holds everywhere
// (a requirement without a marker).
type Marker struct {
	raw  string
	root node
}

// node is an and/or of nodes, or a comparison.
type node struct {
	op       string // "and", "or", or "" for a comparison
	children []node
	cmp      comparison
}

// comparison is `lhs op rhs`, each side a variable or a quoted string.
type comparison struct {
	lhs, rhs operand
	op       string // ===, ==, ~=, !=, <=, >=, <, >, in, not in
}

type operand struct {
	variable string // normalized name ("" for a string)
	value    string
}

func (o operand) String() string {
	if o.variable != "" {
		return o.variable
	}
	return fmt.Sprintf("%q", o.value)
}

// ParseMarker parses a marker as pypa/packaging's grammar reads it:
// comparisons of a variable or a quoted string with another, joined by
// "and" (binding tighter) and "or", grouped by parentheses. The legacy
// dotted names (os.name, sys.platform, platform.machine …) and
// python_implementation are read as their PEP 508 names. "" is the zero
// Marker.
func ParseMarker(s string) (Marker, error) {
	if len(s) > maxMarker {
		return Marker{}, fmt.Errorf("marker of %d bytes: longer than %d", len(s), maxMarker)
	}
	if strings.TrimLeft(s, " \t") == "" {
		return Marker{}, nil
	}
	p := &parser{src: s}
	root, err := p.or(0)
	if err == nil {
		p.ws()
		if p.pos < len(s) {
			err = p.errorf("expected 'and', 'or' or the end")
		}
	}
	if err != nil {
		return Marker{}, fmt.Errorf("marker %q: %w", s, err)
	}
	return Marker{raw: s, root: root}, nil
}

// IsZero reports whether m is the zero Marker (no marker).
func (m Marker) IsZero() bool { return m.raw == "" }

// String is the marker as written.
func (m Marker) String() string { return m.raw }

// Extras lists the extras the marker compares extra with (`extra ==
// "cuda12"`, `"cuda12" == extra`), as written, in order.
func (m Marker) Extras() []string {
	var out []string
	var walk func(n node)
	walk = func(n node) {
		if n.op != "" {
			for _, c := range n.children {
				walk(c)
			}
			return
		}
		switch c := n.cmp; {
		case c.lhs.variable == "extra" && c.rhs.variable == "":
			out = append(out, c.rhs.value)
		case c.rhs.variable == "extra" && c.lhs.variable == "":
			out = append(out, c.lhs.value)
		}
	}
	if !m.IsZero() {
		walk(m.root)
	}
	return out
}

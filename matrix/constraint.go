package matrix

import (
	"fmt"
	"strings"
)

// A Constraint is a set of versions, written the way people type them on the
// command line and in matrix files:
//
//	12          any 12.x (a bare version is a prefix; 12.x and 12.* mean the same)
//	12.2        any 12.2.x
//	==12.2.2    exactly 12.2.2 (= and == are prefix matches like a bare version)
//	!=2.4       anything but 2.4.x
//	>=2.3       2.3.0 and newer
//	>2.3        newer than every 2.3.x, i.e. 2.4 and up
//	<2.5        older than 2.5.0
//	<=2.4       up to and including every 2.4.x
//	~2.3        >=2.3,<2.4     ~2.3.1  >=2.3.1,<2.4    ~2  >=2,<3
//	~=2.3       >=2.3,<3       (pip's compatible release)
//	^2.3        >=2.3,<3       ^0.4.2  >=0.4.2,<0.5
//	*           anything
//
// Terms are joined by "," or spaces (all must hold) and alternatives by "||"
// (any may hold): ">=11.0,<11.9 || >=12.0,<12.3". Partial versions follow the
// npm semver convention, which is what a person typing "<=12.4" means.
//
// The zero Constraint matches every version.
type Constraint struct {
	raw  string
	alts [][]term
}

type op int

const (
	opPrefix op = iota // bare, =, ==
	opNot              // !=
	opGE               // >=
	opGT               // >
	opLT               // <
	opLE               // <=
	opRange            // ~, ~=, ^ (lo <= v < hi)
	opAny              // *
)

type term struct {
	op op
	v  Version // the version written
	hi Version // exclusive upper bound for opRange
}

// ParseConstraint parses a version constraint. See [Constraint] for the syntax.
func ParseConstraint(s string) (Constraint, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Constraint{}, fmt.Errorf("empty version constraint")
	}
	var alts [][]term
	for alt := range strings.SplitSeq(s, "||") {
		alt = strings.TrimSpace(alt)
		if alt == "" {
			return Constraint{}, fmt.Errorf("constraint %q: empty alternative around ||", orig)
		}
		var terms []term
		for _, tok := range tokenize(alt) {
			t, err := parseTerm(tok)
			if err != nil {
				return Constraint{}, fmt.Errorf("constraint %q: %w", orig, err)
			}
			terms = append(terms, t)
		}
		if len(terms) == 0 {
			return Constraint{}, fmt.Errorf("constraint %q: empty term", orig)
		}
		alts = append(alts, terms)
	}
	return Constraint{raw: s, alts: alts}, nil
}

// MustConstraint is ParseConstraint for literals known to be valid; it panics otherwise.
func MustConstraint(s string) Constraint {
	c, err := ParseConstraint(s)
	if err != nil {
		panic(err)
	}
	return c
}

// tokenize splits one alternative into terms on commas and whitespace, and
// glues an operator written apart from its version (">= 2.3") back on.
func tokenize(s string) []string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	var out []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if isOpOnly(f) && i+1 < len(fields) {
			f += fields[i+1]
			i++
		}
		out = append(out, f)
	}
	return out
}

func isOpOnly(s string) bool {
	switch s {
	case "=", "==", "!=", ">=", "<=", ">", "<", "~", "~=", "^":
		return true
	}
	return false
}

func parseTerm(tok string) (term, error) {
	ops := []struct {
		lit string
		op  op
	}{
		// Longest first, so ">=" is not read as ">".
		{"==", opPrefix}, {"!=", opNot}, {">=", opGE}, {"<=", opLE}, {"~=", opRange},
		{"=", opPrefix}, {">", opGT}, {"<", opLT}, {"~", opRange}, {"^", opRange},
	}
	o, lit, rest := opPrefix, "", tok
	for _, c := range ops {
		if strings.HasPrefix(tok, c.lit) {
			o, lit, rest = c.op, c.lit, tok[len(c.lit):]
			break
		}
	}
	rest = strings.TrimSpace(rest)
	if rest == "*" || rest == "x" || rest == "X" {
		if lit != "" && o != opPrefix {
			return term{}, fmt.Errorf("%q: a wildcard cannot follow %s", tok, lit)
		}
		return term{op: opAny}, nil
	}
	// Trailing wildcards (12.x, 2.3.*) make a prefix explicit.
	wild := false
	for _, suf := range []string{".*", ".x", ".X"} {
		if strings.HasSuffix(rest, suf) {
			rest = strings.TrimSuffix(rest, suf)
			wild = true
			break
		}
	}
	if wild && o != opPrefix && o != opNot {
		return term{}, fmt.Errorf("%q: a wildcard only goes with a bare version, = or !=", tok)
	}
	v, err := ParseVersion(rest)
	if err != nil {
		return term{}, err
	}
	t := term{op: o, v: v}
	if o == opRange {
		n := 0
		switch lit {
		case "~":
			n = min(v.Len(), 2)
		case "~=":
			if v.Len() < 2 {
				return term{}, fmt.Errorf("%q: ~= needs at least two parts (~=2.3)", tok)
			}
			n = v.Len() - 1
		case "^":
			n = v.Len() // all zeros: bump the last written part
			for i := range v.Len() {
				if v.Part(i) != 0 {
					n = i + 1
					break
				}
			}
		}
		t.hi = v.bumpAt(n)
	}
	return t, nil
}

func (t term) match(v Version) bool {
	switch t.op {
	case opAny:
		return true
	case opPrefix:
		return v.HasPrefix(t.v)
	case opNot:
		return !v.HasPrefix(t.v)
	case opGE:
		return v.Compare(t.v) >= 0
	case opGT:
		return v.Compare(t.v.bumpAt(t.v.Len())) >= 0
	case opLT:
		return v.Compare(t.v) < 0
	case opLE:
		return v.Compare(t.v.bumpAt(t.v.Len())) < 0
	case opRange:
		return v.Compare(t.v) >= 0 && v.Compare(t.hi) < 0
	}
	return false
}

// Check reports whether v satisfies the constraint. The zero Constraint
// matches everything.
func (c Constraint) Check(v Version) bool {
	if len(c.alts) == 0 {
		return true
	}
	for _, alt := range c.alts {
		ok := true
		for _, t := range alt {
			if !t.match(v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// IsZero reports whether c is the zero (match-all) constraint.
func (c Constraint) IsZero() bool { return len(c.alts) == 0 }

// String returns the constraint as written, or "*" for the zero Constraint.
func (c Constraint) String() string {
	if c.IsZero() {
		return "*"
	}
	return c.raw
}

// MarshalText implements encoding.TextMarshaler.
func (c Constraint) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Constraint) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*c = Constraint{}
		return nil
	}
	p, err := ParseConstraint(string(b))
	if err != nil {
		return err
	}
	*c = p
	return nil
}

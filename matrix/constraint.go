package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// A Constraint is a set of versions in the constraint syntax of
// github.com/Masterminds/semver/v3 (the one Helm users type), which also
// decides what each term means:
//
//	12          any 12.x (a bare or = version is a prefix; 12.x and 12.* mean the same)
//	12.2        any 12.2.x
//	=12.2.2     exactly 12.2.2
//	!=2.4       anything but 2.4.x
//	>=2.3       2.3.0 and newer (>= 2.x is >= 2.0.0)
//	>2.3        newer than every 2.3.x, i.e. 2.4 and up
//	<2.5        older than 2.5.0
//	<=2.4       up to and including every 2.4.x
//	~2.3        >=2.3,<2.4     ~2.3.1  >=2.3.1,<2.4    ~2  >=2,<3
//	^2.3        >=2.3,<3       ^0.4.2  >=0.4.2,<0.5    ^0.0.3  =0.0.3
//	2.3 - 2.5   >=2.3,<=2.5    (a hyphen range, spaces around the hyphen)
//	*           anything
//
// Terms are joined by "," or spaces (all must hold) and alternatives by "||"
// (any may hold): ">=11.0,<11.9 || >=12.0,<12.3". As in the library,
// pre-releases (2.5.0rc1) only match a group of terms that names one.
//
// What the library cannot read is translated by a small adapter before it
// sees the text, and each piece is there for a reason:
//
//   - pip's spellings, because framework versions are copied from pip:
//     ==2.3 is the same prefix match as =2.3 (as gpuimg always read it),
//     and ~=2.3 is PEP 440's compatible release (>=2.3, ==2.*).
//   - four-part versions (cuDNN and TensorRT builds such as >=8.9.2.26),
//     which the library cannot parse: the library checks the first three
//     parts and the adapter compares the fourth.
//   - PEP 440 pre-releases (>=2.5.0rc1), respelled as the semver
//     pre-release Version uses (see [Version]).
//   - an operator written apart from its version (">= 2.3"), and a term
//     that can never match ("<*"), which is refused as a typo.
//
// A local label (2.3.1+cu121) names a build, not a release, and is refused.
//
// The zero Constraint matches every version.
type Constraint struct {
	raw  string
	alts []alt
}

// alt is one alternative of a Constraint: every term must hold.
type alt struct {
	lib    *semver.Constraints // the terms the library checks
	fourth []fourthTerm        // comparisons with a four-part version
}

// fourthTerm compares a version with a four-part one (8.9.2.26), which the
// library cannot represent. The same term also puts a condition on the first
// three parts into the alternative's library constraint.
type fourthTerm struct {
	op string // ==, !=, >=, >, <, <=
	v  Version
}

// LocalLabelError is a constraint term with a PEP 440 local label
// (2.3.1+cu121): the label names one build of a release, not a release, so
// a constraint refuses it. Callers that know which flag or key selects the
// build (the CUDA version) say so.
type LocalLabelError struct {
	Token   string // the term as written: "2.3.1+cu121"
	Release string // the release without the label: "2.3.1"
	Label   string // the label, normalised: "cu121"
}

func (e *LocalLabelError) Error() string {
	return fmt.Sprintf("%q: the local label +%s names a build, not a release; compare the release (%s) and give the CUDA version on its own", e.Token, e.Label, e.Release)
}

// ParseConstraint parses a version constraint. See [Constraint] for the syntax.
func ParseConstraint(s string) (Constraint, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Constraint{}, fmt.Errorf("empty version constraint")
	}
	var alts []alt
	for part := range strings.SplitSeq(s, "||") {
		part = strings.TrimSpace(part)
		if part == "" {
			return Constraint{}, fmt.Errorf("constraint %s: empty alternative around ||", bound.Quote(orig))
		}
		a, err := parseAlt(part)
		if err != nil {
			return Constraint{}, fmt.Errorf("constraint %s: %w", bound.Quote(orig), bound.Short(err))
		}
		alts = append(alts, a)
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

// parseAlt translates one alternative into the library's syntax and the
// four-part comparisons beside it.
func parseAlt(s string) (alt, error) {
	toks, err := tokenize(s)
	if err != nil {
		return alt{}, err
	}
	if len(toks) == 0 {
		return alt{}, fmt.Errorf("empty term")
	}
	var lib []string
	var a alt
	for _, tok := range toks {
		l, f, err := parseTerm(tok)
		if err != nil {
			return alt{}, err
		}
		lib = append(lib, l...)
		a.fourth = append(a.fourth, f...)
	}
	if len(lib) == 0 {
		lib = []string{"*"} // so the library's pre-release rule still applies
	}
	if a.lib, err = semver.NewConstraint(strings.Join(lib, ", ")); err != nil {
		return alt{}, err
	}
	return a, nil
}

// tokenize splits one alternative into terms on commas and whitespace. It
// glues an operator written apart from its version (">= 2.3") back on, and
// turns a hyphen range "2.3 - 2.5" into ">=2.3" and "<=2.5", as the
// library's own range rewrite does.
func tokenize(s string) ([]string, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	var out []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-":
			if len(out) == 0 || i+1 >= len(fields) || isOpOnly(fields[i+1]) || fields[i+1] == "-" {
				return nil, fmt.Errorf("a hyphen range needs a version on each side (2.3 - 2.5)")
			}
			lo := out[len(out)-1]
			if _, rest := splitOp(lo); rest != lo {
				return nil, fmt.Errorf("%q: a hyphen range takes bare versions (2.3 - 2.5)", lo+" - "+fields[i+1])
			}
			out[len(out)-1] = ">=" + lo
			f = "<=" + fields[i+1]
			i++
		case isOpOnly(f) && i+1 < len(fields):
			f += fields[i+1]
			i++
		}
		out = append(out, f)
	}
	return out, nil
}

// ops are the operators of a term, longest first so ">=" is not read as ">".
// ==, ~= are pip's; =>, =<, ~> are the library's aliases.
var ops = []string{"==", "!=", ">=", "=>", "<=", "=<", "~=", "~>", "=", ">", "<", "~", "^"}

func isOpOnly(s string) bool { return slices.Contains(ops, s) }

// splitOp splits a term into its operator ("" for none) and its version.
func splitOp(tok string) (op, rest string) {
	for _, o := range ops {
		if strings.HasPrefix(tok, o) {
			return o, strings.TrimSpace(tok[len(o):])
		}
	}
	return "", tok
}

func isWild(s string) bool { return s == "*" || s == "x" || s == "X" }

// parseTerm translates one term into library terms and four-part
// comparisons. Versions are read with ParseVersion, so a term accepts what a
// Version does and its errors name the part that is wrong.
func parseTerm(tok string) (lib []string, fourth []fourthTerm, err error) {
	op, rest := splitOp(tok)
	if rest == "" {
		return nil, nil, fmt.Errorf("%q: empty version", tok)
	}
	switch op { // the library's aliases, to one spelling for the code below
	case "=>":
		op = ">="
	case "=<":
		op = "<="
	case "~>":
		op = "~"
	}
	libOp := op
	if op == "==" {
		libOp = "=" // pip's spelling; a prefix match like =
	}

	// Trailing wildcards (12.x, 2.3.*) are the library's; the numbers
	// before them are checked here.
	parts := strings.Split(rest, ".")
	nwild := 0
	for nwild < len(parts) && isWild(parts[len(parts)-1-nwild]) {
		nwild++
	}
	if nwild > 0 {
		switch {
		case op == "~=":
			return nil, nil, fmt.Errorf("%q: ~= takes no wildcard (write ~=2.3)", tok)
		case nwild == len(parts) && op != "" && op != "=" && op != "==":
			// <* can never match and >* is a typo for *.
			return nil, nil, fmt.Errorf("%q: a wildcard cannot follow %s", tok, op)
		case nwild == len(parts):
			return []string{"*"}, nil, nil
		}
		prefix := strings.Join(parts[:len(parts)-nwild], ".")
		v, err := ParseVersion(prefix)
		if err != nil {
			return nil, nil, err
		}
		if v.Len() >= maxParts {
			_, err := ParseVersion(rest) // too many parts
			return nil, nil, err
		}
		if l := v.semver().Metadata(); l != "" { // 2.3+cu121.x (found by FuzzParseConstraint)
			return nil, nil, &LocalLabelError{Token: tok, Release: v.Trunc(v.Len()).String(), Label: l}
		}
		if v.String() != strings.TrimPrefix(prefix, "v") || v.semver().Prerelease() != "" {
			return nil, nil, fmt.Errorf("%q: a wildcard follows plain numbers only (2.3.x)", tok)
		}
		if v.Len() == 3 {
			return []string{libOp + v.String()}, nil, nil // 8.9.2.x: the library's =8.9.2 covers every build
		}
		return []string{libOp + v.String() + ".x"}, nil, nil
	}

	v, err := ParseVersion(rest)
	if err != nil {
		return nil, nil, err
	}
	if l := v.semver().Metadata(); l != "" {
		return nil, nil, &LocalLabelError{Token: tok, Release: v.Trunc(v.Len()).String(), Label: l}
	}

	if v.Len() == maxParts {
		// The library holds three parts: give it the condition on those
		// and compare the fourth here.
		core := v.Trunc(3).String()
		switch op {
		case "", "=", "==":
			return []string{"=" + core}, []fourthTerm{{"==", v}}, nil
		case "!=":
			return nil, []fourthTerm{{"!=", v}}, nil
		case ">=", ">":
			return []string{">=" + core}, []fourthTerm{{op, v}}, nil
		case "<=", "<":
			return []string{"<=" + core}, []fourthTerm{{op, v}}, nil
		case "~", "^":
			return []string{op + core}, []fourthTerm{{">=", v}}, nil
		case "~=":
			// PEP 440: ~=8.9.2.26 is >=8.9.2.26, ==8.9.2.*.
			return []string{"=" + core}, []fourthTerm{{">=", v}}, nil
		}
	}

	spelled := libVersion(v)
	if op != "~=" {
		return []string{libOp + spelled}, nil, nil
	}
	// PEP 440's compatible release: ~=2.3 is >=2.3, ==2.*; ~=2.3.1 is
	// >=2.3.1, ==2.3.*. The library's ~ and ^ differ (~2.3 stops at 2.4,
	// ^0.4 at 0.5), so spell out the bounds.
	if v.Len() < 2 {
		return nil, nil, fmt.Errorf("%q: ~= needs at least two parts (~=2.3)", tok)
	}
	var hi [3]int
	for i := range v.Len() - 1 {
		hi[i] = v.Part(i)
	}
	hi[v.Len()-2]++
	upper := fmt.Sprintf("<%d.%d.%d", hi[0], hi[1], hi[2])
	if v.semver().Prerelease() != "" {
		// The group then includes pre-releases; keep those of the next
		// release out, as ==2.* does ("-0" is the lowest pre-release).
		upper += "-0"
	}
	return []string{">=" + spelled, upper}, nil, nil
}

// libVersion spells a version of at most three parts for the library: the
// numbers as written, then the semver pre-release. Local labels never get here.
func libVersion(v Version) string {
	s := v.raw[:v.releaseEnd()]
	if pre := v.semver().Prerelease(); pre != "" {
		s += "-" + pre
	}
	return s
}

func (t fourthTerm) match(v Version) bool {
	c := v.Compare(t.v)
	switch t.op {
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case ">=":
		return c >= 0
	case ">":
		return c > 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	}
	return false
}

// Check reports whether v satisfies the constraint. The zero Constraint
// matches everything.
func (c Constraint) Check(v Version) bool {
	if len(c.alts) == 0 {
		return true
	}
	for _, a := range c.alts {
		if a.check(v) {
			return true
		}
	}
	return false
}

func (a alt) check(v Version) bool {
	if !a.lib.Check(v.semver()) {
		return false
	}
	for _, t := range a.fourth {
		if !t.match(v) {
			return false
		}
	}
	return true
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

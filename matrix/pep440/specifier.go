package pep440

import (
	"fmt"
	"regexp"
	"strings"
)

// maxSpecifiers bounds the comma-separated clauses of one specifier set.
const maxSpecifiers = 32

// Specifier is one clause of a PEP 440 version specifier: an operator
// (~=, ==, !=, <=, >=, <, >, ===) and a version, ==2.1.* and !=2.1.*
// matching by prefix.
type Specifier struct {
	op, version string
	v           Version // the version, without ".*"; zero for ===
	wild        bool    // ==V.* or !=V.*
}

// Specifiers is a PEP 440 version specifier set: clauses separated by
// commas, all of which must hold (">=3.9, <3.14"). The zero Specifiers
// holds for every version.
type Specifiers struct {
	raw     string
	clauses []Specifier
}

var (
	clauseRE = regexp.MustCompile(`^\s*(~=|===|==|!=|<=|>=|<|>)\s*(\S+?)\s*$`)
	// prefixRE is the version a wildcard may follow: an optional epoch
	// and a release, nothing else (==2.0a1.* is refused).
	prefixRE = regexp.MustCompile(`^\s*(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*$`)
)

// ParseSpecifiers parses a specifier set. "" (or only whitespace) is the
// set that holds for every version, as Requires-Python "" is.
func ParseSpecifiers(s string) (Specifiers, error) {
	if len(s) > maxLen*4 {
		return Specifiers{}, fmt.Errorf("version specifier of %d bytes: longer than %d", len(s), maxLen*4)
	}
	out := Specifiers{raw: strings.TrimSpace(s)}
	if out.raw == "" {
		return out, nil
	}
	parts := strings.Split(out.raw, ",")
	if len(parts) > maxSpecifiers {
		return Specifiers{}, fmt.Errorf("version specifier %q has %d clauses; at most %d are read", s, len(parts), maxSpecifiers)
	}
	for _, p := range parts {
		c, err := ParseSpecifier(p)
		if err != nil {
			return Specifiers{}, fmt.Errorf("version specifier %q: %w", s, err)
		}
		out.clauses = append(out.clauses, c)
	}
	return out, nil
}

// MustSpecifiers is ParseSpecifiers for literals known to be valid; it
// panics otherwise.
func MustSpecifiers(s string) Specifiers {
	ss, err := ParseSpecifiers(s)
	if err != nil {
		panic(err)
	}
	return ss
}

// ParseSpecifier parses one clause (">=2.3", "==2.3.*", "===foobar").
func ParseSpecifier(s string) (Specifier, error) {
	if !isASCII(s) {
		return Specifier{}, fmt.Errorf("%q is not ASCII", s)
	}
	m := clauseRE.FindStringSubmatch(s)
	if m == nil {
		return Specifier{}, fmt.Errorf("%q is not an operator (~=, ==, !=, <=, >=, <, >, ===) and a version", strings.TrimSpace(s))
	}
	c := Specifier{op: m[1], version: m[2]}
	if c.op == "===" {
		return c, nil // arbitrary equality: any string, compared as written
	}
	if err := c.check(); err != nil {
		return Specifier{}, fmt.Errorf("%q: %w", strings.TrimSpace(s), err)
	}
	ver, wild := strings.CutSuffix(c.version, ".*")
	c.v, c.wild = MustParse(ver), wild
	return c, nil
}

// check applies PEP 440's rules on which operator takes which version.
func (c Specifier) check() error {
	ver, wild := strings.CutSuffix(c.version, ".*")
	if wild {
		if c.op != "==" && c.op != "!=" {
			return fmt.Errorf("only == and != take a wildcard")
		}
		if !prefixRE.MatchString(ver) {
			return fmt.Errorf("a wildcard follows a release only (==2.1.*), not %q", ver)
		}
		return nil
	}
	v, err := Parse(ver)
	if err != nil {
		return err
	}
	if v.Local() != "" && c.op != "==" && c.op != "!=" {
		return fmt.Errorf("only == and != take a local label")
	}
	if c.op == "~=" && strings.Count(v.BaseVersion()[strings.Index(v.BaseVersion(), "!")+1:], ".") < 1 {
		return fmt.Errorf("~= needs a release of at least two numbers (~=2.3)")
	}
	return nil
}

// Op is the clause's operator.
func (c Specifier) Op() string { return c.op }

// Version is the clause's version as written (2.3.*, 1.0.post1).
func (c Specifier) Version() string { return c.version }

func (c Specifier) String() string { return c.op + c.version }

// Contains reports whether v satisfies the clause. Pre-releases are
// accepted when they match, as packaging's Specifier.contains does when
// not told otherwise.
func (c Specifier) Contains(v Version) bool {
	if !v.set {
		return false
	}
	if c.op == "===" {
		return strings.EqualFold(strings.TrimSpace(v.Original()), c.version)
	}
	return c.match(v)
}

// ContainsString is Contains for a version as written; a string that is
// not a PEP 440 version satisfies only === of the same string.
func (c Specifier) ContainsString(s string) bool {
	if c.op == "===" {
		return strings.EqualFold(strings.TrimSpace(s), c.version)
	}
	v, err := Parse(s)
	return err == nil && c.Contains(v)
}

// Clauses returns the clauses in the order written.
func (ss Specifiers) Clauses() []Specifier { return append([]Specifier(nil), ss.clauses...) }

// IsZero reports whether ss has no clause (it holds for every version).
func (ss Specifiers) IsZero() bool { return len(ss.clauses) == 0 }

// String is the set as written, trimmed.
func (ss Specifiers) String() string { return ss.raw }

// Contains reports whether v satisfies every clause.
func (ss Specifiers) Contains(v Version) bool {
	for _, c := range ss.clauses {
		if !c.Contains(v) {
			return false
		}
	}
	return v.set
}

// ContainsString is Contains for a version as written (see
// Specifier.ContainsString).
func (ss Specifiers) ContainsString(s string) bool {
	for _, c := range ss.clauses {
		if !c.ContainsString(s) {
			return false
		}
	}
	_, err := Parse(s)
	return err == nil || len(ss.clauses) > 0
}

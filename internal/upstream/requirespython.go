package upstream

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// releaseRE is a version of release numbers only (3.10, 3.9.2).
var releaseRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+){0,2}$`)

// pythonConstraint turns a Requires-Python value (PEP 440 specifiers,
// ">=3.10, !=3.11.*") into the matrix's Python constraint. PEP 440 and the
// matrix's syntax differ where a version is short: PEP 440's ==3.10,
// <=3.10 and >3.10 mean 3.10.0 exactly, the matrix's any 3.10.x; so those
// versions are written out to three parts (==3.10 → =3.10.0). A clause
// the matrix cannot hold (===, a pre-release, a local label) is an error:
// a Python range that is not known must not be read as "any Python".
func pythonConstraint(requiresPython string) (matrix.Constraint, error) {
	set, err := pep440.ParseSpecifiers(requiresPython)
	if err != nil {
		return matrix.Constraint{}, fmt.Errorf("Requires-Python: %w", err)
	}
	if set.IsZero() {
		return matrix.Constraint{}, fmt.Errorf("Requires-Python %q gives no range", requiresPython)
	}
	var terms []string
	for _, c := range set.Clauses() {
		v, wild := strings.CutSuffix(c.Version(), ".*")
		if c.Op() == "===" || !releaseRE.MatchString(v) {
			return matrix.Constraint{}, fmt.Errorf("Requires-Python %q: %s is not a range of releases the matrix can hold", requiresPython, c)
		}
		switch {
		case wild:
			terms = append(terms, strings.TrimPrefix(c.Op(), "=")+v+".*")
		case c.Op() == "~=" || c.Op() == ">=" || c.Op() == "<":
			terms = append(terms, c.String()) // the same in both syntaxes
		default:
			terms = append(terms, strings.TrimPrefix(c.Op(), "==")+threeParts(v))
		}
	}
	return matrix.ParseConstraint(strings.Join(terms, ","))
}

// threeParts pads a release to three numbers (3.10 → 3.10.0).
func threeParts(v string) string {
	for strings.Count(v, ".") < 2 {
		v += ".0"
	}
	return v
}

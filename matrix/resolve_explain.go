package matrix

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoStack is wrapped by every ConflictError, for callers that branch on
// "no stack satisfies the constraints".
var ErrNoStack = errors.New("no stack satisfies the constraints")

// ConflictError explains why no stack satisfies the constraints, and what
// nearby constraints would work.
type ConflictError struct {
	// Reason says why the most promising candidate stack failed.
	Reason string
	// Asked are the constraints that were resolved; render a Field of
	// Alternatives or Conflicts with Asked.Value.
	Asked Constraints
	// Alternatives are stacks that work if one constraint is dropped, in
	// the order of Constraints.Given.
	Alternatives []Alternative
	// Conflicts are the pairs of given constraints that no stack
	// satisfies even on their own, by a rule (not for want of a fact the
	// matrix does not record). They are looked for only when no single
	// drop works and more than two constraints are given.
	Conflicts [][2]Field
}

// Alternative is a working stack found by dropping one constraint.
type Alternative struct {
	Dropped Field `json:"dropped"`
	Stack   Stack `json:"stack"`
}

// Error returns the reason and the conflicting pairs, named by Field:
// "…; CUDA 12.1 and tensorflow 2.15 conflict on their own".
func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString(e.Reason)
	for _, p := range e.Conflicts {
		fmt.Fprintf(&b, "; %s and %s conflict on their own", e.Asked.describe(p[0]), e.Asked.describe(p[1]))
	}
	return b.String()
}

func (e *ConflictError) Unwrap() error { return ErrNoStack }

// explain turns a failed search into a ConflictError: the reason of the
// candidate that got furthest, the stacks found with one constraint
// dropped, and, when no single drop works, the pairs that conflict.
func (db *DB) explain(c Constraints, fail *failures) *ConflictError {
	ce := &ConflictError{Reason: fail.message(), Asked: c}
	given := c.Given()
	for _, f := range given {
		if alt, _, err := db.resolve(c.Without(f)); err == nil && alt != nil {
			ce.Alternatives = append(ce.Alternatives, Alternative{Dropped: f, Stack: *alt})
		}
	}
	if len(ce.Alternatives) > 0 || len(given) <= 2 {
		return ce
	}
	for i := range given {
		for j := i + 1; j < len(given); j++ {
			pair := Constraints{Flavor: c.Flavor, Apt: c.Apt, Fabric: c.Fabric, Platforms: c.Platforms, Compat: c.Compat}
			pair = pair.with(c, given[i]).with(c, given[j])
			// A pair that fails only because the matrix lacks a fact (the
			// cuDNN inside an image, a driver floor) does not conflict.
			if s, fail, err := db.resolve(pair); err == nil && s == nil && fail.conflict() {
				ce.Conflicts = append(ce.Conflicts, [2]Field{given[i], given[j]})
			}
		}
	}
	return ce
}

// Stages of checking a candidate, in order. A candidate that fails later
// got further; the reported reason is that of the most preferred candidate
// that got furthest.
type stage int

const (
	stageFrameworks stage = iota // frameworks agree on the CUDA major
	stageFwCuDNN                 // … and on cuDNN
	stageCUDA                    // the image CUDA can run the wheels
	stageImage                   // NVIDIA publishes an image for the CUDA
	stageOS                      // … on the OS
	stagePython                  // a Python fits the OS and the frameworks
	stageCuDNN                   // cuDNN constraint and system cuDNN flavor
	stageDriver                  // driver floor
	stageGPU                     // GPU coverage
	stageFabric                  // the frameworks' NCCL drives the fabric
)

type failure struct {
	stage stage
	msg   string
	// unknown marks a failure for want of a fact the matrix does not
	// record (a cuDNN version, a driver floor), not for a rule: the
	// constraints that led there do not conflict, as far as anyone knows.
	unknown bool
	pass    int // the search pass that recorded it
}

// failures keeps the failure of the most preferred candidate that got
// furthest; at the same stage, one of a later pass of the search (which
// allowed more: resolve) wins over the earlier pass's.
type failures struct {
	best *failure
	pass int // the search's pass, from 0
}

func (f *failures) add(st stage, format string, args ...any) {
	if f.wins(st) {
		f.best = &failure{stage: st, msg: fmt.Sprintf(format, args...), pass: f.pass}
	}
}

// addUnknown records a failure for want of a recorded fact.
func (f *failures) addUnknown(st stage, format string, args ...any) {
	if f.wins(st) {
		f.best = &failure{stage: st, msg: fmt.Sprintf(format, args...), unknown: true, pass: f.pass}
	}
}

func (f *failures) wins(st stage) bool {
	return f.best == nil || st > f.best.stage || (st == f.best.stage && f.pass > f.best.pass)
}

// conflict reports whether the search failed on a rule, not only for want
// of a fact the matrix lacks.
func (f *failures) conflict() bool { return f != nil && (f.best == nil || !f.best.unknown) }

func (f *failures) message() string {
	if f.best == nil {
		return "no stack satisfies the constraints"
	}
	return f.best.msg
}

package pep508

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// Env is the target a marker is evaluated for: marker variable → value.
// A variable Env does not hold is unknown. The zero Env knows nothing.
type Env struct{ vars map[string]string }

// LinuxEnv is CPython on Linux on machine (x86_64, aarch64), the target of
// gpuimg's images. python is the Python version, "3.12" or "3.12.4" (""
// when not known); python_version is its first two parts and
// python_full_version the version with missing parts as zeros.
// platform_release and platform_version (the kernel's) are not known.
func LinuxEnv(machine, python string) Env {
	e := Env{vars: map[string]string{
		"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
		"platform_python_implementation": "CPython", "implementation_name": "cpython",
	}}
	if machine != "" {
		e.vars["platform_machine"] = machine
	}
	if python != "" {
		parts := strings.SplitN(python, ".", 3)
		for len(parts) < 3 {
			parts = append(parts, "0")
		}
		e.vars["python_version"] = parts[0] + "." + parts[1]
		e.vars["python_full_version"] = strings.Join(parts, ".")
		e.vars["implementation_version"] = e.vars["python_full_version"]
	}
	return e
}

// With returns a copy of e with variable name set to value (With("extra",
// "cuda12") evaluates a requirement of the cuda12 extra).
func (e Env) With(name, value string) Env {
	vars := maps.Clone(e.vars)
	if vars == nil {
		vars = map[string]string{}
	}
	vars[name] = value
	return Env{vars: vars}
}

// UnknownError is a marker whose outcome depends on variables the Env
// does not give.
type UnknownError struct{ Variables []string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("the outcome depends on %s, which the target does not give", strings.Join(e.Variables, ", "))
}

// truth is a three-valued outcome: a comparison of an unknown variable is
// unknown, "false and unknown" is false, "true or unknown" is true.
type truth int8

const (
	falseT truth = iota
	trueT
	unknownT
)

// Evaluate reports whether the marker holds for env. The zero Marker
// holds. When the outcome depends on a variable env does not hold the
// error is an *UnknownError (unknown is never true); a comparison pypa/
// packaging refuses to evaluate (~= or === on a variable that is not a
// version, a set-valued variable) is an error too.
func (m Marker) Evaluate(env Env) (bool, error) {
	if m.IsZero() {
		return true, nil
	}
	ev := evaluator{env: env}
	t := ev.node(m.root)
	switch {
	case ev.err != nil:
		return false, fmt.Errorf("marker %q: %w", m.raw, ev.err)
	case t == unknownT:
		slices.Sort(ev.unknown)
		return false, fmt.Errorf("marker %q: %w", m.raw, &UnknownError{Variables: slices.Compact(ev.unknown)})
	}
	return t == trueT, nil
}

type evaluator struct {
	env     Env
	unknown []string
	err     error
}

func (ev *evaluator) node(n node) truth {
	switch n.op {
	case "and":
		out := trueT
		for _, c := range n.children {
			switch ev.node(c) {
			case falseT:
				out = falseT
			case unknownT:
				if out == trueT {
					out = unknownT
				}
			}
		}
		return out
	case "or":
		out := falseT
		for _, c := range n.children {
			switch ev.node(c) {
			case trueT:
				out = trueT
			case unknownT:
				if out == falseT {
					out = unknownT
				}
			}
		}
		return out
	}
	return ev.compare(n.cmp)
}

// versionVariables compare as PEP 440 versions when the other side is one
// (packaging's MARKERS_REQUIRING_VERSION).
var versionVariables = map[string]bool{"python_version": true, "python_full_version": true, "platform_release": true, "implementation_version": true}

func (ev *evaluator) compare(c comparison) truth {
	key := c.lhs.variable
	if key == "" {
		key = c.rhs.variable
	}
	if key == "" {
		ev.fail(fmt.Errorf("%s %s %s compares two strings", c.lhs, c.op, c.rhs))
		return falseT
	}
	if key == "extras" || key == "dependency_groups" {
		ev.fail(fmt.Errorf("%s: the set-valued variable %s is for lock files, not requirements", c.lhs.String()+" "+c.op+" "+c.rhs.String(), key))
		return falseT
	}
	lhs, okL := ev.value(c.lhs)
	rhs, okR := ev.value(c.rhs)
	if !okL || !okR {
		return unknownT
	}
	if key == "extra" {
		lhs, rhs = normalizeName(lhs), normalizeName(rhs)
	}
	if versionVariables[key] {
		if s, err := pep440.ParseSpecifier(c.op + rhs); err == nil {
			return truthOf(s.ContainsString(lhs))
		}
	}
	t, err := compareStrings(lhs, c.op, rhs)
	if err != nil {
		ev.fail(fmt.Errorf("%s %s %s: %w", c.lhs, c.op, c.rhs, err))
	}
	return t
}

func (ev *evaluator) fail(err error) {
	if ev.err == nil {
		ev.err = err
	}
}

// value is an operand's value; ok is false for a variable env lacks.
func (ev *evaluator) value(o operand) (string, bool) {
	if o.variable == "" {
		return o.value, true
	}
	v, ok := ev.env.vars[o.variable]
	if !ok {
		ev.unknown = append(ev.unknown, o.variable)
	}
	return v, ok
}

// compareStrings is packaging's _operators: substring tests for in and
// not in, equality for == and != (and <= and >=, which hold only on
// equal strings), and < and > never hold; ~= and === are undefined.
func compareStrings(lhs, op, rhs string) (truth, error) {
	switch op {
	case "in":
		return truthOf(strings.Contains(rhs, lhs)), nil
	case "not in":
		return truthOf(!strings.Contains(rhs, lhs)), nil
	case "==", "<=", ">=":
		return truthOf(lhs == rhs), nil
	case "!=":
		return truthOf(lhs != rhs), nil
	case "<", ">":
		return falseT, nil
	}
	return falseT, errors.New("is not defined on strings that are not versions")
}

func truthOf(b bool) truth {
	if b {
		return trueT
	}
	return falseT
}

var nameRuns = regexp.MustCompile(`[-_.]+`)

// normalizeName is PEP 503's name normalization, which PEP 685 applies to
// extras.
func normalizeName(s string) string { return strings.ToLower(nameRuns.ReplaceAllString(s, "-")) }

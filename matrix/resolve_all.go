package matrix

import (
	"errors"
	"fmt"
	"slices"
)

// ReleaseFit is one framework release judged against constraints: the
// stack Resolve gives with the release pinned, or why none fits.
type ReleaseFit struct {
	Version string `json:"version" yaml:"version"`
	// Stack is the release's best stack; nil when none fits.
	Stack *Stack `json:"stack,omitempty" yaml:"stack,omitempty"`
	// Reason says why no stack of the release fits; empty when one does.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// ResolveEach answers "which releases run on my fleet?": for the one
// framework c selects, every release its constraint allows, newest first,
// each resolved with Resolve and c's other constraints (driver, GPUs,
// target, Python, …) with that release pinned. It returns the framework's
// name. An input error (no framework, several, an unknown GPU) is an
// error; a release that does not fit is a ReleaseFit with a Reason.
func (db *DB) ResolveEach(c Constraints) (string, []ReleaseFit, error) {
	name, slot, err := c.onlyFramework()
	if err != nil {
		return "", nil, err
	}
	var out []ReleaseFit
	for _, v := range db.releases(name) {
		if !(*slot).Check(v) {
			continue
		}
		pin, err := ParseConstraint(v.String())
		if err != nil {
			return "", nil, fmt.Errorf("%s %s: %w", name, v, err)
		}
		one := c
		*one.frameworkSlot(name) = &pin
		s, err := db.Resolve(one)
		var ce *ConflictError
		switch {
		case errors.As(err, &ce):
			out = append(out, ReleaseFit{Version: v.String(), Reason: ce.Error()})
		case err != nil:
			return "", nil, err
		default:
			out = append(out, ReleaseFit{Version: v.String(), Stack: &s})
		}
	}
	if len(out) == 0 {
		return "", nil, fmt.Errorf("no %s release matches %q (gpuimg matrix list %s)", name, (*slot).String(), name)
	}
	return name, out, nil
}

// onlyFramework is the one framework c selects and its constraint.
func (c *Constraints) onlyFramework() (string, **Constraint, error) {
	var names []string
	for _, n := range FrameworkNames() {
		if *c.frameworkSlot(n) != nil {
			names = append(names, n)
		}
	}
	if len(names) != 1 {
		return "", nil, fmt.Errorf("--all lists the releases of one framework, and %d are selected: give one of --torch, --tensorflow or --jax (any for every release)", len(names))
	}
	return names[0], c.frameworkSlot(names[0]), nil
}

func (c *Constraints) frameworkSlot(name string) **Constraint {
	switch name {
	case FrameworkTorch:
		return &c.Torch
	case FrameworkTensorFlow:
		return &c.TensorFlow
	}
	return &c.JAX
}

// releases are framework name's releases, newest first.
func (db *DB) releases(name string) []Version {
	var vs []Version
	switch name {
	case FrameworkTorch:
		for _, t := range db.Torch {
			vs = append(vs, t.Version)
		}
	case FrameworkTensorFlow:
		for _, t := range db.TensorFlow {
			vs = append(vs, t.Version)
		}
	case FrameworkJAX:
		for _, j := range db.JAX {
			vs = append(vs, j.Version)
		}
	}
	slices.SortStableFunc(vs, func(a, b Version) int { return b.Compare(a) })
	return slices.CompactFunc(vs, func(a, b Version) bool { return a.Compare(b) == 0 })
}

package matrix

import (
	"fmt"
	"strings"
)

// Constraints are what a user asks of a stack. Every field is optional.
type Constraints struct {
	CUDA   Constraint // image CUDA toolkit (12.2)
	CuDNN  Constraint // cuDNN the frameworks load (9)
	Python Constraint // CPython (3.11)
	// Torch, TensorFlow and JAX select a framework when non-nil; a zero
	// Constraint inside means "any version".
	Torch      *Constraint
	TensorFlow *Constraint
	JAX        *Constraint
	// OS is an NVIDIA OS name (ubuntu22.04) or a family prefix (ubuntu).
	OS string
	// Flavor is runtime (the default), devel or base.
	Flavor string
	// GPU is a GPU name, alias or architecture the stack must run on.
	GPU string
	// Driver is the host's NVIDIA driver; the stack's floor must not exceed it.
	Driver Version
	// Compat lets Driver be met under minor-version compatibility instead
	// of the strict floor.
	Compat bool
}

// Field names one constraint of Constraints, so that a conflict can say
// which constraints it dropped or kept without knowing how a user set them
// (the CLI maps each Field to its flag).
type Field int

// The constraints a ConflictError can name, in the order explanations
// list them. Compat is not one: it qualifies Driver.
const (
	FieldCUDA Field = iota
	FieldCuDNN
	FieldTorch
	FieldTensorFlow
	FieldJAX
	FieldPython
	FieldOS
	FieldFlavor
	FieldGPU
	FieldDriver
	numFields
)

var fieldNames = [numFields]string{"CUDA", "cuDNN", "torch", "tensorflow", "jax", "Python", "OS", "flavor", "GPU", "driver"}

// String names the constraint for messages: CUDA, cuDNN, torch,
// tensorflow, jax, Python, OS, flavor, GPU or driver.
func (f Field) String() string {
	if f < 0 || f >= numFields {
		return fmt.Sprintf("Field(%d)", int(f))
	}
	return fieldNames[f]
}

// MarshalText renders the field by its name (String), for JSON and YAML.
func (f Field) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// Fields returns every Field in explanation order.
func Fields() []Field {
	out := make([]Field, numFields)
	for i := range out {
		out[i] = Field(i)
	}
	return out
}

// Given returns the constraints c sets, in explanation order. The default
// flavor (runtime) does not count as given.
func (c Constraints) Given() []Field {
	var out []Field
	for _, f := range Fields() {
		if c.has(f) {
			out = append(out, f)
		}
	}
	return out
}

func (c Constraints) has(f Field) bool {
	switch f {
	case FieldCUDA:
		return !c.CUDA.IsZero()
	case FieldCuDNN:
		return !c.CuDNN.IsZero()
	case FieldTorch:
		return c.Torch != nil
	case FieldTensorFlow:
		return c.TensorFlow != nil
	case FieldJAX:
		return c.JAX != nil
	case FieldPython:
		return !c.Python.IsZero()
	case FieldOS:
		return c.OS != ""
	case FieldFlavor:
		return c.Flavor != "" && c.Flavor != "runtime"
	case FieldGPU:
		return c.GPU != ""
	case FieldDriver:
		return !c.Driver.IsZero()
	}
	return false
}

// Value renders the value c gives field f as a user writes it ("12.2",
// "ubuntu22.04", "*" for any framework version); "" when f is not given.
func (c Constraints) Value(f Field) string {
	if !c.has(f) {
		return ""
	}
	switch f {
	case FieldCUDA:
		return c.CUDA.String()
	case FieldCuDNN:
		return c.CuDNN.String()
	case FieldTorch:
		return c.Torch.String()
	case FieldTensorFlow:
		return c.TensorFlow.String()
	case FieldJAX:
		return c.JAX.String()
	case FieldPython:
		return c.Python.String()
	case FieldOS:
		return c.OS
	case FieldFlavor:
		return c.Flavor
	case FieldGPU:
		return c.GPU
	case FieldDriver:
		return c.Driver.String()
	}
	return ""
}

// describe renders field f of c for library messages: "torch 2.3".
func (c Constraints) describe(f Field) string {
	return f.String() + " " + c.Value(f)
}

// Without returns a copy of c with constraint f removed. A framework stays
// selected, at any version.
func (c Constraints) Without(f Field) Constraints {
	switch f {
	case FieldCUDA:
		c.CUDA = Constraint{}
	case FieldCuDNN:
		c.CuDNN = Constraint{}
	case FieldTorch:
		c.Torch = &Constraint{}
	case FieldTensorFlow:
		c.TensorFlow = &Constraint{}
	case FieldJAX:
		c.JAX = &Constraint{}
	case FieldPython:
		c.Python = Constraint{}
	case FieldOS:
		c.OS = ""
	case FieldFlavor:
		c.Flavor = ""
	case FieldGPU:
		c.GPU = ""
	case FieldDriver:
		c.Driver = Version{}
	}
	return c
}

// with copies constraint f from src into c.
func (c Constraints) with(src Constraints, f Field) Constraints {
	switch f {
	case FieldCUDA:
		c.CUDA = src.CUDA
	case FieldCuDNN:
		c.CuDNN = src.CuDNN
	case FieldTorch:
		c.Torch = src.Torch
	case FieldTensorFlow:
		c.TensorFlow = src.TensorFlow
	case FieldJAX:
		c.JAX = src.JAX
	case FieldPython:
		c.Python = src.Python
	case FieldOS:
		c.OS = src.OS
	case FieldFlavor:
		c.Flavor = src.Flavor
	case FieldGPU:
		c.GPU = src.GPU
	case FieldDriver:
		c.Driver = src.Driver
	}
	return c
}

// Resolve returns the most preferred stack that satisfies c: newest
// frameworks first; without a CUDA constraint, stable wheel variants before
// experimental ones and an image CUDA as close as possible to the wheels'
// CUDA; with one, the newest matching image CUDA and the wheel variant built
// for its major.minor (else the nearest older minor of the same major),
// upstream status and PyPI's default variant breaking ties; then the
// preferred OS (Ubuntu, newest first), and the OS's default Python where it
// fits. A note on the stack says why each variant was chosen. It is deterministic. When nothing fits it returns a
// *ConflictError. Input errors (an unknown GPU, a bad flavor) are plain errors.
func (db *DB) Resolve(c Constraints) (Stack, error) {
	s, fail, err := db.resolve(c)
	if err != nil {
		return Stack{}, err
	}
	if s != nil {
		return *s, nil
	}
	return Stack{}, db.explain(c, fail)
}

// search holds what stays fixed while candidate stacks are tried.
type search struct {
	db     *DB
	c      Constraints
	flavor string
	gpu    *GPU // nil without a GPU constraint
	cudas  []CUDARelease
	oses   []OS
	fails  *failures
}

func (db *DB) resolve(c Constraints) (*Stack, *failures, error) {
	s, lists, err := db.newSearch(c)
	if err != nil {
		return nil, nil, err
	}
	if c.CUDA.IsZero() {
		// Variants in their own preference order, each on the image CUDAs
		// closest to its wheels.
		for _, combo := range product(lists) {
			if !s.combineFrameworks(combo) {
				continue
			}
			for _, r := range orderCUDA(s.cudas, combo) {
				if st := s.tryCUDA(combo, r); st != nil {
					return st, nil, nil
				}
			}
		}
		return nil, s.fails, nil
	}
	// A requested CUDA: newest releases first, the newest matching image
	// CUDA first, and on it the variants closest to its CUDA.
	releases := make([][][]fwChoice, len(lists))
	for i, l := range lists {
		releases[i] = byRelease(l)
	}
	for _, rel := range product(releases) {
		variants := product(rel)
		for _, r := range s.cudas {
			for _, combo := range orderForCUDA(variants, r.Version) {
				if !s.combineFrameworks(combo) {
					continue
				}
				if st := s.tryCUDA(combo, r); st != nil {
					return st, nil, nil
				}
			}
		}
	}
	return nil, s.fails, nil
}

// newSearch checks the input constraints and lists the candidates of each
// stage in preference order: each framework's choices, CUDA releases, OSes.
func (db *DB) newSearch(c Constraints) (*search, [][]fwChoice, error) {
	s := &search{db: db, c: c, flavor: c.Flavor, fails: &failures{}}
	if s.flavor == "" {
		s.flavor = "runtime"
	}
	if s.flavor != "runtime" && s.flavor != "devel" && s.flavor != "base" {
		return nil, nil, fmt.Errorf("unknown flavor %q: use runtime, devel or base", c.Flavor)
	}
	if c.GPU != "" {
		g, err := db.FindGPU(c.GPU)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := db.Arch(g.Arch); !ok {
			return nil, nil, fmt.Errorf("GPU %s has architecture %s, which the matrix does not know; add an archs: row with --matrix-file", g.Name, g.Arch)
		}
		s.gpu = &g
	}
	var lists [][]fwChoice
	for _, fw := range []struct {
		name string
		want *Constraint
	}{{"torch", c.Torch}, {"tensorflow", c.TensorFlow}, {"jax", c.JAX}} {
		if fw.want == nil {
			continue
		}
		l, err := db.frameworkChoices(fw.name, fw.want)
		if err != nil {
			return nil, nil, err
		}
		lists = append(lists, l)
	}
	for _, r := range db.CUDA {
		if c.CUDA.Check(r.Version) {
			s.cudas = append(s.cudas, r)
		}
	}
	if len(s.cudas) == 0 {
		return nil, nil, fmt.Errorf("no CUDA release matches %q; see gpuimg matrix list cuda", c.CUDA)
	}
	for _, o := range db.OS {
		if c.OS == "" || o.Name == c.OS || (strings.HasPrefix(o.Name, c.OS) && !strings.ContainsAny(c.OS, "0123456789")) {
			s.oses = append(s.oses, o)
		}
	}
	if len(s.oses) == 0 {
		var names []string
		for _, o := range db.OS {
			names = append(names, o.Name)
		}
		return nil, nil, fmt.Errorf("unknown OS %q: use one of %s, or a family such as ubuntu", c.OS, strings.Join(names, ", "))
	}
	return s, lists, nil
}

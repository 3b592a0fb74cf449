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
	// Flavor is base, runtime or devel; empty lets the resolver choose
	// (DefaultFlavor): base when every framework brings CUDA's libraries
	// as pip wheels and nothing else needs them in the image, else runtime.
	Flavor string
	// Apt are the OS packages the build adds on top of the stack (the
	// builder's extras); those that use CUDA's libraries from the image
	// (AptNeedsCUDALibs) make the chosen flavor runtime. Not a Field: it
	// only steers the flavor's default.
	Apt []string
	// Platforms are the platforms the image is built for (linux/arm64);
	// a framework release whose CUDA wheels do not exist for one
	// (DB.CUDAPlatforms) is refused. Empty: not checked. Not a Field.
	Platforms []string
	// Fabric names a fabrics: row (efa) whose user space the build adds
	// (builder's extras): the frameworks' NCCL must be one its NCCL
	// plugin supports. Not a Field, like Apt.
	Fabric string
	// GPU is a GPU name, alias or architecture the stack must run on, or
	// several separated by commas (a100,h100): the stack must run on each.
	GPU string
	// Driver is the host's NVIDIA driver; the stack's floor must not exceed it.
	Driver Version
	// Compat lets Driver be met under minor-version compatibility instead
	// of the strict floor.
	Compat bool
	// Target names a targets: row (sagemaker/p5). Resolve takes its driver
	// as Driver and its GPUs as GPU where those are not given, prefers a
	// stack its driver meets strictly and falls back to minor-version
	// compatibility, and notes the choice on the stack. It is FieldTarget,
	// not a constraint field (Fields): a conflict names the driver and GPU
	// constraints it set.
	Target string
}

// GPUs returns the GPU constraint's GPUs, in the order given.
func (c Constraints) GPUs() []string {
	if c.GPU == "" {
		return nil
	}
	return strings.Split(c.GPU, ",")
}

// slot is where c holds field f: a *Constraint (CUDA, cuDNN, Python), a
// **Constraint (a framework: nil leaves it out), a *Version (the driver)
// or a *string (OS, flavor, GPU, target); nil for no field. It is the one
// place that maps fields to Constraints' own fields.
func (c *Constraints) slot(f Field) any {
	switch f {
	case FieldCUDA:
		return &c.CUDA
	case FieldCuDNN:
		return &c.CuDNN
	case FieldPython:
		return &c.Python
	case FieldTorch:
		return &c.Torch
	case FieldTensorFlow:
		return &c.TensorFlow
	case FieldJAX:
		return &c.JAX
	case FieldDriver:
		return &c.Driver
	case FieldOS:
		return &c.OS
	case FieldFlavor:
		return &c.Flavor
	case FieldGPU:
		return &c.GPU
	case FieldTarget:
		return &c.Target
	}
	return nil
}

// Set parses value as people write constraint f, on the command line and
// in files alike, and sets it in c: a version or constraint for CUDA,
// cuDNN and Python; the same for a framework, or latest, any, *, yes or
// true for any release; runtime, devel or base for the flavor; a driver
// version as nvidia-smi prints it; OS, GPU and target names as written
// (Resolve checks them), several GPUs separated by commas. An empty value
// is an error.
func (c *Constraints) Set(f Field, value string) error {
	value = strings.TrimSpace(value)
	if value == "" {
		return fmt.Errorf("empty %s", f)
	}
	var err error
	switch p := c.slot(f).(type) {
	case *Constraint:
		*p, err = ParseConstraint(value)
	case **Constraint:
		switch strings.ToLower(value) {
		case "latest", "any", "*", "yes", "true":
			*p = &Constraint{}
			return nil
		}
		var v Constraint
		if v, err = ParseConstraint(value); err == nil {
			*p = &v
		}
	case *Version:
		*p, err = ParseDriver(value) // the driver, the one *Version field
	case *string:
		var v string
		if v, err = checkName(f, value); err == nil {
			*p = v
		}
	default:
		err = fmt.Errorf("%s is not a constraint", f)
	}
	return err
}

// checkName checks a name-valued field's value: the flavor is one of
// three, a GPU list has no empty entry (and loses the blanks around its
// entries); OS and target names are Resolve's to check.
func checkName(f Field, value string) (string, error) {
	switch f {
	case FieldFlavor:
		switch value {
		case "runtime", "devel", "base":
			return value, nil
		}
		return "", fmt.Errorf("flavor %q is not runtime, devel or base", value)
	case FieldGPU:
		var names []string
		for n := range strings.SplitSeq(value, ",") {
			if n = strings.TrimSpace(n); n == "" {
				return "", fmt.Errorf("GPU list %q has an empty entry", value)
			}
			names = append(names, n)
		}
		return strings.Join(names, ","), nil
	}
	return value, nil
}

// Given returns the constraints c sets, in explanation order.
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
	switch p := c.slot(f).(type) {
	case *Constraint:
		return !p.IsZero()
	case **Constraint:
		return *p != nil
	case *Version:
		return !p.IsZero()
	case *string:
		return *p != ""
	}
	return false
}

// Value renders the value c gives field f as a user writes it ("12.2",
// "ubuntu22.04", "*" for any framework version); "" when f is not given.
func (c Constraints) Value(f Field) string {
	if !c.has(f) {
		return ""
	}
	switch p := c.slot(f).(type) {
	case *Constraint:
		return p.String()
	case **Constraint:
		return (*p).String()
	case *Version:
		return p.String()
	case *string:
		return *p
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
	switch p := c.slot(f).(type) {
	case *Constraint:
		*p = Constraint{}
	case **Constraint:
		*p = &Constraint{}
	case *Version:
		*p = Version{}
	case *string:
		*p = ""
	}
	return c
}

// with copies constraint f from src into c.
func (c Constraints) with(src Constraints, f Field) Constraints {
	switch p := c.slot(f).(type) {
	case *Constraint:
		*p = *src.slot(f).(*Constraint)
	case **Constraint:
		*p = *src.slot(f).(**Constraint)
	case *Version:
		*p = *src.slot(f).(*Version)
	case *string:
		*p = *src.slot(f).(*string)
	}
	return c
}

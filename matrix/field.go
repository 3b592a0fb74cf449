package matrix

import (
	"fmt"
	"strings"
)

// Field names one stack field: what a user asks of a stack, by flag, by
// gpuimg.yaml key or by publish axis. Each field is written once, here:
// its name in messages, its key, an example value and its help; Spec
// holds the fields' values as written and Spec.Constraints parses them.
//
// The constraint fields (Fields) are the ones a ConflictError names
// without knowing how a user set them (the CLI maps each to its flag).
// FieldTarget is a stack field but no constraint a conflict names: a
// conflict names the driver and GPU constraints it set.
type Field int

// The stack fields, the constraints first in the order explanations list
// them. Compat is not one: it qualifies Driver.
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
	numConstraintFields
	// FieldTarget names a targets: row (Constraints.Target).
	FieldTarget = numConstraintFields
	numFields   = FieldTarget + 1
)

// fieldInfo is what is written once about a field.
type fieldInfo struct {
	name    string // in messages: CUDA
	key     string // gpuimg.yaml key, flag name and publish axis: cuda
	example string // a value a hint can suggest: 12.2
	usage   string // the flag's help
	host    bool   // describes the hosts rather than the image
}

var fields = [numFields]fieldInfo{
	FieldCUDA:       {"CUDA", "cuda", "12.2", "CUDA toolkit of the image: version or constraint (12, 12.2, 12.2.2, '>=12.1,<12.5')", false},
	FieldCuDNN:      {"cuDNN", "cudnn", "8.9", "cuDNN the frameworks load (9, 8.9)", false},
	FieldTorch:      {"torch", "torch", "2.3", "include PyTorch: version or constraint (2.3, '>=2.3,<2.5', latest)", false},
	FieldTensorFlow: {"tensorflow", "tensorflow", "2.15", "include TensorFlow: version or constraint (2.15, latest)", false},
	FieldJAX:        {"jax", "jax", "0.4.30", "include JAX with CUDA wheels: version or constraint (0.4.30, latest)", false},
	FieldPython:     {"Python", "python", "3.11", "CPython version (3.11); default: the OS's python3 if the frameworks support it", false},
	FieldOS:         {"OS", "os", "ubuntu22.04", "base OS as NVIDIA names it (ubuntu22.04, rockylinux9) or a family (ubuntu); default: newest Ubuntu that fits", false},
	FieldFlavor:     {"flavor", "flavor", "runtime", "base image flavor: base (CUDA runtime only), runtime (CUDA's libraries) or devel (compilers, headers); default base when every framework brings CUDA's libraries as pip wheels, else runtime", false},
	FieldGPU: {"GPU", "gpu", "h100", "GPU the stack must run on: name as typed or as nvidia-smi prints it (h100, rtx4090, 'NVIDIA H100 80GB HBM3'), or architecture (sm_90, 8.6); several separated by commas (a10g,l4) must all be covered",
		true},
	FieldDriver: {"driver", "driver", "535.104.05", "NVIDIA driver of the hosts (535.104.05); the stack's floor must not exceed it", true},
	FieldTarget: {"target", "target", "sagemaker/p5", "fleet the image runs on (sagemaker/p5, gke/cos-latest; gpuimg matrix list targets): its driver becomes --driver unless one is given, and its GPUs --gpu (a --gpu given narrows them to the GPUs your hosts have); a stack its driver meets strictly is preferred, else one under minor-version compatibility",
		true},
}

func (f Field) valid() bool { return f >= 0 && f < numFields }

// String names the field for messages: CUDA, cuDNN, torch, tensorflow,
// jax, Python, OS, flavor, GPU, driver or target.
func (f Field) String() string {
	if !f.valid() {
		return fmt.Sprintf("Field(%d)", int(f))
	}
	return fields[f].name
}

// Key is the field's key in gpuimg.yaml and publish files, which is also
// the name of gpuimg's flag for it: cuda, cudnn, torch, tensorflow, jax,
// python, os, flavor, gpu, driver or target.
func (f Field) Key() string {
	if !f.valid() {
		return strings.ToLower(f.String())
	}
	return fields[f].key
}

// Example is a value of the field a hint can suggest ("12.2").
func (f Field) Example() string {
	if !f.valid() {
		return ""
	}
	return fields[f].example
}

// Usage is the one-line help of the field's flag.
func (f Field) Usage() string {
	if !f.valid() {
		return ""
	}
	return fields[f].usage
}

// Host says whether the field describes the hosts a stack runs on (GPU,
// driver, target) rather than the image.
func (f Field) Host() bool { return f.valid() && fields[f].host }

// MarshalText renders the field by its name (String), for JSON and YAML.
func (f Field) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// Fields returns the constraint fields, the ones a conflict names, in
// explanation order (every stack field but FieldTarget).
func Fields() []Field { return fieldRange(numConstraintFields) }

// SpecFields returns every stack field, Fields then FieldTarget.
func SpecFields() []Field { return fieldRange(numFields) }

func fieldRange(n Field) []Field {
	out := make([]Field, n)
	for i := range out {
		out[i] = Field(i)
	}
	return out
}

// FieldByKey is the constraint field (one of Fields) whose Key is key.
func FieldByKey(key string) (Field, bool) {
	for _, f := range Fields() {
		if f.Key() == key {
			return f, true
		}
	}
	return 0, false
}

// Spec holds the stack fields as a user writes them, indexed by Field,
// not yet parsed; "" leaves a field out. Flags, the environment and
// gpuimg.yaml are merged into one Spec key by key, and Constraints parses
// it once.
type Spec [numFields]string

// Constraints parses every field s gives into constraints (Constraints.Set
// says how each is written). An error is a *FieldError naming the first
// field, in SpecFields order, whose value does not parse.
func (s Spec) Constraints() (Constraints, error) {
	var c Constraints
	for _, f := range SpecFields() {
		if s[f] == "" {
			continue
		}
		if err := c.Set(f, s[f]); err != nil {
			return Constraints{}, &FieldError{Field: f, Value: s[f], Err: err}
		}
	}
	return c, nil
}

// FieldError is a stack field's value that does not parse.
type FieldError struct {
	Field Field
	Value string
	Err   error
}

func (e *FieldError) Error() string { return e.Field.Key() + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/matrix"
)

// MatrixOptions selects the matrix: the built-in rows plus matrix files.
type MatrixOptions struct {
	// Files are extra matrix files (docs/matrix-data.md), applied in order.
	Files []string
}

// AddFlags binds the options to flags.
func (o *MatrixOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Files, "matrix-file", nil, "extra matrix rows (YAML, see docs/matrix-data.md); repeatable, later files win")
}

// Load reads the matrix.
func (o *MatrixOptions) Load() (*matrix.DB, error) {
	db, err := matrix.Load(o.Files...)
	if err != nil {
		return nil, invalid(err, "fix the matrix file (format: docs/matrix-data.md)")
	}
	return db, nil
}

// flagFor renders constraint f of c as the flag that sets it:
// "--cuda 11.7".
func flagFor(c matrix.Constraints, f matrix.Field) string {
	return "--" + f.Key() + " " + c.Value(f)
}

// StackOptions are the resolver's inputs as flags.
type StackOptions struct {
	CUDA, CuDNN, Python     string
	Torch, TensorFlow, JAX  string
	OS, Flavor, GPU, Driver string
	Compat                  bool
	// Target names a fleet (gpuimg matrix list targets) whose driver and
	// GPUs are the --driver and --gpu constraints where those are not
	// given.
	Target string

	image []string // the flags AddFlags bound that describe the image
}

// AddFlags binds the options to flags. withTarget adds --gpu, --driver,
// --compat and --target, which describe the hosts rather than the image.
func (o *StackOptions) AddFlags(fs *pflag.FlagSet, withTarget bool) {
	o.image = nil
	bind := func(p *string, name, example, usage string) {
		stackFlag(fs, p, name, example, usage)
		o.image = append(o.image, name)
	}
	bind(&o.CUDA, "cuda", "12.2", "CUDA toolkit of the image: version or constraint (12, 12.2, 12.2.2, '>=12.1,<12.5')")
	bind(&o.CuDNN, "cudnn", "8.9", "cuDNN the frameworks load (9, 8.9)")
	bind(&o.Torch, "torch", "2.3", "include PyTorch: version or constraint (2.3, '>=2.3,<2.5', latest)")
	bind(&o.TensorFlow, "tensorflow", "2.15", "include TensorFlow: version or constraint (2.15, latest)")
	bind(&o.JAX, "jax", "0.4.30", "include JAX with CUDA wheels: version or constraint (0.4.30, latest)")
	bind(&o.Python, "python", "3.11", "CPython version (3.11); default: the OS's python3 if the frameworks support it")
	bind(&o.OS, "os", "ubuntu22.04", "base OS as NVIDIA names it (ubuntu22.04, rockylinux9) or a family (ubuntu); default: newest Ubuntu that fits")
	bind(&o.Flavor, "flavor", "runtime", "base image flavor: base (CUDA runtime only), runtime (CUDA's libraries) or devel (compilers, headers); default base when every framework brings CUDA's libraries as pip wheels, else runtime")
	if withTarget {
		o.addTargetFlags(fs)
	}
}

func (o *StackOptions) addTargetFlags(fs *pflag.FlagSet) {
	o.AddHostFlags(fs,
		"GPU the stack must run on: name as typed or as nvidia-smi prints it (h100, rtx4090, 'NVIDIA H100 80GB HBM3'), or architecture (sm_90, 8.6); several separated by commas (a10g,l4) must all be covered",
		"NVIDIA driver of the hosts (535.104.05); the stack's floor must not exceed it")
	fs.BoolVar(&o.Compat, "compat", false, "let --driver be met under CUDA minor-version compatibility (no PTX JIT)")
	stackFlag(fs, &o.Target, "target", "sagemaker/p5", "fleet the image runs on (sagemaker/p5, gke/cos-latest; gpuimg matrix list targets): its driver and GPUs become --driver and --gpu unless those are given; a stack its driver meets strictly is preferred, else one under minor-version compatibility")
}

// AddHostFlags binds --gpu and --driver, the hosts a stack is checked
// against, with the command's own usage texts.
func (o *StackOptions) AddHostFlags(fs *pflag.FlagSet, gpuUsage, driverUsage string) {
	stackFlag(fs, &o.GPU, "gpu", "h100", gpuUsage)
	stackFlag(fs, &o.Driver, "driver", "535.104.05", driverUsage)
}

// ImageFlagsGiven names the flags that describe the image (--cuda,
// --torch, …, not the host's --gpu and --driver) that fs was given, as
// "--torch".
func (o *StackOptions) ImageFlagsGiven(fs *pflag.FlagSet) []string {
	var given []string
	for _, name := range o.image {
		if fs.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	return given
}

// stackFlag binds a string flag that names a stack constraint, a fleet or
// a host; example is a value the error for an empty one suggests. Every
// such flag goes through here.
func stackFlag(fs *pflag.FlagSet, p *string, name, example, usage string) {
	fs.StringVar(p, name, "", usage)
	f := fs.Lookup(name)
	f.Value = &nonEmpty{Value: f.Value, name: name, example: example}
}

// requireValues makes every string flag of c and its subcommands refuse
// an empty value: "--torch $TORCH" with TORCH unset, or "--only $VARIANT",
// would otherwise run as if the flag were absent (a stack without torch,
// every variant published). Flags stackFlag bound keep their example.
func requireValues(c *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "string", "stringArray", "stringSlice":
		default:
			return
		}
		if _, ok := f.Value.(*nonEmpty); !ok {
			f.Value = &nonEmpty{Value: f.Value, name: f.Name}
		}
		if f.DefValue == "[]" {
			f.DefValue = "" // pflag knows an empty list's "[]" by the value's type only: help would print "(default [])"
		}
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		requireValues(sub)
	}
}

// nonEmpty is a string flag's value that refuses "" (and blanks).
type nonEmpty struct {
	pflag.Value
	name, example string
}

func (v *nonEmpty) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		hint := fmt.Sprintf("omit --%s, or give it a value", v.name)
		if v.example != "" {
			hint = fmt.Sprintf("omit --%s to leave it out, or give a value such as --%s %s", v.name, v.name, v.example)
		}
		return invalid(fmt.Errorf("--%s was given an empty value (an unset variable?)", v.name), hint)
	}
	return v.Value.Set(s)
}

// Constraints parses the flags.
func (o *StackOptions) Constraints() (matrix.Constraints, error) {
	var c matrix.Constraints
	for _, v := range []struct {
		f  matrix.Field
		in string
	}{
		{matrix.FieldCUDA, o.CUDA}, {matrix.FieldCuDNN, o.CuDNN}, {matrix.FieldPython, o.Python},
		{matrix.FieldTorch, o.Torch}, {matrix.FieldTensorFlow, o.TensorFlow}, {matrix.FieldJAX, o.JAX},
		{matrix.FieldOS, o.OS}, {matrix.FieldFlavor, o.Flavor}, {matrix.FieldGPU, o.GPU}, {matrix.FieldDriver, o.Driver},
	} {
		if v.in == "" {
			continue
		}
		if err := c.Set(v.f, v.in); err != nil {
			return c, invalid(fmt.Errorf("--%s: %w", v.f.Key(), err), constraintHint(v.f, err))
		}
	}
	c.Compat, c.Target = o.Compat, o.Target
	if o.Compat && o.Driver == "" && o.Target == "" {
		return c, invalid(fmt.Errorf("--compat needs --driver"), "add --driver VERSION or --target NAME")
	}
	return c, nil
}

// constraintHint says how to write the value of constraint f, whose value
// failed with err.
func constraintHint(f matrix.Field, err error) string {
	if ll, ok := errors.AsType[*matrix.LocalLabelError](err); ok {
		return localLabelHint(f, ll)
	}
	switch f {
	case matrix.FieldCUDA:
		return "write a CUDA version (12.2), a prefix (12) or a range ('>=12.1,<12.5')"
	case matrix.FieldCuDNN:
		return "write a cuDNN version (9, 8.9) or a range ('>=8.9,<10')"
	case matrix.FieldPython:
		return "write a Python version (3.11) or a range ('>=3.10,<3.13')"
	case matrix.FieldTorch, matrix.FieldTensorFlow, matrix.FieldJAX:
		return fmt.Sprintf("write a %s release (%s), a range ('>=%s') or latest; gpuimg matrix list %s lists them",
			f, frameworkExample(f), frameworkExample(f), f.Key())
	case matrix.FieldGPU:
		return "name each GPU (h100, 'NVIDIA H100 80GB HBM3') or architecture (sm_90, 8.6), separated by commas with no empty entry; gpuimg matrix list gpus lists them"
	case matrix.FieldFlavor:
		return "use runtime, devel or base"
	case matrix.FieldDriver:
		return "give the driver as nvidia-smi prints it, e.g. 535.104.05"
	}
	return "gpuimg matrix list " + f.Key() + " lists the values"
}

func frameworkExample(f matrix.Field) string {
	switch f {
	case matrix.FieldTensorFlow:
		return "2.15"
	case matrix.FieldJAX:
		return "0.4.30"
	}
	return "2.3"
}

// localLabelHint explains a local label (2.3.1+cu121): it names one of a
// release's builds, and gpuimg picks the build through --cuda.
func localLabelHint(f matrix.Field, ll *matrix.LocalLabelError) string {
	switch f {
	case matrix.FieldTorch, matrix.FieldTensorFlow, matrix.FieldJAX:
	default:
		return "give the version without +" + ll.Label
	}
	flag := "--" + f.Key() + " " + ll.Release
	if cu, ok := matrix.ParseCUDATag(ll.Label); ok {
		return fmt.Sprintf("a local label selects a CUDA variant of the release through --cuda: give %s --cuda %s", flag, cu)
	}
	return fmt.Sprintf("a local label selects a variant of the release through --cuda: give %s and the CUDA version with --cuda (gpuimg matrix list %s lists the variants)", flag, f.Key())
}

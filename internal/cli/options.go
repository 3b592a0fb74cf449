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

// StackOptions are the resolver's inputs as flags: one flag per stack
// field (matrix.Field), named by its key, with its help and example.
type StackOptions struct {
	// Spec holds the stack fields as the flags give them.
	Spec   matrix.Spec
	Compat bool

	image []matrix.Field // the fields AddFlags bound that describe the image
}

// AddFlags binds the options to flags. withTarget adds --gpu, --driver,
// --compat and --target, which describe the hosts rather than the image.
func (o *StackOptions) AddFlags(fs *pflag.FlagSet, withTarget bool) {
	o.image = nil
	for _, f := range matrix.SpecFields() {
		if !f.Host() {
			o.bind(fs, f, f.Usage())
			o.image = append(o.image, f)
		}
	}
	if withTarget {
		o.AddHostFlags(fs, matrix.FieldGPU.Usage(), matrix.FieldDriver.Usage())
		fs.BoolVar(&o.Compat, "compat", false, "let --driver be met under CUDA minor-version compatibility (no PTX JIT)")
		o.bind(fs, matrix.FieldTarget, matrix.FieldTarget.Usage())
	}
}

// AddHostFlags binds --gpu and --driver, the hosts a stack is checked
// against, with the command's own usage texts.
func (o *StackOptions) AddHostFlags(fs *pflag.FlagSet, gpuUsage, driverUsage string) {
	o.bind(fs, matrix.FieldGPU, gpuUsage)
	o.bind(fs, matrix.FieldDriver, driverUsage)
}

// bind binds field f's flag to o.Spec with usage.
func (o *StackOptions) bind(fs *pflag.FlagSet, f matrix.Field, usage string) {
	stackFlag(fs, &o.Spec[f], f.Key(), f.Example(), usage)
}

// ImageFlagsGiven names the flags that describe the image (--cuda,
// --torch, …, not the host's --gpu and --driver) that fs was given, as
// "--torch".
func (o *StackOptions) ImageFlagsGiven(fs *pflag.FlagSet) []string {
	var given []string
	for _, f := range o.image {
		if fs.Changed(f.Key()) {
			given = append(given, "--"+f.Key())
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
	return o.constraints(func(f matrix.Field) string { return "--" + f.Key() })
}

// constraints parses o.Spec once; a value that does not parse is named by
// where (its field) came from: "--cuda", "gpuimg.yaml: cuda".
func (o *StackOptions) constraints(where func(matrix.Field) string) (matrix.Constraints, error) {
	c, err := o.Spec.Constraints()
	if fe, ok := errors.AsType[*matrix.FieldError](err); ok {
		return c, invalid(fmt.Errorf("%s: %w", where(fe.Field), fe.Err), constraintHint(fe.Field, fe.Err))
	} else if err != nil {
		return c, invalid(err, "")
	}
	c.Compat = o.Compat
	if o.Compat && o.Spec[matrix.FieldDriver] == "" && o.Spec[matrix.FieldTarget] == "" {
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
			f, f.Example(), f.Example(), f.Key())
	case matrix.FieldGPU:
		return "name each GPU (h100, 'NVIDIA H100 80GB HBM3') or architecture (sm_90, 8.6), separated by commas with no empty entry; gpuimg matrix list gpus lists them"
	case matrix.FieldFlavor:
		return "use runtime, devel or base"
	case matrix.FieldDriver:
		return "" // matrix.ParseDriver's error says how (DriverVersionHelp)
	}
	return "gpuimg matrix list " + f.Key() + " lists the values"
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

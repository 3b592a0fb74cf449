package cli

import (
	"fmt"

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
}

// AddFlags binds the options to flags. withTarget adds --gpu, --driver,
// --compat and --target, which describe the hosts rather than the image.
func (o *StackOptions) AddFlags(fs *pflag.FlagSet, withTarget bool) {
	fs.StringVar(&o.CUDA, "cuda", "", "CUDA toolkit of the image: version or constraint (12, 12.2, 12.2.2, '>=12.1,<12.5')")
	fs.StringVar(&o.CuDNN, "cudnn", "", "cuDNN the frameworks load (9, 8.9)")
	fs.StringVar(&o.Torch, "torch", "", "include PyTorch: version or constraint (2.3, '>=2.3,<2.5', latest)")
	fs.StringVar(&o.TensorFlow, "tensorflow", "", "include TensorFlow: version or constraint (2.15, latest)")
	fs.StringVar(&o.JAX, "jax", "", "include JAX with CUDA wheels: version or constraint (0.4.30, latest)")
	fs.StringVar(&o.Python, "python", "", "CPython version (3.11); default: the OS's python3 if the frameworks support it")
	fs.StringVar(&o.OS, "os", "", "base OS as NVIDIA names it (ubuntu22.04, rockylinux9) or a family (ubuntu); default: newest Ubuntu that fits")
	fs.StringVar(&o.Flavor, "flavor", "", "base image flavor: base (CUDA runtime only), runtime (CUDA's libraries) or devel (compilers, headers); default base when every framework brings CUDA's libraries as pip wheels, else runtime")
	if withTarget {
		o.addTargetFlags(fs)
	}
}

func (o *StackOptions) addTargetFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.GPU, "gpu", "", "GPU the stack must run on: name as typed or as nvidia-smi prints it (h100, rtx4090, 'NVIDIA H100 80GB HBM3'), or architecture (sm_90, 8.6); several separated by commas (a10g,l4) must all be covered")
	fs.StringVar(&o.Driver, "driver", "", "NVIDIA driver of the hosts (535.104.05); the stack's floor must not exceed it")
	fs.BoolVar(&o.Compat, "compat", false, "let --driver be met under CUDA minor-version compatibility (no PTX JIT)")
	fs.StringVar(&o.Target, "target", "", "fleet the image runs on (sagemaker/p5, gke/cos-latest; gpuimg matrix list targets): its driver and GPUs become --driver and --gpu unless those are given; a stack its driver meets strictly is preferred, else one under minor-version compatibility")
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
			return c, invalid(fmt.Errorf("--%s: %w", v.f.Key(), err), constraintHint(v.f))
		}
	}
	c.Compat, c.Target = o.Compat, o.Target
	if o.Compat && o.Driver == "" && o.Target == "" {
		return c, invalid(fmt.Errorf("--compat needs --driver"), "add --driver VERSION or --target NAME")
	}
	return c, nil
}

// constraintHint says how to write the value of constraint f.
func constraintHint(f matrix.Field) string {
	switch f {
	case matrix.FieldFlavor:
		return "use runtime, devel or base"
	case matrix.FieldDriver:
		return "give the driver as nvidia-smi prints it, e.g. 535.104.05"
	}
	return "write a version (12.2), a prefix (12) or a range ('>=12.1,<12.5')"
}

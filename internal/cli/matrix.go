package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/matrix"
)

func newMatrixCmd() *cobra.Command {
	mo := &MatrixOptions{}
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Query the compatibility matrix: resolve, check and list stacks",
		Long: `The matrix knows which NVIDIA drivers, CUDA toolkits, cuDNN and NCCL releases,
PyTorch/TensorFlow/JAX wheels, Python versions, base images and GPUs work
together, and where each fact comes from.

Add or override rows (internal builds, new releases) with --matrix-file FILE;
the format is in docs/matrix-data.md.`,
		Example: `  gpuimg matrix resolve --cuda 12.2 --torch 2.3
  gpuimg matrix check --torch 2.3 --driver 525.60.13 --gpu a10
  gpuimg matrix list torch`,
	}
	mo.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(newResolveCmd(mo), newListCmd(mo), newCheckCmd(mo), newUpdateCmd(mo), newExpandCmd(mo))
	return cmd
}

func newResolveCmd(mo *MatrixOptions) *cobra.Command {
	so := &StackOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "resolve",
		Short: "Turn version constraints into one fully pinned stack",
		Long: `resolve picks the most preferred stack that satisfies every flag: newest
frameworks first, stable wheel variants before experimental ones, an image
CUDA as close as possible to the wheels' CUDA (or the newest matching --cuda),
the newest Ubuntu that fits, and the OS's own python3 where it fits.

A framework's wheels may be built for an older CUDA than the image's within
the same major version (minor-version compatibility), never a newer one.

--target NAME resolves for a fleet of the matrix (gpuimg matrix list targets):
its driver is --driver and its GPUs are --gpu, unless you give those yourself
(yours win). A stack the fleet's driver meets strictly is preferred; when
there is none, the newest that runs under CUDA minor-version compatibility.
The notes say what came from the target. See docs/targets.md.

When nothing fits, resolve exits 1, says which constraints conflict and why,
and lists the stacks that work with one constraint dropped.`,
		Example: `  # CUDA 12.2 image with PyTorch 2.3 (cu121 wheels through minor-version compatibility)
  gpuimg matrix resolve --cuda 12.2 --torch 2.3

  # The newest PyTorch that runs on driver 525 hosts with A10 GPUs, as JSON for CI
  gpuimg matrix resolve --torch latest --driver 525.60.13 --gpu a10 -o json

  # TensorFlow on Rocky Linux 9, devel flavor
  gpuimg matrix resolve --tensorflow 2.15 --os rockylinux9 --flavor devel

  # The newest PyTorch for SageMaker p5 endpoints (driver 535, H100), and for a
  # fleet of A10G and L4 hosts on driver 535.104.05
  gpuimg matrix resolve --torch latest --target sagemaker/p5
  gpuimg matrix resolve --torch latest --gpu a10g,l4 --driver 535.104.05`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			c, err := so.Constraints()
			if err != nil {
				return err
			}
			db, err := mo.Load()
			if err != nil {
				return err
			}
			s, err := db.Resolve(c)
			if err != nil {
				return renderConflict(cmd.OutOrStdout(), output, err)
			}
			return renderStack(cmd.OutOrStdout(), output, s)
		},
	}
	so.AddFlags(cmd.Flags(), true)
	outputFlag(cmd.Flags(), &output, "output", "table", "json", "yaml")
	return cmd
}

// conflictError is a ConflictError rendered for people: the reason, then
// the stacks that work with one flag dropped.
type conflictError struct{ ce *matrix.ConflictError }

func (e conflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no stack fits: %s", conflictReason(e.ce))
	if len(e.ce.Alternatives) == 0 {
		b.WriteString("\nno stack works with any single constraint dropped; see gpuimg matrix list")
	} else {
		b.WriteString("\nthese work:")
	}
	for _, a := range e.ce.Alternatives {
		fmt.Fprintf(&b, "\nwithout %s: %s", flagFor(e.ce.Asked, a.Dropped), a.Stack.Summary())
		if u := a.Stack.PinsNotCompared; len(u) > 0 {
			// "These work" is the resolver's word; pip's is still open.
			fmt.Fprintf(&b, " (unconfirmed: the matrix does not record the nvidia-* pins of %s, so pip may refuse the pair)", strings.Join(u, " and "))
		}
	}
	return b.String()
}

func (e conflictError) Unwrap() error { return e.ce }

// conflictReason is the conflict's reason followed by the pairs of flags
// that conflict on their own.
func conflictReason(ce *matrix.ConflictError) string {
	var b strings.Builder
	b.WriteString(ce.Reason)
	for _, p := range ce.Conflicts {
		fmt.Fprintf(&b, "; %s and %s conflict on their own", flagFor(ce.Asked, p[0]), flagFor(ce.Asked, p[1]))
	}
	return b.String()
}

// alternative is a matrix.Alternative with the dropped constraint named by
// its flag, for -o json and -o yaml.
type alternative struct {
	Dropped string       `json:"dropped" yaml:"dropped"`
	Stack   matrix.Stack `json:"stack" yaml:"stack"`
}

func renderConflict(w io.Writer, output string, err error) error {
	var ce *matrix.ConflictError
	if !errors.As(err, &ce) {
		return invalid(err, "")
	}
	if output == "json" || output == "yaml" {
		v := struct {
			Error        string        `json:"error" yaml:"error"`
			Alternatives []alternative `json:"alternatives" yaml:"alternatives"`
		}{conflictReason(ce), []alternative{}}
		for _, a := range ce.Alternatives {
			v.Alternatives = append(v.Alternatives, alternative{flagFor(ce.Asked, a.Dropped), a.Stack})
		}
		if werr := render(w, output, v, nil); werr != nil { // json or yaml: no text
			return werr
		}
	}
	return conflictError{ce}
}

func renderStack(w io.Writer, output string, s matrix.Stack) error {
	return render(w, output, s, func() error { return stackTable(w, s) })
}

// stackTable is resolve's table of s, with its notes.
func stackTable(w io.Writer, s matrix.Stack) error {
	t := newTable(w)
	t.row("CUDA", s.CUDA)
	t.row("base image", s.BaseImage)
	if s.FlavorReason != "" {
		t.row("flavor", s.FlavorReason)
	}
	t.row("OS", s.OS)
	py := s.Python
	if ps := s.PythonSource; ps != nil && ps.Kind == matrix.PythonStandalone {
		py += fmt.Sprintf(" (CPython %s from python-build-standalone %s, not the OS's)", ps.Version, ps.Release)
	}
	t.row("Python", py)
	if s.CuDNN != "" {
		where := "in the base image"
		if !s.SystemCuDNN {
			where = "bundled with the framework wheels"
		}
		t.row("cuDNN", s.CuDNN+" ("+where+")")
	}
	if s.NCCL != "" {
		t.row("NCCL", s.NCCL)
	}
	floor := fmt.Sprintf(">= %s (>= %s under minor-version compatibility)", s.MinDriver, s.MinDriverCompat)
	if s.MinDriverBy != "" {
		floor += "; set by " + s.MinDriverBy
	}
	t.row("driver floor", floor)
	t.row("NVIDIA_REQUIRE_CUDA", s.RequireCUDA)
	archs := strings.Join(s.GPUArchs, " ")
	if len(s.PTXArchs) > 0 {
		archs += " (PTX: " + strings.Join(s.PTXArchs, " ") + ")"
	}
	t.row("GPU archs", archs)
	if s.Target != "" {
		t.row("target", s.Target)
	}
	if s.GPU != "" {
		label := "target GPU"
		if strings.Contains(s.GPU, ",") {
			label += "s"
		}
		t.row(label, s.GPU)
	}
	for _, fw := range s.FrameworkList() {
		desc := fmt.Sprintf("%s, wheels for CUDA %s", fw.Version, fw.CUDA)
		if fw.Status != "" {
			desc += " (" + fw.Status + ")"
		}
		t.row(fw.Name, desc)
		// A command to paste into a shell: a package with a shell
		// character quoted (nvidia-cudnn-cu12<9, jax[cuda12_pip]), and
		// the find-links page pip needs (JAX before 0.4.30).
		words := []string{"pip install"}
		for _, p := range fw.Packages {
			words = append(words, builder.ShellQuote(p))
		}
		install := strings.Join(words, " ")
		if fw.IndexURL != "" {
			install += " --index-url " + fw.IndexURL
		}
		if fw.FindLinks != "" {
			install += " --find-links " + fw.FindLinks
		}
		t.row("", install)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(s.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range s.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	return nil
}

func newCheckCmd(mo *MatrixOptions) *cobra.Command {
	so := &StackOptions{}
	var output, stackFile string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say whether a stack runs on a given driver and GPU, and why not",
		Long: `check takes a stack (from the same flags as resolve, or a JSON file written by
"gpuimg matrix resolve -o json") and a host (--driver, --gpu), and checks the
driver against the stack's floor, strictly and under minor-version
compatibility, and the GPU against the CUDA toolkit's and each framework's
compiled architectures (native SASS, or PTX that the driver JIT-compiles).

Exit status: 0 when it runs, 1 when a check fails, 2 on bad input.`,
		Example: `  gpuimg matrix check --cuda 12.4 --torch 2.5 --driver 535.104.05 --gpu h100
  gpuimg matrix resolve --torch 2.3 -o json > stack.json
  gpuimg matrix check --stack stack.json --gpu sm_120 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			if given := so.ImageFlagsGiven(cmd.Flags()); stackFile != "" && len(given) > 0 {
				return invalid(fmt.Errorf("--stack and %s exclude each other: the file is the whole stack", strings.Join(given, ", ")),
					"drop "+strings.Join(given, ", ")+" to check the file, or drop --stack to check the stack those flags resolve to")
			}
			c, err := so.Constraints()
			if err != nil {
				return err
			}
			if c.Driver.IsZero() && c.GPU == "" {
				return invalid(errors.New("nothing to check against"), "give --driver VERSION and/or --gpu NAME")
			}
			db, err := mo.Load()
			if err != nil {
				return err
			}
			stack, err := loadOrResolve(db, stackFile, c)
			if err != nil {
				return err
			}
			fs, err := db.CheckStack(stack, matrix.Host{Driver: c.Driver, GPU: c.GPU})
			if err != nil {
				return invalid(err, "")
			}
			return renderFindings(cmd.OutOrStdout(), output, stack, fs)
		},
	}
	so.AddFlags(cmd.Flags(), false)
	so.AddHostFlags(cmd.Flags(), "GPU of the hosts: name (h100, a10, l4), or architecture (sm_90, 8.6)", "NVIDIA driver of the hosts (535.104.05)")
	stackFlag(cmd.Flags(), &stackFile, "stack", "stack.json", "stack JSON from gpuimg matrix resolve -o json (- for stdin) instead of the stack flags")
	outputFlag(cmd.Flags(), &output, "output", "table", "json")
	return cmd
}

func loadOrResolve(db *matrix.DB, file string, c matrix.Constraints) (matrix.Stack, error) {
	var s matrix.Stack
	if file == "" {
		// The stack is resolved without the host: the host is what is checked.
		c.Driver, c.GPU = matrix.Version{}, ""
		s, err := db.Resolve(c)
		if err != nil {
			return s, renderConflict(io.Discard, "table", err)
		}
		return s, nil
	}
	var b []byte
	var err error
	if file == "-" {
		if b, err = io.ReadAll(io.LimitReader(os.Stdin, bound.MaxUserFile+1)); err == nil && len(b) > bound.MaxUserFile {
			err = bound.TooBig("stdin", int64(len(b)), bound.MaxUserFile)
		}
	} else {
		b, err = bound.ReadFile(file, "", bound.MaxUserFile)
	}
	if err != nil {
		return s, invalid(fmt.Errorf("read stack: %w", err), "")
	}
	name := file
	if file == "-" {
		name = "stdin"
	}
	if s, err = matrix.DecodeStack(name, b); err != nil {
		return s, invalid(fmt.Errorf("read stack %w", err), "the file must hold one stack object, as gpuimg matrix resolve -o json (or -o yaml) writes it")
	}
	return s, nil
}

func renderFindings(w io.Writer, output string, s matrix.Stack, fs []matrix.Finding) error {
	verdict := matrix.Verdict(fs)
	v := struct {
		Stack   matrix.Stack     `json:"stack"`
		Checks  []matrix.Finding `json:"checks"`
		Verdict matrix.Status    `json:"verdict"`
	}{s, fs, verdict}
	err := render(w, output, v, func() error {
		fmt.Fprintf(w, "stack: %s\n", s.Summary())
		t := newTable(w)
		for _, f := range fs {
			t.row(strings.ToUpper(string(f.Status)), f.Name, f.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "verdict: %s\n", verdict)
		return err
	})
	if err != nil {
		return err
	}
	if verdict == matrix.Fail {
		return &Error{Err: errors.New("the stack does not run on that host (see the failed checks)"), Code: ExitFailed}
	}
	return nil
}

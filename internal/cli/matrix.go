package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/internal/humanize"
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
	var all bool
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
its driver is --driver unless you give one (yours wins), and its GPUs are
--gpu; a --gpu you give narrows the fleet's GPUs to those your hosts have
(it must be one of them). A stack the fleet's driver meets strictly is preferred; when
there is none, the newest that runs under CUDA minor-version compatibility.
The notes say what came from the target. See docs/targets.md.

When nothing fits, resolve exits 1, says which constraints conflict and why,
and lists the stacks that work with one constraint dropped.

--all answers "which releases run on my fleet?": every release of the one
framework given (--torch any, or a range) is resolved with the other flags,
newest first, each with its best stack or why none fits (-o json for CI);
it exits 1 when none fits.`,
		Example: `  # CUDA 12.2 image with PyTorch 2.3 (cu121 wheels through minor-version compatibility)
  gpuimg matrix resolve --cuda 12.2 --torch 2.3

  # The newest PyTorch that runs on driver 525 hosts with A10 GPUs, as JSON for CI
  gpuimg matrix resolve --torch latest --driver 525.60.13 --gpu a10 -o json

  # TensorFlow on Rocky Linux 9, devel flavor
  gpuimg matrix resolve --tensorflow 2.15 --os rockylinux9 --flavor devel

  # The newest PyTorch for SageMaker p5 endpoints (driver 535, H100), and for a
  # fleet of A10G and L4 hosts on driver 535.104.05
  gpuimg matrix resolve --torch latest --target sagemaker/p5
  gpuimg matrix resolve --torch latest --gpu a10g,l4 --driver 535.104.05

  # Every PyTorch release that runs on driver 525 hosts with A100 GPUs
  gpuimg matrix resolve --all --torch any --driver 525.60.13 --gpu a100`,
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
			if all {
				return resolveAll(cmd.OutOrStdout(), output, db, c, screenWidth(cmd))
			}
			s, err := db.Resolve(c)
			if err != nil {
				return renderConflict(cmd.OutOrStdout(), output, err)
			}
			return renderStack(cmd.OutOrStdout(), output, s, screenWidth(cmd))
		},
	}
	so.AddFlags(cmd.Flags(), true)
	cmd.Flags().BoolVar(&all, "all", false, "list every release of the one framework given (--torch any) that fits the other flags (driver, GPUs, target, Python), each with its best stack or why none fits")
	outputFlag(cmd.Flags(), &output, "output", "text", "json", "yaml", "wide")
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

func renderStack(w io.Writer, output string, s matrix.Stack, width int) error {
	return render(w, output, s, func() error { return stackTable(w, s, width) })
}

// stackTable is resolve's table of s, with its notes.
func stackTable(w io.Writer, s matrix.Stack, width int) error {
	t := newTable(w, width)
	t.Fit(1, humanize.Wrap)
	t.row("CUDA", s.CUDA)
	t.row("base image", s.BaseImage)
	if s.FlavorReason != "" {
		t.row("flavor", s.Flavor+" (why: see the notes)")
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
	notes := s.Notes
	if s.FlavorReason != "" {
		notes = append([]string{"flavor " + s.FlavorReason}, notes...)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			writeNote(w, n, width)
		}
	}
	return nil
}

// writeNote writes n as a list item, wrapped to width (0: one line).
func writeNote(w io.Writer, n string, width int) {
	for i, line := range humanize.WrapText(n, max(width-4, 0)) {
		mark := "  - "
		if i > 0 {
			mark = "    "
		}
		fmt.Fprintf(w, "%s%s\n", mark, line)
	}
}

func newCheckCmd(mo *MatrixOptions) *cobra.Command {
	so := &StackOptions{}
	var output, stackFile string
	var strict bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say whether a stack runs on a given driver and GPU, and why not",
		Long: `check takes a stack (from the same flags as resolve, or a JSON file written by
"gpuimg matrix resolve -o json") and a host (--driver, --gpu), and checks the
driver against the stack's floor, strictly and under minor-version
compatibility, and the GPU against the CUDA toolkit's and each framework's
compiled architectures (native SASS, or PTX that the driver JIT-compiles).
--gpu may name several GPUs (a100,h100): the stack must run on each.
--target NAME takes the host from a fleet of the matrix, as resolve does.

Without --stack, check and resolve answer the same question the same way:
the stack the flags resolve to without a host is judged; when it does not
run on the host, check judges the stack "gpuimg matrix resolve" gives for
the same flags (--driver and --gpu as constraints) instead, and a warning
names the default that does not fit. When no stack fits, the default's
failed checks stand.

A check whose answer needs a fact the matrix does not record (which
architectures a framework release was compiled for, which driver branches
know a GPU) is unknown, never a pass: it names the missing fact and how to
supply it (a --matrix-file row, gpuimg validate on the built image).
--strict turns unknown and warnings into failures, for CI.

Exit status: 0 when it runs, 1 when a check fails (or, with --strict, is
unknown or warns), 2 on bad input, 4 when nothing fails but a check is
unknown.`,
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
			if c.Driver.IsZero() && c.GPU == "" && c.Target == "" {
				return invalid(errors.New("nothing to check against"), "give --driver VERSION and/or --gpu NAME, or --target NAME")
			}
			if stackFile != "" && c.Target != "" {
				return invalid(errors.New("--stack and --target exclude each other"), "give the fleet's --driver and --gpu with --stack")
			}
			db, err := mo.Load()
			if err != nil {
				return err
			}
			hc, err := checkHost(cmd.Context(), db, stackFile, c)
			if err != nil {
				return err
			}
			return renderFindings(cmd.OutOrStdout(), output, hc, strict, screenWidth(cmd))
		},
	}
	so.AddFlags(cmd.Flags(), false)
	cmd.Flags().BoolVar(&strict, "strict", false, "fail on unknown checks and warnings, not only on failed checks (for CI)")
	so.AddHostFlags(cmd.Flags(), "GPU of the hosts: name (h100, a10, l4), or architecture (sm_90, 8.6); several separated by commas; with --target, it narrows the fleet's GPUs", "NVIDIA driver of the hosts (535.104.05)")
	so.bind(cmd.Flags(), matrix.FieldTarget, "fleet the hosts are (sagemaker/p5; gpuimg matrix list targets): its driver and GPUs are the host, --driver replaces the driver, --gpu narrows the GPUs")
	stackFlag(cmd.Flags(), &stackFile, "stack", "stack.json", "stack JSON from gpuimg matrix resolve -o json (- for stdin) instead of the stack flags")
	outputFlag(cmd.Flags(), &output, "output", "text", "json", "wide")
	return cmd
}

// checkHost judges the stack of file on c's host, or, without a file, the
// stack c resolves to on that host (matrix.CheckConstraints: the one rule
// matrix check and matrix resolve share).
func checkHost(ctx context.Context, db *matrix.DB, file string, c matrix.Constraints) (matrix.HostCheck, error) {
	if file == "" {
		hc, err := db.CheckConstraints(c)
		if errors.Is(err, matrix.ErrNoStack) {
			return hc, renderConflict(io.Discard, "table", err)
		}
		if err != nil {
			return hc, invalid(err, "")
		}
		return hc, nil
	}
	s, err := loadStack(ctx, file)
	if err != nil {
		return matrix.HostCheck{}, err
	}
	fs, err := db.CheckStack(s, matrix.Host{Driver: c.Driver, GPU: c.GPU})
	if err != nil {
		return matrix.HostCheck{}, invalid(err, "")
	}
	return matrix.HostCheck{Stack: s, Findings: fs}, nil
}

// loadStack reads a stack file, as matrix resolve -o json writes it.
// A stack on stdin ("-") is read as long as ctx lasts: a signal ends a
// read of a stdin nobody writes.
func loadStack(ctx context.Context, file string) (matrix.Stack, error) {
	var s matrix.Stack
	var b []byte
	var err error
	if file == "-" {
		if b, err = bound.ReadAllContext(ctx, os.Stdin, "stdin", bound.MaxUserFile); err != nil && ctx.Err() != nil {
			return s, err
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

func renderFindings(w io.Writer, output string, hc matrix.HostCheck, strict bool, width int) error {
	s, fs := hc.Stack, hc.Findings
	verdict := matrix.VerdictOf(fs, strict)
	v := struct {
		Stack   matrix.Stack     `json:"stack"`
		Default *matrix.Stack    `json:"default_stack,omitempty"`
		Checks  []matrix.Finding `json:"checks"`
		Verdict matrix.Status    `json:"verdict"`
		Strict  bool             `json:"strict,omitempty"`
	}{s, hc.Default, fs, verdict, strict}
	err := render(w, output, v, func() error {
		for i, line := range humanize.WrapText("stack: "+s.Summary(), max(width-7, 0)) {
			fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", min(i, 1)*7), line)
		}
		t := newTable(w, width)
		t.Fit(2, humanize.Wrap)
		for _, f := range fs {
			t.row(strings.ToUpper(string(f.Status)), f.Name, f.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "verdict: %s%s\n", verdict, strictNote(strict, fs))
		return err
	})
	if err != nil {
		return err
	}
	failed := "the stack does not run on that host (see the failed checks)"
	if strict && matrix.Verdict(fs) != matrix.Fail {
		failed = "--strict: a check is unknown or warns (see them above)"
	}
	return verdictError(verdict, failed)
}

// strictNote says, after a strict verdict, that unknown and warning
// checks failed it.
func strictNote(strict bool, fs []matrix.Finding) string {
	if strict && matrix.Verdict(fs) != matrix.Fail && matrix.StrictVerdict(fs) == matrix.Fail {
		return " (--strict: unknown and warning checks fail)"
	}
	return ""
}

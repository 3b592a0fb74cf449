package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/internal/progress"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/validate/capture"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// CaptureOptions are the flags of gpuimg capture.
type CaptureOptions struct {
	Matrix   MatrixOptions
	Output   string
	File     string
	Copy     []string
	Registry RegistryOptions
	// Progress is --progress: auto, plain or quiet.
	Progress string
}

// AddFlags binds the options to flags.
func (o *CaptureOptions) AddFlags(fs *pflag.FlagSet) {
	o.Matrix.AddFlags(fs)
	outputFlag(fs, &o.Output, "output", "yaml", "json")
	fs.StringVar(&o.File, "file", "", "write the capture to this file (atomically) instead of stdout")
	fs.StringSliceVar(&o.Copy, "copy", nil, "PATH[:DST] of the captured environment to carry into the image as a layer of their own: staged beside --file in NAME.files, named by copy:; the secrets check runs on them first and refuses any that holds a secret")
	progressFlag(fs, &o.Progress)
	o.Registry.AddFlags(fs)
}

func newCaptureCmd() *cobra.Command {
	o := &CaptureOptions{}
	cmd := &cobra.Command{
		Use:   "capture [SOURCE]",
		Short: "Turn a hand-built GPU environment into a gpuimg.yaml that rebuilds it, listing what cannot be reproduced",
		Long: `capture reads an environment, as validate reads an image (OS packages, every
Python distribution with its CUDA variant, CUDA components by file, the
environment), and writes a gpuimg.yaml that gpuimg build -f takes as it is:
the stack resolved through the matrix (or the nearest one, said so), pip: the
distributions the frameworks do not bring, pinned, apt: the packages installed
by hand, env: the variables that shape the stack (never one the secrets check
flags), and a capture: section with the source, the date and every item it
cannot reproduce (pip installs from git or a path, conda packages, a runfile
CUDA, files no package owns). See docs/capture.md.

SOURCE is nothing (this machine, read from /), dir:PATH (a root file system),
container:NAME (a running docker or podman container) or an image: a registry
reference, oci:DIR[:NAME], oci-archive:FILE, docker-archive:FILE or
docker-daemon:REF.`,
		Example: `  gpuimg capture > env.yaml
  gpuimg capture dir:/mnt/old-root -o json --file env.json
  gpuimg capture container:trainer > env.yaml
  gpuimg capture dir:/mnt/old-root --copy /opt/tools --file ctx/env.yaml
  gpuimg build -f ctx/env.yaml --context ctx -t registry.example.com/ml/env:restored
  gpuimg build -f env.yaml -t registry.example.com/ml/env:restored --push
  gpuimg diff env.json registry.example.com/ml/env:restored`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, opt, err := o.parse(cmd.Flags(), args)
			if err != nil {
				return err
			}
			reg, err := o.Registry.Options()
			if err != nil {
				return err
			}
			done, err := treeProgress(cmd, &e, "capture", o.Progress)
			if err != nil {
				return err
			}
			r, staged, err := verbs.Capture(cmd.Context(), e, opt, verbs.CaptureCopy{Paths: o.Copy, File: o.File}, reg...)
			done()
			if err != nil {
				return captureError(e.Source, err)
			}
			if err := staged.Commit(); err != nil {
				return invalid(fmt.Errorf("capture --copy: %w", err), "check that the directory of --file is writable")
			}
			return o.write(cmd.OutOrStdout(), r)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// parse checks the flags and the source and loads the matrix.
func (o *CaptureOptions) parse(fs *pflag.FlagSet, args []string) (verbs.Environment, capture.Options, error) {
	e := verbs.Environment{}
	if len(args) == 1 {
		e.Source = args[0]
	}
	if e.Kind() == "host" {
		e.HostEnv = os.Environ()
	}
	if err := checkFormat(fs); err != nil {
		return e, capture.Options{}, err
	}
	db, err := o.Matrix.Load()
	if err != nil {
		return e, capture.Options{}, err
	}
	opt := capture.Options{DB: db}
	if e.Kind() == "host" {
		// The driver and GPUs from NVML, when this machine has them.
		if drv, gpus, err := gpuprobe.ProbeGPUs(); err == nil {
			opt.Driver = drv.Version
			for _, g := range gpus {
				opt.GPUs = append(opt.GPUs, g.Name)
			}
		}
	}
	return e, opt, nil
}

// write puts the capture on stdout or, with --file, atomically in the file.
func (o *CaptureOptions) write(w io.Writer, r *capture.Result) error {
	var b []byte
	var err error
	if o.Output == "json" {
		b, err = r.JSON()
	} else {
		b, err = r.Spec.YAML()
	}
	if err != nil {
		return err
	}
	if o.File == "" {
		_, err = w.Write(b)
		return err
	}
	if err := atomicfile.Write(o.File, b); err != nil {
		return invalid(fmt.Errorf("write the capture: %w", err), "check that the directory exists and is writable")
	}
	return nil
}

// treeProgress shows on stderr (--progress) the read of e's tree: this
// machine, dir: or a container's root; an image's read is not shown.
// It returns the function that ends the display.
func treeProgress(cmd *cobra.Command, e *verbs.Environment, verb, mode string) (func(), error) {
	label := verb + " " + e.Source
	if e.Kind() == "host" {
		label = verb + " /"
	}
	d, err := newDisplay(cmd, label, mode)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var before int64 // bytes of the passes done
	e.Tree.Progress = func(p capture.TreeProgress) {
		mu.Lock()
		defer mu.Unlock()
		at := fmt.Sprintf("pass %d /%s", p.Pass, p.Dir)
		if p.Done {
			at = fmt.Sprintf("pass %d done", p.Pass)
		}
		d.Update(progress.State{Bytes: before + p.Bytes, Files: p.Files, At: at})
		if p.Done {
			before += p.Bytes
		}
	}
	return d.Done, nil
}

// captureError names the source and the step that failed.
func captureError(source string, err error) error {
	if source == "" {
		source = "this machine"
	}
	return invalid(fmt.Errorf("capture %s: %w", source, err), "")
}

// DiffOptions are the flags of gpuimg diff.
type DiffOptions struct {
	Matrix   MatrixOptions
	Output   string
	Files    bool
	Registry RegistryOptions
	// Progress is --progress: auto, plain or quiet.
	Progress string
}

// AddFlags binds the options to flags.
func (o *DiffOptions) AddFlags(fs *pflag.FlagSet) {
	o.Matrix.AddFlags(fs)
	outputFlag(fs, &o.Output, "output", "text", "json")
	fs.BoolVar(&o.Files, "files", false, "also compare the files under /opt, /usr/local and /srv that no package owns")
	progressFlag(fs, &o.Progress)
	o.Registry.AddFlags(fs)
}

func newDiffCmd() *cobra.Command {
	o := &DiffOptions{}
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two environments by kind: OS packages, Python distributions, CUDA components, framework variants, driver floor, env",
		Long: `diff reads two environments and lists their differences by kind. A and B are
each a capture file (gpuimg capture's YAML: only what it pins is compared; its
-o json: everything), an image in any transport validate reads, dir:PATH,
container:NAME, or . for this machine. Exit 0 when they are the same, 1 when
they differ, 2 when one cannot be read. See docs/capture.md.`,
		Example: `  gpuimg capture > env.yaml && gpuimg build -f env.yaml -t REF --push && gpuimg diff . REF
  gpuimg diff env.json oci-archive:restored.tar -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			db, err := o.Matrix.Load()
			if err != nil {
				return err
			}
			reg, err := o.Registry.Options()
			if err != nil {
				return err
			}
			a, b := diffEnvironment(args[0]), diffEnvironment(args[1])
			doneA, err := treeProgress(cmd, &a, "diff", o.Progress)
			if err != nil {
				return err
			}
			doneB, _ := treeProgress(cmd, &b, "diff", o.Progress)
			d, err := verbs.Diff(cmd.Context(), a, b, capture.CollectOptions{DB: db}, capture.DiffOptions{Files: o.Files}, reg...)
			doneA()
			doneB()
			if err != nil {
				return invalid(fmt.Errorf("diff: %w", err), "A and B are each a capture file, an image reference, dir:PATH of a root file system, container:NAME or . for this machine")
			}
			if err := renderDelta(cmd.OutOrStdout(), o.Output, d); err != nil {
				return err
			}
			if !d.Same {
				return &Error{Err: fmt.Errorf("%s and %s differ", d.A, d.B), Code: ExitFailed}
			}
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func diffEnvironment(s string) verbs.Environment {
	e := verbs.Environment{Source: s}
	if e.Kind() == "host" {
		e.HostEnv = os.Environ()
	}
	return e
}

// renderDelta writes the differences as text or JSON.
func renderDelta(w io.Writer, format string, d *capture.Delta) error {
	if format == "json" {
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if d.Same {
		_, err := fmt.Fprintf(w, "%s and %s: the same\n", d.A, d.B)
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", d.A, d.B)
	for _, k := range d.Kinds {
		fmt.Fprintf(&b, "%s (%d):\n", k.Kind, len(k.Changes))
		for _, c := range k.Changes {
			switch {
			case c.A == "":
				fmt.Fprintf(&b, "  + %s %s\n", c.Name, c.B)
			case c.B == "":
				fmt.Fprintf(&b, "  - %s %s\n", c.Name, c.A)
			default:
				fmt.Fprintf(&b, "  ~ %s %s → %s\n", c.Name, c.A, c.B)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/internal/upstream"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// UpdateOptions are the flags of `matrix update`.
type UpdateOptions struct {
	// File is the overlay file to write; "" prints it on stdout.
	File string
	// Output is the format on stdout: yaml (the overlay) or json (what
	// was found, update's report).
	Output string
	// Check exits 1 when upstream has rows the matrix lacks.
	Check bool
	// Write folds the overlay into matrix/data/ of the gpuimg checkout
	// holding the working directory.
	Write bool
	// Only lists the sources read (torch,torch-pypi,jax,tensorflow,cuda,cudnn,nccl,images).
	Only           string
	TorchIndexURL  string
	PyPIURL        string
	CUDARedistURL  string
	CuDNNRedistURL string
	NCCLRedistURL  string
	// WheelArchs reads new torch variants' architectures from their
	// wheels' libtorch_cuda.so by range requests.
	WheelArchs bool
	// CUDAImageRepo is the repository whose tags the images source lists;
	// Mirrors (REGISTRY=MIRROR) are read instead of their registries.
	CUDAImageRepo string
	Mirrors       []string
	// Registry is how the images source reaches registries.
	Registry RegistryOptions

	dataDir string // with Write: the checkout's matrix/data
}

// load reads the matrix the run compares upstream with: the built-in data
// and --matrix-file, and with --write the checkout's matrix/data/ over the
// built-in data (the binary may be older than the checkout).
func (o *UpdateOptions) load(mo *MatrixOptions) (*matrix.DB, error) {
	if !o.Write {
		return mo.Load()
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("--write: %w", err)
	}
	if o.dataDir, err = upstream.FindData(wd); err != nil {
		return nil, dataError(err)
	}
	db, err := upstream.LoadData(o.dataDir, mo.Files...)
	if err != nil {
		return nil, dataError(err)
	}
	return db, nil
}

// AddFlags binds the options to flags.
func (o *UpdateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.File, "file", "", "write the overlay to FILE (atomically) instead of stdout")
	outputFlag(fs, &o.Output, "output", "yaml", "json")
	fs.BoolVar(&o.Check, "check", false, "exit 1 when upstream has rows the matrix lacks, listing them (for nightly CI)")
	fs.BoolVar(&o.Write, "write", false, "fold the new rows into matrix/data/*.yaml of the gpuimg checkout you are in (for maintainers; each file replaced whole, comments kept)")
	fs.StringVar(&o.Only, "only", strings.Join(sourceNames(), ","), "sources to read, comma-separated: "+strings.Join(sourceNames(), ", "))
	fs.StringVar(&o.TorchIndexURL, "torch-index-url", upstream.DefaultTorchIndexURL, "PyTorch wheel index base: BASE/torch/ lists every variant (PEP 503/658)")
	fs.StringVar(&o.PyPIURL, "pypi-url", upstream.DefaultPyPIURL, "PyPI host whose JSON API (BASE/pypi/NAME/json) and torch's simple page (BASE/simple/torch/) are read")
	fs.StringVar(&o.CUDARedistURL, "cuda-redist-url", upstream.DefaultCUDARedistURL, "directory of NVIDIA's redistrib_X.Y.Z.json manifests")
	fs.StringVar(&o.CuDNNRedistURL, "cudnn-redist-url", upstream.DefaultCuDNNRedistURL, "directory of cuDNN's redistrib_X.Y.Z.json manifests")
	fs.StringVar(&o.NCCLRedistURL, "nccl-redist-url", upstream.DefaultNCCLRedistURL, "NVIDIA's NCCL redist directory (vX.Y.Z/ listings of nccl_X.Y.Z-1+cudaA.B builds)")
	fs.BoolVar(&o.WheelArchs, "wheel-archs", false, "read each new torch variant's compiled architectures from its wheel's torch/lib/libtorch_cuda.so (HTTP range requests: the zip's directory and that member, hundreds of MB per variant); without it they are copied from the nearest older variant, with a note")
	fs.StringVar(&o.CUDAImageRepo, "cuda-image-repo", upstream.DefaultCUDAImageRepo, "repository of NVIDIA's CUDA base images, whose tags the images source lists")
	fs.StringArrayVar(&o.Mirrors, "registry-mirror", nil, "registry mirror REGISTRY=MIRROR, e.g. docker.io=mirror.example.com (repeatable)")
	o.Registry.AddFlags(fs)
}

// upstreamOptions turns the flags into upstream.Options.
func (o *UpdateOptions) upstreamOptions() ([]upstream.Option, error) {
	sources, err := upstream.ParseSources(o.Only)
	if err != nil {
		return nil, invalid(err, "use --only with "+strings.Join(sourceNames(), ", "))
	}
	mirrors, err := images.ParseMirrors(o.Mirrors)
	if err != nil {
		return nil, invalid(err, "write --registry-mirror as docker.io=mirror.example.com")
	}
	reg, err := o.Registry.Options()
	if err != nil {
		return nil, err
	}
	var scan upstream.ArchScanner
	if o.WheelArchs {
		scan = scanArchs
	}
	return []upstream.Option{
		upstream.WithWheelArchs(scan),
		upstream.WithCuDNNRedistURL(o.CuDNNRedistURL),
		upstream.WithNCCLRedistURL(o.NCCLRedistURL),
		upstream.WithRegistry(mirrors, reg...),
		upstream.WithCUDAImageRepo(o.CUDAImageRepo),
		upstream.WithSources(sources...),
		upstream.WithTorchIndexURL(o.TorchIndexURL),
		upstream.WithPyPIURL(o.PyPIURL),
		upstream.WithCUDARedistURL(o.CUDARedistURL),
		upstream.WithHTTPClient(&http.Client{Timeout: 2 * time.Minute}),
	}, nil
}

// scanArchs is validate's fat-binary scanner in the shape upstream takes.
func scanArchs(r io.Reader) ([]string, []string, error) {
	k, err := validate.ScanFatbin(r)
	return k.SASS, k.PTX, err
}

func sourceNames() []string {
	var out []string
	for _, s := range upstream.Sources {
		out = append(out, string(s))
	}
	return out
}

func newUpdateCmd(mo *MatrixOptions) *cobra.Command {
	o := &UpdateOptions{}
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Read upstream's indexes and write the matrix rows the data lacks as an overlay",
		Long: `update reads upstream's machine-readable sources, and only those: PyTorch's
all-variants wheel index with each wheel's core metadata (PEP 503/658/714),
PyPI's simple page for torch with each release's Linux x86_64 wheel core
metadata (torch-pypi: the CUDA runtime it requires names the variant plain
"pip install torch" gets), PyPI's JSON API for jax (and its CUDA plugins)
and tensorflow (its [and-cuda] pins), NVIDIA's CUDA and cuDNN redistrib manifests, NVIDIA's NCCL
redist directory, and the tags of nvidia/cuda (through --registry-mirror
when set) with each new release's image config. It prints the rows the
matrix (built-in plus --matrix-file) lacks as a --matrix-file overlay, each
with its source URL and the date read. Metadata whose sha256 differs from
the index page's is an error (exit 2), never a row.

--check prints what the matrix lacks, one line each, and exits 1 if
anything (0 if nothing); with --check the overlay is only written with
--file. -o json prints what was found (and not filled) as JSON instead of
the overlay.

--write (maintainers) compares with matrix/data/ of the gpuimg checkout you
are in and folds the new rows into those files: comments and layout stay,
each changed file is replaced whole after the set loads. Outside a checkout
it is refused.

--wheel-archs reads a new torch variant's compiled architectures from its
wheel's torch/lib/libtorch_cuda.so with gpuimg validate's fat-binary
scanner, fetching by HTTP range requests only the zip's central directory
and that member (hundreds of MB per variant, never the whole wheel).
Without it the nearest older variant's list is copied, with a note.

Facts no machine-readable source gives (a CUDA release's driver floor, a
wheel variant's stable/experimental label, cuDNN's CUDA minors) are listed
on stderr and in the overlay's comments as "could not fill"; see
docs/matrix-data.md, "Keeping the data fresh".`,
		Example: `  # What is new upstream? (exit 1 if anything; for nightly CI)
  gpuimg matrix update --check

  # Write the overlay, reading new torch variants' architectures, and use it
  gpuimg matrix update --wheel-archs --file upstream.yaml
  gpuimg matrix resolve --matrix-file upstream.yaml --torch latest

  # In a gpuimg checkout: fold the new rows into matrix/data/
  gpuimg matrix update --write --only tensorflow,cudnn,nccl

  # Behind mirrors
  gpuimg matrix update --torch-index-url https://mirror.example.com/pytorch/whl \
    --pypi-url https://pypi-mirror.example.com --registry-mirror docker.io=registry-mirror.example.com --only torch,jax,images`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkUpdateFormat(cmd.Flags(), o.Output); err != nil {
				return err
			}
			opts, err := o.upstreamOptions()
			if err != nil {
				return err
			}
			db, err := o.load(mo)
			if err != nil {
				return err
			}
			stderr := chatter(cmd)
			opts = append(opts, upstream.WithProgress(func(s upstream.Source, msg string) { fmt.Fprintf(stderr, "%s: %s\n", s, msg) }))
			ov, err := upstream.Update(cmd.Context(), db, opts...)
			if err != nil {
				return updateError(err)
			}
			return renderUpdate(cmd, o, ov)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// updateError adds the fix to an upstream error; all are exit 2.
func updateError(err error) error {
	if _, ok := errors.AsType[*upstream.IntegrityError](err); ok {
		return invalid(err, "the index serves metadata that does not match its own page: retry later, or point --torch-index-url at an intact mirror")
	}
	return invalid(err, "check that the source is reachable and its flag (--torch-index-url, --pypi-url, --cuda-redist-url, --cudnn-redist-url, --nccl-redist-url, --registry-mirror) points at it")
}

func renderUpdate(cmd *cobra.Command, o *UpdateOptions, ov *upstream.Overlay) error {
	stdout, stderr := cmd.OutOrStdout(), chatter(cmd)
	for _, u := range ov.Unfilled {
		fmt.Fprintf(stderr, "could not fill: %s\n", u)
	}
	b, err := ov.Marshal()
	if err != nil {
		return err
	}
	if err := o.writeOverlay(stderr, ov, b); err != nil {
		return err
	}
	switch {
	case o.Output == "json":
		if err := writeJSON(stdout, newUpdateReport(ov, o.File)); err != nil {
			return err
		}
	case o.Check:
		for _, f := range ov.Found {
			fmt.Fprintln(stdout, f)
		}
		if ov.Empty() {
			fmt.Fprintln(stdout, "the matrix has everything upstream publishes")
		}
	case !o.Write && o.File == "":
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	}
	return checkVerdict(o.Check, ov)
}

// writeOverlay folds the overlay (b, its text) into the checkout's data
// with --write, and writes it to --file.
func (o *UpdateOptions) writeOverlay(stderr io.Writer, ov *upstream.Overlay, b []byte) error {
	if o.Write {
		if err := writeData(stderr, o.dataDir, ov); err != nil {
			return err
		}
	}
	if o.File == "" {
		return nil
	}
	if err := atomicfile.Write(o.File, b); err != nil {
		return invalid(err, "choose a writable --file path")
	}
	if !o.Write {
		fmt.Fprintf(stderr, "wrote %s (%d new or extended rows)\n", o.File, len(ov.Found))
	}
	return nil
}

// checkVerdict is --check's exit: 1 when upstream has rows the matrix
// lacks.
func checkVerdict(check bool, ov *upstream.Overlay) error {
	if !check || ov.Empty() {
		return nil
	}
	return &Error{Err: fmt.Errorf("upstream has %d rows the matrix lacks", len(ov.Found)),
		Hint: "write them with gpuimg matrix update --file FILE, review the could-not-fill facts, and add the rows to the data", Code: ExitFailed}
}

// writeData folds ov into dir, the matrix/data/ of a checkout
// (upstream.WriteData: nothing is replaced unless every folded file is
// written and loads), and lists what it wrote on stderr.
func writeData(stderr io.Writer, dir string, ov *upstream.Overlay) error {
	if ov.Empty() {
		fmt.Fprintf(stderr, "%s is up to date; nothing written\n", dir)
		return nil
	}
	written, err := upstream.WriteData(dir, ov)
	for _, p := range written {
		fmt.Fprintf(stderr, "wrote %s\n", p)
	}
	if err != nil {
		return dataError(err)
	}
	for _, inc := range ov.Incomplete {
		fmt.Fprintf(stderr, "not written: %s: %s\n", inc.Row, inc.Reason)
	}
	return nil
}

// dataError names --write in an upstream.DataError and adds the fix for
// its step.
func dataError(err error) error {
	de, ok := errors.AsType[*upstream.DataError](err)
	if !ok {
		return fmt.Errorf("--write: %w", err)
	}
	switch de.Step {
	case upstream.DataFind:
		return invalid(fmt.Errorf("--write: %w", err), "run it from a clone of github.com/gpuimg/gpuimg, or write an overlay with --file FILE")
	case upstream.DataLoad:
		return invalid(err, "fix the data file (format: docs/matrix-data.md)")
	case upstream.DataRead:
		return invalid(fmt.Errorf("--write: %w", err), "restore the file from git")
	case upstream.DataFold:
		return invalid(fmt.Errorf("--write: %w", err), "fix the file, or write an overlay with --file FILE and fold it by hand")
	case upstream.DataStage:
		return invalid(err, "make matrix/data writable")
	case upstream.DataRename:
		return fmt.Errorf("--write %s: %w", de.Path, err)
	}
	return fmt.Errorf("--write: %w", err) // DataCheck: a gpuimg bug, exit 1
}

// checkUpdateFormat refuses an -o that is no format: until issue 46,
// matrix update's -o was the overlay file, which is --file now.
func checkUpdateFormat(fs *pflag.FlagSet, output string) error {
	err := checkFormat(fs)
	if err == nil || !strings.ContainsAny(output, "./") {
		return err
	}
	return invalid(fmt.Errorf("-o %s: -o is the output format (yaml or json), not the overlay file", output),
		"write the overlay with --file "+output)
}

// updateReport is matrix update -o json: what upstream has that the
// matrix lacks, the facts no source gives, the rows left out, and the
// overlay file written.
type updateReport struct {
	Date       string             `json:"date"`
	File       string             `json:"file,omitempty"`
	Found      []updateFinding    `json:"found"`
	Unfilled   []updateUnfilled   `json:"unfilled"`
	Incomplete []updateIncomplete `json:"incomplete"`
}

type updateFinding struct {
	Source string `json:"source"`
	What   string `json:"what"`
	URL    string `json:"url"`
}

type updateUnfilled struct {
	Source string `json:"source"`
	Row    string `json:"row"`
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

type updateIncomplete struct {
	Source string `json:"source"`
	Row    string `json:"row"`
	Reason string `json:"reason"`
}

func newUpdateReport(ov *upstream.Overlay, file string) updateReport {
	r := updateReport{Date: ov.Date, File: file, Found: []updateFinding{}, Unfilled: []updateUnfilled{}, Incomplete: []updateIncomplete{}}
	for _, f := range ov.Found {
		r.Found = append(r.Found, updateFinding{Source: string(f.Source), What: f.What, URL: f.URL})
	}
	for _, u := range ov.Unfilled {
		r.Unfilled = append(r.Unfilled, updateUnfilled{Source: string(u.Source), Row: u.Row, Field: u.Field, Reason: u.Reason})
	}
	for _, i := range ov.Incomplete {
		r.Incomplete = append(r.Incomplete, updateIncomplete{Source: string(i.Source), Row: i.Row, Reason: i.Reason})
	}
	return r
}

package cli

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix/upstream"
)

// UpdateOptions are the flags of `matrix update`.
type UpdateOptions struct {
	// Output is the overlay file to write; "" prints it on stdout.
	Output string
	// Check exits 1 when upstream has rows the matrix lacks.
	Check bool
	// Only lists the sources read (torch,jax,cuda,images).
	Only          string
	TorchIndexURL string
	PyPIURL       string
	CUDARedistURL string
	// CUDAImageRepo is the repository whose tags the images source lists;
	// Mirrors (REGISTRY=MIRROR) are read instead of their registries.
	CUDAImageRepo string
	Mirrors       []string
	// Registry is how the images source reaches registries.
	Registry RegistryOptions
}

// AddFlags binds the options to flags.
func (o *UpdateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "", "write the overlay to FILE (atomically) instead of stdout")
	fs.BoolVar(&o.Check, "check", false, "exit 1 when upstream has rows the matrix lacks, listing them (for nightly CI)")
	fs.StringVar(&o.Only, "only", "torch,jax,cuda,images", "sources to read, comma-separated: torch, jax, cuda, images")
	fs.StringVar(&o.TorchIndexURL, "torch-index-url", upstream.DefaultTorchIndexURL, "PyTorch wheel index base: BASE/torch/ lists every variant (PEP 503/658)")
	fs.StringVar(&o.PyPIURL, "pypi-url", upstream.DefaultPyPIURL, "PyPI host whose JSON API (BASE/pypi/NAME/json) is read")
	fs.StringVar(&o.CUDARedistURL, "cuda-redist-url", upstream.DefaultCUDARedistURL, "directory of NVIDIA's redistrib_X.Y.Z.json manifests")
	fs.StringVar(&o.CUDAImageRepo, "cuda-image-repo", upstream.DefaultCUDAImageRepo, "repository of NVIDIA's CUDA base images, whose tags the images source lists")
	fs.StringArrayVar(&o.Mirrors, "registry-mirror", nil, "registry mirror REGISTRY=MIRROR, e.g. docker.io=mirror.example.com (repeatable)")
	o.Registry.AddFlags(fs)
}

// upstreamOptions turns the flags into upstream.Options.
func (o *UpdateOptions) upstreamOptions() ([]upstream.Option, error) {
	sources, err := upstream.ParseSources(o.Only)
	if err != nil {
		return nil, invalid(err, "use --only with torch, jax, cuda and/or images")
	}
	mirrors, err := images.ParseMirrors(o.Mirrors)
	if err != nil {
		return nil, invalid(err, "write --registry-mirror as docker.io=mirror.example.com")
	}
	reg, err := o.Registry.Options()
	if err != nil {
		return nil, err
	}
	return []upstream.Option{
		upstream.WithRegistry(mirrors, reg...),
		upstream.WithCUDAImageRepo(o.CUDAImageRepo),
		upstream.WithSources(sources...),
		upstream.WithTorchIndexURL(o.TorchIndexURL),
		upstream.WithPyPIURL(o.PyPIURL),
		upstream.WithCUDARedistURL(o.CUDARedistURL),
		upstream.WithHTTPClient(&http.Client{Timeout: 2 * time.Minute}),
	}, nil
}

func newUpdateCmd(mo *MatrixOptions) *cobra.Command {
	o := &UpdateOptions{}
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Read upstream's indexes and write the matrix rows the data lacks as an overlay",
		Long: `update reads upstream's machine-readable sources, and only those: PyTorch's
all-variants wheel index with each wheel's core metadata (PEP 503/658/714,
no wheel download), PyPI's JSON API for jax and its CUDA plugins,
NVIDIA's CUDA redistrib manifests, and the tags of nvidia/cuda (through
--registry-mirror when set) with each new release's image config. It prints the rows the matrix (built-in
plus --matrix-file) lacks as a --matrix-file overlay, each with its source
URL and the date read. Metadata whose sha256 differs from the index page's
is an error (exit 2), never a row.

--check prints what the matrix lacks, one line each, and exits 1 if
anything (0 if nothing); with --check the overlay is only written with -o.

Facts no machine-readable source gives (a CUDA release's driver floor, a
wheel variant's stable/experimental label, compiled architectures) are
listed on stderr and in the overlay's comments as "could not fill"; see
docs/matrix-data.md, "Keeping the data fresh".`,
		Example: `  # What is new upstream? (exit 1 if anything; for nightly CI)
  gpuimg matrix update --check

  # Write the overlay and use it
  gpuimg matrix update -o upstream.yaml
  gpuimg matrix resolve --matrix-file upstream.yaml --torch latest

  # Behind mirrors
  gpuimg matrix update --torch-index-url https://mirror.example.com/pytorch/whl \
    --pypi-url https://pypi-mirror.example.com --registry-mirror docker.io=registry-mirror.example.com --only torch,jax,images`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := o.upstreamOptions()
			if err != nil {
				return err
			}
			db, err := mo.Load()
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
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
	return invalid(err, "check that the source is reachable and its flag (--torch-index-url, --pypi-url, --cuda-redist-url, --registry-mirror) points at it")
}

func renderUpdate(cmd *cobra.Command, o *UpdateOptions, ov *upstream.Overlay) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, u := range ov.Unfilled {
		fmt.Fprintf(stderr, "could not fill: %s\n", u)
	}
	b, err := ov.Marshal()
	if err != nil {
		return err
	}
	switch {
	case o.Output != "":
		if err := writeFileAtomic(o.Output, b); err != nil {
			return invalid(err, "choose a writable -o path")
		}
		fmt.Fprintf(stderr, "wrote %s (%d new or extended rows)\n", o.Output, len(ov.Found))
	case !o.Check:
		if _, err := stdout.Write(b); err != nil {
			return err
		}
	}
	if !o.Check {
		return nil
	}
	for _, f := range ov.Found {
		fmt.Fprintln(stdout, f)
	}
	if !ov.Empty() {
		return &Error{Err: fmt.Errorf("upstream has %d rows the matrix lacks", len(ov.Found)),
			Hint: "write them with gpuimg matrix update -o FILE, review the could-not-fill facts, and add the rows to the data", Code: ExitFailed}
	}
	fmt.Fprintln(stdout, "the matrix has everything upstream publishes")
	return nil
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory and a rename, so that path never holds half a file.
func writeFileAtomic(path string, b []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

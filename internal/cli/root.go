// Package cli holds gpuimg's cobra commands: each binds flags to an options
// struct, calls one library package, and renders the result. Results go to
// stdout; errors and progress go to stderr.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs gpuimg with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		if in, ok := interrupted(ctx); ok {
			// What was cancelled says "context canceled"; say why.
			printError(stderr, fmt.Errorf("%w; stopped: %w", in, err))
			return in.ExitCode()
		}
		if errors.Is(err, syscall.ENOSPC) {
			err = &Error{Err: err, Hint: "the disk is full: free space there, or write elsewhere (temporary files go to $TMPDIR); nothing half-written was left", Code: exitCode(err)}
		}
		printError(stderr, err)
		return exitCode(err)
	}
	return ExitOK
}

// NewRoot builds the gpuimg command tree.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "gpuimg",
		Short: "Build, validate and publish container images for GPU software stacks",
		Long: `gpuimg turns "CUDA 12.2 with PyTorch 2.3" into a fully pinned, checked stack
(driver floor, cuDNN, NCCL, Python, base image, GPU architectures), and
builds, validates and publishes container images from it.

Every fact gpuimg uses comes from a public source recorded in its matrix:
see "gpuimg matrix list sources".`,
		Example: `  # What would a CUDA 12.2 image with PyTorch 2.3 contain?
  gpuimg matrix resolve --cuda 12.2 --torch 2.3

  # Will that stack run on our hosts (driver 535, H100)?
  gpuimg matrix check --cuda 12.2 --torch 2.3 --driver 535.104.05 --gpu h100

  # Build it, check what is inside, publish it
  gpuimg build --cuda 12.2 --torch 2.3 -t registry.example.com/ml/torch:2.3 --push
  gpuimg validate registry.example.com/ml/torch:2.3 --driver 535.104.05 --gpu h100 --attach
  gpuimg images copy registry.example.com/ml/torch:2.3 mirror.example.com/ml/torch:2.3`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return invalid(err, fmt.Sprintf("see %s --help", c.CommandPath()))
	})
	root.AddCommand(newVersionCmd(), newMatrixCmd(), newBuildCmd(), newBuilderCmd(), newValidateCmd(), newImagesCmd(), newProbeCmd(), newPublishCmd())
	return root
}

type versionInfo struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Revision = s.Value
			}
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print gpuimg's version",
		Args:    cobra.NoArgs,
		Example: "  gpuimg version\n  gpuimg version -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			switch output {
			case "json":
				return writeJSON(cmd.OutOrStdout(), v)
			case "text", "":
				fmt.Fprintf(cmd.OutOrStdout(), "gpuimg %s", v.Version)
				if v.Revision != "" {
					fmt.Fprintf(cmd.OutOrStdout(), " (%s)", v.Revision)
				}
				fmt.Fprintf(cmd.OutOrStdout(), " %s %s\n", v.GoVersion, v.Platform)
				return nil
			}
			return invalid(fmt.Errorf("unknown output format %q", output), "use -o text or -o json")
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

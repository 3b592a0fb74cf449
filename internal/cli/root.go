// Package cli holds gpuimg's cobra commands: each binds flags to an options
// struct, calls one library package, and renders the result. Results go to
// stdout; errors and progress go to stderr.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/internal/redact"
)

// Main runs gpuimg with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// A password in a URL-bearing argument (a mirror, an index URL) is
	// masked in everything printed, whichever code path prints it.
	if secrets := redact.Passwords(args); len(secrets) > 0 {
		o, e := redact.NewWriter(stdout, secrets), redact.NewWriter(stderr, secrets)
		defer func() { _ = o.Flush(); _ = e.Flush() }()
		stdout, stderr = o, e
	}
	out := &countingWriter{Writer: stdout} // an error object goes where nothing else went
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	if in, ok := interrupted(ctx); ok {
		// What was cancelled says "context canceled"; say why. A hint
		// about the input ("fix the publish file") is not why it
		// stopped: drop it.
		if e, ok := errors.AsType[*Error](err); ok {
			err = e.Err
		}
		err, code = fmt.Errorf("%w; stopped: %w", in, err), in.ExitCode()
	} else if errors.Is(err, syscall.ENOSPC) {
		err = &Error{Err: err, Hint: "the disk is full: free space there, or write elsewhere (temporary files go to $TMPDIR); nothing half-written was left", Code: code}
	}
	printError(stderr, err)
	writeErrorObject(out, cmd, args, err, code)
	return code
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
	addScreenFlags(root.PersistentFlags())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if e, ok := errors.AsType[*Error](err); ok { // a flag value's own error (nonEmpty) says what to do
			if e.Flag == "" {
				e.Flag = pflagCulprit(err) // pflag's wrapper, dropped here, names the flag
			}
			return e
		}
		return invalid(err, fmt.Sprintf("see %s --help", c.CommandPath()))
	})
	root.AddCommand(newVersionCmd(), newMatrixCmd(), newBuildCmd(), newBuilderCmd(), newValidateCmd(), newSBOMCmd(), newImagesCmd(), newProbeCmd(), newPublishCmd(), newSignCmd(), newVerifyCmd())
	root.AddCommand(newCaptureCmd(), newDiffCmd(), newKeygenCmd(), newLoginCmd(), newLogoutCmd())
	// --version as docker, skopeo and crane users type it: the same line
	// as gpuimg version (a template without actions prints as it is).
	root.Version = buildVersion().Version
	root.SetVersionTemplate(strings.ReplaceAll(versionText(buildVersion()), "{{", "{{`{{`}}"))
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newCompletionCmd())
	registerValueCompletions(root)
	for _, c := range root.Commands() {
		refuseUnknownSubcommands(c)
	}
	// A group runs only to refuse what is not its subcommand: its usage
	// stays "gpuimg matrix [command]", without a runnable line of its own.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "Usage:{{if .Runnable}}", "Usage:{{if and .Runnable (not (index .Annotations \""+groupAnnotation+"\"))}}", 1))
	explainArgs(root)
	requireValues(root)
	return root
}

// explainArgs makes the argument errors of c and its subcommands
// (cobra's "accepts 1 arg(s), received 0") name the command and show its
// usage line.
func explainArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		explainArgs(sub)
	}
	if c.Args == nil {
		return
	}
	args := c.Args
	c.Args = func(cmd *cobra.Command, a []string) error {
		err := args(cmd, a)
		var e *Error
		if err == nil || errors.As(err, &e) {
			return err
		}
		path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") // printError says "gpuimg: "
		return invalid(fmt.Errorf("%s: %w", path, err), "usage: "+cmd.UseLine())
	}
}

// groupAnnotation marks a group of commands that runs only to refuse
// what is not its subcommand (refuseUnknownSubcommands).
const groupAnnotation = "gpuimg_group"

// refuseUnknownSubcommands makes c and every group of commands under it
// (matrix, images, builder, …) refuse an argument that names none of its
// subcommands: cobra prints the group's help and exits 0 for
// "gpuimg matrix frob". Without arguments a group prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[groupAnnotation] = "true"
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default for the root
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var names []string
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		hint := "use one of: " + strings.Join(names, ", ")
		if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
			hint = "did you mean " + sug[0] + "? " + hint
		}
		return invalid(fmt.Errorf("unknown command %q for %s", args[0], cmd.CommandPath()), hint)
	}
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

// versionText is gpuimg version's line: "gpuimg v1.2.0 (rev) go1.25 linux/amd64".
func versionText(v versionInfo) string {
	s := "gpuimg " + v.Version
	if v.Revision != "" {
		s += " (" + v.Revision + ")"
	}
	return s + " " + v.GoVersion + " " + v.Platform + "\n"
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print gpuimg's version",
		Args:    cobra.NoArgs,
		Example: "  gpuimg version\n  gpuimg version -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			v := buildVersion()
			return render(cmd.OutOrStdout(), output, v, func() error {
				_, err := io.WriteString(cmd.OutOrStdout(), versionText(v))
				return err
			})
		},
	}
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/matrix"
)

// completionShells are the shells gpuimg writes completion scripts for,
// with the script's generator.
func completionShells() []struct {
	name string
	gen  func(root *cobra.Command, w io.Writer, desc bool) error
} {
	return []struct {
		name string
		gen  func(root *cobra.Command, w io.Writer, desc bool) error
	}{
		{"bash", func(r *cobra.Command, w io.Writer, desc bool) error { return r.GenBashCompletionV2(w, desc) }},
		{"zsh", func(r *cobra.Command, w io.Writer, desc bool) error {
			if desc {
				return r.GenZshCompletion(w)
			}
			return r.GenZshCompletionNoDesc(w)
		}},
		{"fish", func(r *cobra.Command, w io.Writer, desc bool) error { return r.GenFishCompletion(w, desc) }},
		{"powershell", func(r *cobra.Command, w io.Writer, desc bool) error {
			if desc {
				return r.GenPowerShellCompletionWithDesc(w)
			}
			return r.GenPowerShellCompletion(w)
		}},
	}
}

// newCompletionCmd replaces cobra's default completion command, which
// prints its help and exits 0 for a shell it does not know, and captures
// its output writer when it is created.
func newCompletionCmd() *cobra.Command {
	var names []string
	for _, s := range completionShells() {
		names = append(names, s.name)
	}
	var noDesc bool
	cmd := &cobra.Command{
		Use:   "completion " + strings.Join(names, "|"),
		Short: "Write the shell completion script for gpuimg",
		Long: `completion writes the script that completes gpuimg's commands, flags and
flag values (GPUs, targets, framework and CUDA versions, OS names, flavors,
output formats, all read from the matrix) for one shell.`,
		Example: `  source <(gpuimg completion bash)                     # bash, this shell
  gpuimg completion zsh > "${fpath[1]}/_gpuimg"        # zsh
  gpuimg completion fish | source                      # fish
  gpuimg completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: names,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) != 1:
				return invalid(fmt.Errorf("completion takes one shell, got %d", len(args)), "use one of "+strings.Join(names, ", "))
			case !slices.Contains(names, args[0]):
				return invalid(fmt.Errorf("unknown shell %q", args[0]), "gpuimg writes completion scripts for "+strings.Join(names, ", "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, s := range completionShells() {
				if s.name == args[0] {
					return s.gen(cmd.Root(), cmd.OutOrStdout(), !noDesc)
				}
			}
			return nil // Args checked the name
		},
	}
	cmd.Flags().BoolVar(&noDesc, "no-descriptions", false, "complete without descriptions")
	return cmd
}

// registerValueCompletions gives every flag of c and its subcommands that
// names a matrix value (--gpu, --target, --torch, --cuda, --os, --flavor,
// …) and every outputFlag a completion function.
func registerValueCompletions(c *cobra.Command) {
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if fn := valueCompletion(f); fn != nil {
			_ = c.RegisterFlagCompletionFunc(f.Name, fn) // each flag once: a command's own flags
		}
	})
	for _, sub := range c.Commands() {
		registerValueCompletions(sub)
	}
}

func valueCompletion(f *pflag.Flag) cobra.CompletionFunc {
	if formats := f.Annotations[formatsAnnotation]; len(formats) > 0 {
		return cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp)
	}
	var values func(db *matrix.DB) []string
	list := false // a comma-separated list: complete its last entry
	switch f.Name {
	case "gpu":
		values, list = gpuValues, true
	case "target":
		values = func(db *matrix.DB) []string {
			var out []string
			for _, t := range db.Targets {
				out = append(out, t.Name)
			}
			return out
		}
	case "torch", "tensorflow", "jax":
		name := f.Name
		values = func(db *matrix.DB) []string { return append([]string{"latest"}, frameworkVersions(db, name)...) }
	case "cuda":
		values = func(db *matrix.DB) []string {
			var vs []matrix.Version
			for _, r := range db.CUDA {
				vs = append(vs, r.Version)
			}
			return withMinors(vs)
		}
	case "cudnn":
		values = func(db *matrix.DB) []string {
			var vs []matrix.Version
			for _, r := range db.CuDNN {
				vs = append(vs, r.Version)
			}
			return withMinors(vs)
		}
	case "python":
		values = func(db *matrix.DB) []string {
			var out []string
			for _, o := range db.OS {
				for _, p := range o.Pythons {
					out = appendNew(out, p.String())
				}
			}
			return out
		}
	case "os":
		values = func(db *matrix.DB) []string {
			var out []string
			for _, o := range db.OS {
				out = appendNew(out, o.Name)
			}
			for _, o := range db.OS {
				out = appendNew(out, o.Family)
			}
			return out
		}
	case "flavor":
		return cobra.FixedCompletions([]string{"base", "runtime", "devel"}, cobra.ShellCompDirectiveNoFileComp)
	case "signature-format":
		return cobra.FixedCompletions([]string{string(sign.FormatBundle), string(sign.FormatLegacy), string(sign.FormatBoth)}, cobra.ShellCompDirectiveNoFileComp)
	default:
		return nil
	}
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		files, _ := cmd.Flags().GetStringArray("matrix-file")
		db, err := matrix.Load(files...)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		prefix := ""
		if i := strings.LastIndex(toComplete, ","); list && i >= 0 {
			prefix, toComplete = toComplete[:i+1], toComplete[i+1:]
		}
		var out []cobra.Completion
		for _, v := range values(db) {
			if strings.HasPrefix(strings.ToLower(v), strings.ToLower(toComplete)) {
				out = append(out, prefix+v)
			}
		}
		dir := cobra.ShellCompDirectiveNoFileComp
		if list {
			dir |= cobra.ShellCompDirectiveNoSpace // another GPU may follow a comma
		}
		return out, dir
	}
}

// gpuValues are the names --gpu takes: each GPU row's aliases (h100) and
// name, and the architectures (sm_90).
func gpuValues(db *matrix.DB) []string {
	var out []string
	for _, g := range db.GPUs {
		for _, a := range g.Aliases {
			out = appendNew(out, a)
		}
		out = appendNew(out, strings.ToLower(g.Name))
	}
	for _, a := range db.Archs {
		out = appendNew(out, a.Arch)
	}
	return out
}

// frameworkVersions are a framework's releases, newest first, each
// major.minor before its releases (2.7, 2.7.1, 2.7.0).
func frameworkVersions(db *matrix.DB, name string) []string {
	var vs []matrix.Version
	switch name {
	case matrix.FrameworkTorch:
		for _, r := range db.Torch {
			vs = append(vs, r.Version)
		}
	case matrix.FrameworkTensorFlow:
		for _, r := range db.TensorFlow {
			vs = append(vs, r.Version)
		}
	case matrix.FrameworkJAX:
		for _, r := range db.JAX {
			vs = append(vs, r.Version)
		}
	}
	return withMinors(vs)
}

// withMinors lists versions (newest first, as the matrix sorts them),
// each major.minor before the first version of it.
func withMinors(vs []matrix.Version) []string {
	var out []string
	for _, v := range vs {
		out = appendNew(out, v.Trunc(2).String())
		out = appendNew(out, v.String())
	}
	return out
}

func appendNew(out []string, v string) []string {
	if v == "" || slices.Contains(out, v) {
		return out
	}
	return append(out, v)
}

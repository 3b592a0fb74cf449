package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/humanize"
)

func newInspectCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "inspect REF",
		Short: "Show an image's digest, platforms, size, config and what is attached to it",
		Long: `inspect reads a registry image's manifest (each platform's, for an index) and
configs, and lists what refers to it, without reading a layer: what crane
manifest, crane config and skopeo inspect show together, plus the
signatures, attestations, SBOMs and validation reports attached to the
image or its platforms (the OCI Referrers API, its sha256-<hex> tag
fallback, and cosign v2's .sig/.att/.sbom tags).

Size is what a pull moves: manifests, configs and compressed layers, a
layer shared by platforms once.`,
		Example: `  gpuimg images inspect registry.example.com/ml/torch:2.3-cu122
  gpuimg images inspect registry.example.com/ml/torch:2.3-cu122 -o json | jq '.referrers[].kind'
  gpuimg images inspect registry.example.com/ml/torch:2.3-cu122 -o json | jq -r '.platforms[0].config.labels["dev.gpuimg.stack"]'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			opts, err := ro.Options()
			if err != nil {
				return err
			}
			in, err := images.Inspect(cmd.Context(), args[0], opts...)
			if err != nil {
				return invalid(err, "")
			}
			w := cmd.OutOrStdout()
			return render(w, output, in, func() error { return renderInspection(w, in) })
		},
	}
	ro.AddFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

// maxLabelText is how much of a label's value the text output shows (the
// stack label is a JSON document; -o json has it whole).
const maxLabelText = 100

func renderInspection(w io.Writer, in *images.Inspection) error {
	fmt.Fprintf(w, "reference:  %s\ndigest:     %s\nmedia type: %s\nsize:       %s\n", in.Reference, in.Digest, in.MediaType, humanize.Bytes(in.Size))
	for _, p := range in.Platforms {
		fmt.Fprintf(w, "platform %s: %s (%d layers, %s)\n", orDash(p.Platform), p.Digest, p.Layers, humanize.Bytes(p.Size))
		c := p.Config
		fmt.Fprintf(w, "  user:       %s\n  workdir:    %s\n  entrypoint: %s\n  cmd:        %s\n",
			orDash(c.User), orDash(c.WorkingDir), orDash(strings.Join(c.Entrypoint, " ")), orDash(strings.Join(c.Cmd, " ")))
		for _, e := range c.Env {
			fmt.Fprintf(w, "  env:        %s\n", e)
		}
		for _, k := range c.SortedLabels() {
			v := c.Labels[k]
			if len(v) > maxLabelText {
				v = v[:maxLabelText] + "… (-o json has it whole)"
			}
			fmt.Fprintf(w, "  label:      %s=%s\n", k, v)
		}
	}
	if len(in.Referrers) == 0 {
		_, err := fmt.Fprintln(w, "referrers:  none")
		return err
	}
	fmt.Fprintln(w, "referrers:")
	for _, r := range in.Referrers {
		at := r.Tag
		if at == "" {
			at = "of " + r.Subject
		}
		fmt.Fprintf(w, "  %s  %s (%s)\n", r.Digest, r.Kind, at)
	}
	return nil
}

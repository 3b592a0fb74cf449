package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/internal/publish"
)

func newExpandCmd(mo *MatrixOptions) *cobra.Command {
	var file, output, contextDir string
	cmd := &cobra.Command{
		Use:   "expand -f publish.yaml",
		Short: "List the images a publish file stands for, without building anything",
		Long: `expand resolves every combination of a publish file's matrix (docs/publish.md):
the product of its axes, minus exclude, plus include. A combination the
resolver refuses is skipped with the resolver's reason; combinations that
resolve to the same stack give one variant. Each variant has a tag rendered
from the file's template and an inputs digest over what decides its content.

No daemon or registry is needed: the inputs digest printed here covers the
stack, the generated Dockerfile (FROM the base's tag), the build extras, the
platforms and gpuimg's build version; gpuimg publish also folds in the
pinned base image digest and the copied files.

Outputs: text (or table); json (the plan); github (a strategy.matrix for
fromJSON, on one line, at most 256 jobs); bake (a Docker Bake file for
docker buildx bake -f).

With -o bake, --context-dir DIR also writes each target's build context
into DIR/TARGET (the Dockerfile, ending in the image's LABEL lines, and
every file it mounts) and the Bake file, pointing at them, into
DIR/docker-bake.json: docker buildx bake builds it in DIR without gpuimg.`,
		Example: `  gpuimg matrix expand -f publish.yaml
  gpuimg matrix expand -f publish.yaml -o json | jq -r '.variants[].tag'

  # GitHub Actions: one job per variant
  echo "matrix=$(gpuimg matrix expand -f publish.yaml -o github)" >> "$GITHUB_OUTPUT"

  # Docker Bake
  gpuimg matrix expand -f publish.yaml -o bake > bake.json
  docker buildx bake -f bake.json --print

  # A Bake file with every build context, to build without gpuimg
  gpuimg matrix expand -f publish.yaml -o bake --context-dir ctx
  cd ctx && docker buildx bake -f docker-bake.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			if contextDir != "" && output != "bake" {
				return invalid(errors.New("--context-dir writes the build contexts of a Bake file"), "add -o bake")
			}
			f, err := publish.LoadFile(file)
			if err != nil {
				return invalid(err, "fix the publish file (format: docs/publish.md)")
			}
			db, err := mo.Load()
			if err != nil {
				return err
			}
			plan, err := publish.Expand(cmd.Context(), db, f, publish.ExpandOptions{})
			if err != nil {
				return invalid(err, "fix the publish file (format: docs/publish.md)")
			}
			if contextDir != "" {
				return writeBakeContexts(cmd.OutOrStdout(), contextDir, plan, f)
			}
			return renderPlan(cmd.OutOrStdout(), output, plan, f)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "publish.yaml", "publish file (docs/publish.md)")
	cmd.Flags().StringVar(&contextDir, "context-dir", "", "with -o bake: also write each target's build context into DIR/TARGET and the Bake file into DIR/docker-bake.json, for docker buildx bake in DIR")
	outputFlag(cmd.Flags(), &output, "output", "text", "json", "github", "bake")
	return cmd
}

// BakeFileName is the Bake file matrix expand --context-dir writes in
// its directory.
const BakeFileName = "docker-bake.json"

// writeBakeContexts writes the build context of each of plan's bake
// targets and the Bake file pointing at them into dir, and prints the
// Bake file on w. The Bake file is written last, once every context is.
func writeBakeContexts(w io.Writer, dir string, plan *publish.Plan, f *publish.File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return invalid(fmt.Errorf("--context-dir: %w", err), "")
	}
	b, err := publish.BakeContexts(plan, f, publish.ExpandOptions{}, dir, ".")
	if err != nil {
		return invalid(fmt.Errorf("--context-dir %s: %w", dir, err), "")
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, b); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, BakeFileName), buf.Bytes()); err != nil {
		return invalid(fmt.Errorf("--context-dir %s: %w", dir, err), "")
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func renderPlan(w io.Writer, output string, plan *publish.Plan, f *publish.File) error {
	switch output {
	case "github":
		m, err := publish.GitHubMatrix(plan)
		if errors.Is(err, publish.ErrTooManyJobs) {
			return &Error{Err: err, Hint: "split the matrix over several publish files, or over several workflows", Code: ExitFailed}
		}
		if err != nil {
			return err
		}
		return writeCompactJSON(w, m) // one line: "matrix=$(…)" >> $GITHUB_OUTPUT
	case "bake":
		b, err := publish.Bake(plan, f, publish.ExpandOptions{})
		if err != nil {
			return invalid(err, "")
		}
		return writeJSON(w, b)
	}
	return render(w, output, plan, func() error {
		t := newTable(w, 0)
		t.row("NAME", "STACK", "INPUTS")
		for _, v := range plan.Variants {
			t.row(v.Name, v.Stack.Summary(), v.Inputs)
		}
		var marked []publish.Variant
		for _, v := range plan.Variants {
			if v.Validation != "" {
				marked = append(marked, v)
			}
		}
		if len(marked) > 0 {
			t.row("")
			t.row("WOULD FAIL VALIDATION", "WHY (built, never tagged)")
			for _, v := range marked {
				t.row(v.Name, v.Validation)
			}
		}
		if len(plan.Skipped) > 0 {
			t.row("")
			t.row("SKIPPED", "REASON")
			for _, s := range plan.Skipped {
				t.row(publish.AxesString(s.Axes), s.Reason)
			}
		}
		return t.flush()
	})
}

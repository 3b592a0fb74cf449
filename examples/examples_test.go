package examples

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestExamplesLoad keeps the example files valid.
func TestExamplesLoad(t *testing.T) {
	cfg, err := builder.LoadConfig("gpuimg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CUDA != "12.2" || cfg.Torch != "2.3" || len(cfg.Pip) != 2 || !cfg.Push {
		t.Errorf("gpuimg.yaml = %+v", cfg)
	}
	db, err := matrix.Load("matrix-internal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tc := matrix.MustConstraint("2.3.1.99")
	s, err := db.Resolve(matrix.Constraints{Torch: &tc, GPU: "h100"})
	if err != nil {
		t.Fatal(err)
	}
	if fw := s.Frameworks["torch"]; fw.Version != "2.3.1.99" || fw.IndexURL != "https://pypi.example.com/ml/simple" || s.CUDA != "12.1.1" {
		t.Errorf("resolved %+v", s)
	}
}

// TestNightlyWorkflow keeps examples/nightly-matrix-update.yml runnable:
// it is a GitHub Actions workflow on a schedule whose update step runs
// `gpuimg matrix update --check` with flags gpuimg has, and a pull
// request step that runs only when that exits 1.
func TestNightlyWorkflow(t *testing.T) {
	b, err := os.ReadFile("nightly-matrix-update.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				ID   string            `yaml:"id"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				If   string            `yaml:"if"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	if _, ok := wf.On["schedule"]; !ok {
		t.Errorf("workflow has no schedule: %v", wf.On)
	}
	var updateID, line string
	prGated := false
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			for l := range strings.SplitSeq(s.Run, "\n") {
				if l = strings.TrimSpace(l); strings.HasPrefix(l, "gpuimg matrix update --check") {
					updateID, line = s.ID, l
				}
			}
			if strings.HasPrefix(s.Uses, "peter-evans/create-pull-request@") {
				prGated = updateID != "" && s.If == "steps."+updateID+".outputs.code == '1'" && s.With["body-path"] != ""
			}
		}
	}
	if line == "" || !prGated {
		t.Fatalf("no `gpuimg matrix update --check` step followed by a pull request step gated on its exit 1 (line %q, gated %v)", line, prGated)
	}
	// The flags of the command line exist (shell redirections and the
	// array expansion left out).
	var args []string
	for _, f := range strings.Fields(line)[1:] {
		if strings.HasPrefix(f, ">") || strings.HasPrefix(f, "2>") || strings.HasPrefix(f, `"$`) {
			continue
		}
		args = append(args, f)
	}
	cmd, rest, err := cli.NewRoot().Find(args)
	if err != nil || cmd.Name() != "update" {
		t.Fatalf("%v does not name gpuimg matrix update: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("gpuimg rejects the workflow's flags %v: %v", rest, err)
	}
	if !cmd.Flags().Changed("check") || !cmd.Flags().Changed("output") {
		t.Errorf("workflow runs %v without --check and -o", rest)
	}
}

// TestPublishExample keeps publish.yaml valid against the built-in matrix:
// it loads, and expands to variants with the refused combination and the
// excluded ones skipped.
func TestPublishExample(t *testing.T) {
	f, err := publish.LoadFile("publish.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Repository != "registry.example.com/ml/torch" || len(f.Matrix) != 3 || len(f.Exclude) != 1 || len(f.Include) != 1 ||
		len(f.Build.Pip) != 1 || len(f.Validate.GPU) != 2 || len(f.Mirrors) != 1 || len(f.Promote.Tags) != 2 {
		t.Errorf("publish.yaml = %+v", f)
	}
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := publish.Expand(t.Context(), db, f, publish.ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range p.Variants {
		names = append(names, v.Name)
	}
	if len(names) != 9 || !slices.Contains(names, "2.7.1-cu128-py3.12") || !slices.Contains(names, "2.9.1-cu130-py3.12") {
		t.Errorf("variants %q", names)
	}
	var reasons []string
	for _, s := range p.Skipped {
		reasons = append(reasons, s.Reason)
	}
	if len(reasons) != 4 || !strings.HasPrefix(reasons[2], "excluded (publish.yaml:") || !strings.Contains(reasons[0], "cannot run them") {
		t.Errorf("skipped %q", reasons)
	}
}

package examples

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
	if cfg.Stack[matrix.FieldCUDA] != "12.2" || cfg.Stack[matrix.FieldTorch] != "2.3" || len(cfg.Pip) != 2 || !cfg.Push {
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
	if !cmd.Flags().Changed("check") || !cmd.Flags().Changed("file") {
		t.Errorf("workflow runs %v without --check and --file", rest)
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
	// Nine variants, each passing the file's own validate: (expand marks a
	// variant whose stack cannot, issue 43 item 8; with driver 535.104.05
	// every one was).
	for _, v := range p.Variants {
		if v.Validation != "" {
			t.Errorf("%s: %s", v.Name, v.Validation)
		}
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

// workflow is a GitHub Actions workflow file, as far as the tests read it.
type workflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix string `yaml:"matrix"`
		} `yaml:"strategy"`
		Outputs map[string]string `yaml:"outputs"`
		Steps   []struct {
			ID   string `yaml:"id"`
			Uses string `yaml:"uses"`
			Run  string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readWorkflow(t *testing.T, file string) workflow {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return wf
}

// gpuimgCommand checks a workflow's `gpuimg …` line against gpuimg's own
// commands and flags: the words after "gpuimg" must name a command and
// parse as its flags (an Actions expression stands for one word; shell
// redirections and "$array" expansions are left out).
func gpuimgCommand(t *testing.T, line string) *cobra.Command {
	t.Helper()
	line = regexp.MustCompile(`"?\$\{\{[^}]*\}\}"?`).ReplaceAllString(line, "VALUE")
	var args []string
	for _, f := range strings.Fields(line)[1:] {
		if strings.HasPrefix(f, ">") || strings.HasPrefix(f, "2>") || strings.HasPrefix(f, `"$`) {
			continue
		}
		args = append(args, f)
	}
	cmd, rest, err := cli.NewRoot().Find(args)
	if err != nil {
		t.Fatalf("%q names no gpuimg command: %v", line, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("gpuimg %s rejects the workflow's flags %v: %v", cmd.Name(), rest, err)
	}
	return cmd
}

// gpuimgLines are the lines of a workflow's run steps that start with
// "gpuimg " and are not its installation.
func gpuimgLines(wf workflow) map[string][]string {
	out := map[string][]string{}
	for name, job := range wf.Jobs {
		for _, s := range job.Steps {
			for l := range strings.SplitSeq(s.Run, "\n") {
				if l = strings.TrimSpace(l); strings.HasPrefix(l, "gpuimg ") {
					out[name] = append(out[name], l)
				}
			}
		}
	}
	return out
}

// TestPublishWorkflows keeps the two publishing workflows runnable: the
// nightly one runs `gpuimg publish` with a report and puts report.md in the
// job summary; the fan-out one plans with `matrix expand -o github` and
// runs one `publish --only` job per entry of that matrix, whose entries
// carry the name --only takes.
func TestPublishWorkflows(t *testing.T) {
	nightly := readWorkflow(t, "nightly-publish.yml")
	if _, ok := nightly.On["schedule"]; !ok {
		t.Errorf("nightly-publish.yml has no schedule")
	}
	published := false
	for _, lines := range gpuimgLines(nightly) {
		for _, l := range lines {
			cmd := gpuimgCommand(t, l)
			if cmd.Name() == "publish" && cmd.Flags().Changed("report-dir") && cmd.Flags().Changed("builder") {
				published = true
			}
		}
	}
	summary := false
	for _, job := range nightly.Jobs {
		for _, s := range job.Steps {
			summary = summary || strings.Contains(s.Run, `report/report.md >>"$GITHUB_STEP_SUMMARY"`)
		}
	}
	if !published || !summary {
		t.Errorf("nightly-publish.yml: publish with --report-dir and --builder %v, report.md in the summary %v", published, summary)
	}

	fan := readWorkflow(t, "publish-fanout.yml")
	lines := gpuimgLines(fan)
	var planJob string
	for name, ls := range lines {
		for _, l := range ls {
			if cmd := gpuimgCommand(t, l); cmd.Name() == "expand" && cmd.Flag("output").Value.String() == "github" {
				planJob = name
			}
		}
	}
	if planJob == "" || fan.Jobs[planJob].Outputs["matrix"] == "" {
		t.Fatalf("publish-fanout.yml: no job runs `gpuimg matrix expand -o github` and outputs its matrix")
	}
	fanned := false
	for name, job := range fan.Jobs {
		if job.Strategy.Matrix != "${{ fromJSON(needs."+planJob+".outputs.matrix) }}" {
			continue
		}
		for _, l := range lines[name] {
			if cmd := gpuimgCommand(t, l); cmd.Name() == "publish" && strings.Contains(l, `--only "${{ matrix.name }}"`) {
				fanned = true
			}
		}
	}
	if !fanned {
		t.Errorf("publish-fanout.yml: no job over the planned matrix runs gpuimg publish --only \"${{ matrix.name }}\"")
	}
	// The entries the plan job produces have the name --only takes.
	var out, errOut strings.Builder
	if code := cli.Main(t.Context(), []string{"matrix", "expand", "-f", "publish.yaml", "-o", "github"}, &out, &errOut); code != 0 {
		t.Fatalf("matrix expand -o github: exit %d: %s", code, errOut.String())
	}
	var gh struct {
		Include []map[string]string `json:"include"`
	}
	if err := json.Unmarshal([]byte(out.String()), &gh); err != nil || len(gh.Include) == 0 {
		t.Fatalf("matrix expand -o github: %v %s", err, out.String())
	}
	for _, e := range gh.Include {
		if e["name"] == "" || !strings.HasSuffix(e["tag"], ":"+e["name"]) {
			t.Errorf("entry %v: name is not the tag --only takes", e)
		}
	}
}

// TestPublishDocExample expands the publish file of docs/publish.md, which
// adds targets: to publish.yaml: every variant passes validate: and each
// target fleet at plan time (issue 43 item 8), so none is marked.
func TestPublishDocExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/publish.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	src, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/publish.md has no yaml block")
	}
	f, err := publish.ParseFile("docs/publish.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Targets) == 0 {
		t.Fatal("the docs' publish file has no targets:")
	}
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := publish.Expand(t.Context(), db, f, publish.ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p.Variants {
		if v.Validation != "" {
			t.Errorf("%s: %s", v.Name, v.Validation)
		}
	}
	if len(p.Variants) != 9 {
		t.Errorf("%d variants, want publish.yaml's 9", len(p.Variants))
	}
}

package builder

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestContextFilesCoverDockerfiles checks that every context file the
// generated Dockerfiles (the golden ones) mount is one ContextFiles
// writes, so a Dockerfile written with build --dockerfile-only
// --context-dir builds without gpuimg, and that WriteContext writes
// them all.
func TestContextFilesCoverDockerfiles(t *testing.T) {
	dir := t.TempDir()
	req := filepath.Join(dir, "requirements.txt")
	must(t, os.WriteFile(req, []byte("numpy==1.26.4\n"), 0o644))
	r := Request{ContextDir: dir}
	r.Extras.Requirements = "requirements.txt"
	plan := &Plan{Dockerfile: "FROM scratch\n"}
	files, err := ContextFiles(r, plan)
	must(t, err)
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.Dockerfile"))
	must(t, err)
	if len(goldens) == 0 {
		t.Fatal("no golden Dockerfiles")
	}
	source := regexp.MustCompile(`source=(gpuimg/[A-Za-z0-9._/-]+)`)
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		must(t, err)
		for _, m := range source.FindAllStringSubmatch(string(b), -1) {
			if _, ok := files[m[1]]; !ok {
				t.Errorf("%s mounts %s, which ContextFiles does not write", g, m[1])
			}
		}
	}
	out := t.TempDir()
	must(t, WriteContext(out, files))
	for name := range files {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("WriteContext: %v", err)
		}
	}
}

// TestStandaloneContextLabels: the Dockerfile of StandaloneContext ends in
// LABEL lines that BuildKit's own Dockerfile parser reads back, on the
// image's (last) stage, as exactly the labels gpuimg sets: values with
// quotes, backslashes and "$" (which LABEL would expand) kept as they
// are, and the inputs digest the build computes. A value with a line
// break is refused.
func TestStandaloneContextLabels(t *testing.T) {
	stack := matrix.Stack{CUDA: "12.2.2", Python: "3.11", BaseImage: "nvidia/cuda:12.2.2-base-ubuntu22.04", OS: "ubuntu22.04"}
	labels, err := Labels(stack, images.Base{}, 0)
	must(t, err)
	labels["dev.gpuimg.test"] = `a "quoted" \ back ${HOME} $PATH`
	plan := &Plan{Dockerfile: "# syntax=" + DockerfileSyntax + "\nFROM scratch AS gpuimg-image\nFROM gpuimg-image AS gpuimg-check\nFROM gpuimg-image\n", Labels: labels}
	files, err := StandaloneContext(Request{ContextDir: t.TempDir()}, plan)
	must(t, err)
	inputs, err := (&run{plan: plan}).inputs(files, ".")
	must(t, err)
	want := maps.Clone(labels)
	want[InputsLabel] = inputs
	got := parsedLabels(t, string(files["Dockerfile"]))
	if len(got) != len(want) {
		t.Errorf("the last stage has %d labels, want %d:\n%s", len(got), len(want), files["Dockerfile"])
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := LabelLines(map[string]string{"k": "a\nb"}); err == nil {
		t.Error("a value with a line break became a LABEL line")
	}
}

// parsedLabels are the labels after df's last FROM, as BuildKit's
// Dockerfile parser splits them and its shell lexer expands them.
func parsedLabels(t *testing.T, df string) map[string]string {
	t.Helper()
	res, err := parser.Parse(strings.NewReader(df))
	must(t, err)
	lex := shell.NewLex('\\')
	env := shell.EnvsFromSlice([]string{"HOME=/root", "PATH=/bin"})
	got := map[string]string{}
	for _, n := range res.AST.Children {
		switch strings.ToLower(n.Value) {
		case "from":
			clear(got) // only the last stage's
		case "label":
			// key, value, "=" for each label
			for kv := n.Next; kv != nil && kv.Next != nil && kv.Next.Next != nil; kv = kv.Next.Next.Next {
				v, _, err := lex.ProcessWord(kv.Next.Value, env)
				must(t, err)
				got[kv.Value] = v
			}
		}
	}
	return got
}

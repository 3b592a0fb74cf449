package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the gpuimg module path; rule patterns without a dot in their
// first element are relative to it.
const module = "github.com/gpuimg/gpuimg"

// importRule says which packages must not depend on which others,
// directly or through any chain of imports. A pattern ending in "/..."
// matches a package and everything under it.
type importRule struct {
	from, except, deny []string
	why                string
}

// importRules is the package layering of docs/architecture.md. It covers
// non-test code: tests may use internal/testenv, for example.
var importRules = []importRule{
	{
		from: []string{"matrix/...", "builder/...", "validate/...", "images/...", "internal/humanize/...", "internal/atomicfile/...", "internal/redact/...", "internal/publish/...", "internal/upstream/...", "internal/verbs/..."},
		deny: []string{"github.com/spf13/cobra/...", "github.com/spf13/pflag/...", "internal/cli/...", "internal/testenv/...", "cmd/..."},
		why:  "library packages never depend on the CLI or the test environment",
	},
	{
		// internal/upstream, which reads nvidia/cuda's tags through
		// images, is outside matrix for that reason.
		from: []string{"matrix/..."},
		deny: []string{"builder/...", "validate/...", "images/..."},
		why:  "matrix holds the compatibility facts the other packages build on",
	},
	{
		// It reads upstream's sources into a matrix overlay and folds
		// one into a checkout's matrix/data (through internal/atomicfile);
		// the CLI hands it validate.ScanFatbin as its ArchScanner.
		from: []string{"internal/upstream/..."},
		deny: []string{"builder/...", "validate/...", "internal/publish/..."},
		why:  "internal/upstream reads upstream's sources over HTTP and registries through images, and a checkout's matrix/data, nothing else",
	},
	{
		// The workflows both the CLI and publish run, over images,
		// validate and builder; publish schedules them, so they must not
		// know it.
		from: []string{"internal/verbs/..."},
		deny: []string{"internal/publish/...", "internal/upstream/..."},
		why:  "internal/verbs holds the workflows its callers (the CLI, publish) share; it knows neither",
	},
	{
		from: []string{"internal/atomicfile/...", "internal/humanize/...", "internal/redact/...", "internal/bound/..."},
		deny: []string{"..."},
		why:  "internal/atomicfile, internal/humanize, internal/redact and internal/bound are leaves every package may use: they import no gpuimg package",
	},
	{
		from: []string{"images/..."},
		deny: []string{"builder/...", "validate/..."},
		why:  "images is the registry layer under builder and validate",
	},
	{
		from: []string{"validate/..."},
		deny: []string{"builder/..."},
		why:  "validate judges images; it does not build them",
	},
	{
		// validate/gpurun runs an image on an engine and takes its
		// reference as an images.Ref, so it may import images.
		from:   []string{"validate/..."},
		except: []string{"validate/gpurun"},
		deny:   []string{"images/..."},
		why:    "validate judges what it is handed (layers, a probe's answer); callers open images",
	},
	{
		// validate wraps the probe's Result into a GPU Report, so the
		// probe must not know validate, nor how an image is run.
		from: []string{"validate/gpuprobe/..."},
		deny: []string{"validate", "validate/gpurun/..."},
		why:  "validate/gpuprobe measures and judges the machine it runs on, against the matrix alone",
	},
	{
		from: []string{"builder/..."},
		deny: []string{"validate/..."},
		why:  "builder uses images (PinBase) and matrix only",
	},
	{
		from:   []string{"..."},
		except: []string{"cmd/gpuimg", "internal/cli/..."},
		deny:   []string{"internal/cli/..."},
		why:    "only cmd/gpuimg runs the CLI; other programs exec bin/gpuimg",
	},
	{
		// The end-to-end tests drive cli.Main from their _test files;
		// the package's own code is its doc comment.
		from: []string{"internal/e2e/..."},
		deny: []string{"..."},
		why:  "internal/e2e holds the end-to-end tests only",
	},
}

// matchPattern reports whether pkg matches pattern (see importRule).
func matchPattern(pattern, pkg string) bool {
	if pattern == "..." {
		return strings.HasPrefix(pkg, module+"/") || pkg == module
	}
	if first, _, _ := strings.Cut(pattern, "/"); !strings.Contains(first, ".") {
		pattern = module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matchPattern(p, pkg) })
}

// importViolations checks every package of the module in graph (import
// path → direct imports, standard library and dependencies included)
// against rules. Each violation names the shortest import chain.
func importViolations(graph map[string][]string, rules []importRule) []string {
	var out []string
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		for _, r := range rules {
			if !matchAny(r.from, pkg) || matchAny(r.except, pkg) {
				continue
			}
			if chain := importChain(graph, pkg, r.deny); chain != nil {
				out = append(out, fmt.Sprintf("%s: %s", strings.Join(trimModule(chain), " → "), r.why))
			}
		}
	}
	return out
}

// importChain is the shortest chain of imports from pkg to a package
// matching one of deny, or nil.
func importChain(graph map[string][]string, pkg string, deny []string) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range graph[p] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = p
			if matchAny(deny, imp) {
				chain := []string{imp}
				for q := p; q != ""; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

func trimModule(pkgs []string) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = strings.TrimPrefix(p, module+"/")
	}
	return out
}

// importGraph is the module's non-test import graph with everything it
// depends on, from go list.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-json=ImportPath,Imports", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s/...: %v\n%s", module, err, stderr.String())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		graph[p.ImportPath] = p.Imports
	}
	return graph
}

// TestImportRules fails when a package imports one it should not (see
// importRules and docs/architecture.md).
func TestImportRules(t *testing.T) {
	graph := importGraph(t)
	for _, r := range importRules {
		for _, from := range r.from {
			if !slices.ContainsFunc(slices.Sorted(maps.Keys(graph)), func(p string) bool { return matchPattern(from, p) }) {
				t.Errorf("rule %q: no package matches %s", r.why, from)
			}
		}
	}
	for _, v := range importViolations(graph, importRules) {
		t.Error(v)
	}
}

// TestImportViolations runs the checker on a made-up graph: direct and
// indirect imports are caught, allowed ones pass.
func TestImportViolations(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	tests := []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{
			name: "allowed layering",
			graph: map[string][]string{
				m("cmd/gpuimg"):          {m("internal/cli")},
				m("internal/cli"):        {m("builder"), m("validate/run"), "github.com/spf13/cobra"},
				m("builder"):             {m("images"), m("matrix")},
				m("validate/run"):        {m("validate"), "os/exec"},
				m("validate"):            {m("matrix"), m("internal/humanize")},
				m("images"):              {m("internal/humanize")},
				m("examples/demo"):       {m("internal/testenv")},
				m("internal/testenv"):    {m("builder")},
				"github.com/spf13/cobra": {"github.com/spf13/pflag"},
			},
		},
		{
			name: "direct",
			graph: map[string][]string{
				m("images"):   {m("validate")},
				m("validate"): {m("matrix")},
			},
			want: []string{"images → validate: images is the registry layer under builder and validate"},
		},
		{
			name: "through another package",
			graph: map[string][]string{
				m("matrix"):            {m("internal/humanize")},
				m("internal/humanize"): {"example.com/flags"},
				"example.com/flags":    {"github.com/spf13/pflag"},
			},
			want: []string{
				"internal/humanize → example.com/flags → github.com/spf13/pflag: library packages never depend on the CLI or the test environment",
				"matrix → internal/humanize → example.com/flags → github.com/spf13/pflag: library packages never depend on the CLI or the test environment",
			},
		},
		{
			name: "a subpackage is its package",
			graph: map[string][]string{
				m("validate/run"): {m("images/ref")},
			},
			want: []string{"validate/run → images/ref: validate judges what it is handed (layers, a probe's answer); callers open images"},
		},
		{
			name: "internal/cli outside cmd/gpuimg",
			graph: map[string][]string{
				m("examples/demo"): {m("internal/cli")},
				m("cmd/gpuimg"):    {m("internal/cli")},
			},
			want: []string{"examples/demo → internal/cli: only cmd/gpuimg runs the CLI; other programs exec bin/gpuimg"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := importViolations(tt.graph, importRules)
			if !slices.Equal(got, tt.want) {
				t.Errorf("violations:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

var updateArchitecture = flag.Bool("update-architecture", false, "rewrite the import graph in docs/architecture.md")

// TestArchitectureImportGraph keeps the import graph in
// docs/architecture.md equal to the code's (rewrite it with
// go test ./internal/cli -run TestArchitectureImportGraph -update-architecture).
func TestArchitectureImportGraph(t *testing.T) {
	const file = "../../docs/architecture.md"
	const begin, end = "<!-- import graph: begin -->\n", "<!-- import graph: end -->"
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(doc), begin)
	documented, tail, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/architecture.md: no %q … %q section", strings.TrimSpace(begin), end)
	}
	want := "```text\n" + renderModuleGraph(importGraph(t)) + "```\n"
	if documented == want {
		return
	}
	if *updateArchitecture {
		if err := os.WriteFile(file, []byte(head+begin+want+end+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/architecture.md's import graph is out of date; rewrite it with\n"+
		"  go test ./internal/cli -run TestArchitectureImportGraph -update-architecture\nThe code's graph:\n%s", want)
}

// renderModuleGraph lists each package of the module with the module's
// packages it imports directly.
func renderModuleGraph(graph map[string][]string) string {
	var pkgs []string
	width := 0
	for _, p := range slices.Sorted(maps.Keys(graph)) {
		if matchPattern("...", p) {
			pkgs = append(pkgs, p)
			width = max(width, len(strings.TrimPrefix(p, module+"/")))
		}
	}
	var b strings.Builder
	for _, p := range pkgs {
		var deps []string
		for _, imp := range graph[p] {
			if matchPattern("...", imp) {
				deps = append(deps, strings.TrimPrefix(imp, module+"/"))
			}
		}
		slices.Sort(deps)
		line := fmt.Sprintf("%-*s → %s", width, strings.TrimPrefix(p, module+"/"), strings.Join(deps, ", "))
		if len(deps) == 0 {
			line = fmt.Sprintf("%-*s   (no gpuimg imports)", width, strings.TrimPrefix(p, module+"/"))
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

package cli

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/internal/publish"
)

// TestEmptyFlagValues: a flag given an empty value (a CI job's unset
// $TORCH) is an error that says what to do, never the flag left out.
func TestEmptyFlagValues(t *testing.T) {
	tests := []struct {
		args []string
		flag string // the flag the error names
		want string // the example the hint gives ("" for a flag without one)
	}{
		{[]string{"matrix", "resolve", "--torch", ""}, "torch", "--torch 2.3"},
		{[]string{"matrix", "resolve", "--torch="}, "torch", "--torch 2.3"},
		{[]string{"matrix", "resolve", "--torch", "  "}, "torch", "--torch 2.3"},
		{[]string{"matrix", "resolve", "--cuda", ""}, "cuda", "--cuda 12.2"},
		{[]string{"matrix", "resolve", "--cudnn", ""}, "cudnn", "--cudnn 8.9"},
		{[]string{"matrix", "resolve", "--tensorflow", ""}, "tensorflow", "--tensorflow 2.15"},
		{[]string{"matrix", "resolve", "--jax", ""}, "jax", "--jax 0.4.30"},
		{[]string{"matrix", "resolve", "--python", ""}, "python", "--python 3.11"},
		{[]string{"matrix", "resolve", "--os", ""}, "os", "--os ubuntu22.04"},
		{[]string{"matrix", "resolve", "--flavor", ""}, "flavor", "--flavor runtime"},
		{[]string{"matrix", "resolve", "--gpu", ""}, "gpu", "--gpu h100"},
		{[]string{"matrix", "resolve", "--driver", ""}, "driver", "--driver 535.104.05"},
		{[]string{"matrix", "resolve", "--target", ""}, "target", "--target sagemaker/p5"},
		{[]string{"matrix", "check", "--torch", "2.3", "--gpu", ""}, "gpu", "--gpu h100"},
		{[]string{"matrix", "check", "--torch", "2.3", "--driver", ""}, "driver", "--driver 535.104.05"},
		{[]string{"matrix", "check", "--stack", "", "--gpu", "h100"}, "stack", "--stack stack.json"},
		{[]string{"build", "--torch", "", "--dockerfile-only"}, "torch", "--torch 2.3"},
		{[]string{"build", "--target", ""}, "target", "--target sagemaker/p5"},
		{[]string{"matrix", "resolve", "--matrix-file", ""}, "matrix-file", ""},
		{[]string{"validate", "img", "--driver", ""}, "driver", "--driver 535.104.05"},
		{[]string{"validate", "img", "--gpu", ""}, "gpu", "--gpu h100"},
		{[]string{"images", "promote", "r/x:1", "--to", "r/x:2", "--gpu", ""}, "gpu", "--gpu h100"},
		{[]string{"validate", "img", "--target", ""}, "target", ""},
		{[]string{"publish", "--only", ""}, "only", ""},
		{[]string{"images", "import", "img", "--target", "", "--to", "r/x:1"}, "target", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errOut, code := run(t, tt.args...)
			if code != ExitInvalid {
				t.Fatalf("exit %d, want 2: %s", code, errOut)
			}
			if !strings.Contains(errOut, "--"+tt.flag+" was given an empty value") || !strings.Contains(errOut, "omit --"+tt.flag) {
				t.Errorf("stderr %q does not name --%s and say to omit it", errOut, tt.flag)
			}
			if tt.want != "" && !strings.Contains(errOut, "such as "+tt.want) {
				t.Errorf("stderr %q lacks the example %q", errOut, tt.want)
			}
			if strings.Count(errOut, "gpuimg:") != 1 {
				t.Errorf("error printed %d times: %q", strings.Count(errOut, "gpuimg:"), errOut)
			}
		})
	}
}

// TestEveryStringFlagRefusesEmpty walks the whole command tree: no string
// flag of any command takes "" as if it were absent.
func TestEveryStringFlagRefusesEmpty(t *testing.T) {
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "string", "stringArray", "stringSlice":
			default:
				return
			}
			n++
			err := f.Value.Set("")
			var e *Error
			if !errors.As(err, &e) || e.Code != ExitInvalid {
				t.Errorf("%s --%s accepts an empty value (err %v)", c.CommandPath(), f.Name, err)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot())
	if n < 100 {
		t.Errorf("only %d string flags seen; the walk missed commands", n)
	}
}

func TestCheckStackExcludesStackFlags(t *testing.T) {
	out, errOut, code := run(t, "matrix", "resolve", "--torch", "2.3", "-o", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	p := filepath.Join(t.TempDir(), "stack.json")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		code   int
		errHas string
	}{
		{[]string{"--torch", "2.3", "--gpu", "h100"}, 2, "--stack and --torch exclude each other"},
		{[]string{"--cuda", "12.2", "--python", "3.11", "--gpu", "h100"}, 2, "--stack and --cuda, --python exclude each other"},
		{[]string{"--gpu", "h100"}, 0, ""},
		{[]string{"--driver", "535.104.05"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errOut, code := run(t, append([]string{"matrix", "check", "--stack", p}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.errHas) {
				t.Fatalf("exit %d (want %d), stderr %q lacks %q", code, tt.code, errOut, tt.errHas)
			}
		})
	}
}

// TestConstraintHints: each flag's errors carry that flag's own hint.
func TestConstraintHints(t *testing.T) {
	tests := []struct {
		args    []string
		has     string
		hasNot  string
		errHas  string
		comment string
	}{
		{[]string{"--gpu", "h100,"}, "name each GPU", "'>=12.1", "has an empty entry", ""},
		{[]string{"--torch", ">=two"}, "write a torch release (2.3)", "'>=12.1", `part "two"`, ""},
		{[]string{"--tensorflow", "2.x.1"}, "write a tensorflow release (2.15)", "'>=12.1", "", ""},
		{[]string{"--jax", "0.4.30+cuda12"}, "give --jax 0.4.30 and the CUDA version with --cuda", "'>=12.1", "local label", "no cuXYZ label: the variant list"},
		{[]string{"--torch", "2.3.1+cu121"}, "a local label selects a CUDA variant of the release through --cuda: give --torch 2.3.1 --cuda 12.1", "'>=12.1", "local label +cu121", ""},
		{[]string{"--torch", "2.3+cu118"}, "give --torch 2.3 --cuda 11.8", "", "", ""},
		{[]string{"--cuda", "12.2+x"}, "give the version without +x", "--cuda 12.2 --cuda", "", ""},
		{[]string{"--cuda", ">=twelve"}, "write a CUDA version (12.2)", "", "", ""},
		{[]string{"--cudnn", "nine"}, "write a cuDNN version (9, 8.9)", "'>=12.1", "", ""},
		{[]string{"--python", "three"}, "write a Python version (3.11)", "'>=12.1", "", ""},
		{[]string{"--flavor", "slim"}, "use runtime, devel or base", "", "", ""},
		{[]string{"--driver", "latest"}, "the full version nvidia-smi prints (nvidia-smi --query-gpu=driver_version", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, errOut, code := run(t, append([]string{"matrix", "resolve"}, tt.args...)...)
			if code != ExitInvalid {
				t.Fatalf("exit %d, want 2: %s", code, errOut)
			}
			if !strings.Contains(errOut, tt.has) || !strings.Contains(errOut, tt.errHas) {
				t.Errorf("stderr %q lacks %q or %q", errOut, tt.has, tt.errHas)
			}
			if tt.hasNot != "" && strings.Contains(errOut, tt.hasNot) {
				t.Errorf("stderr %q has another flag's hint %q", errOut, tt.hasNot)
			}
		})
	}
}

func TestStackFileErrors(t *testing.T) {
	dir := t.TempDir()
	yamlStack, errOut, code := run(t, "matrix", "resolve", "--torch", "2.3", "-o", "yaml")
	if code != 0 {
		t.Fatal(errOut)
	}
	tests := []struct {
		name, content string
		code          int
		errHas        string
	}{
		// matrix.DecodeStack's messages are tested in matrix
		// (TestDecodeStack); these check the wiring: the "read stack"
		// prefix, the hint, exit 2, and both formats.
		{"array", `[{"cuda": "12.2.2"}]`, 2, "gpuimg: read stack FILE: it holds a JSON array, not an object; the file must hold one stack object, as gpuimg matrix resolve -o json (or -o yaml) writes it\n"},
		{"truncated", `{"cuda": `, 2, "gpuimg: read stack FILE: not valid JSON at byte 9: unexpected end of JSON input; the file must hold"},
		{"no cuda", `{}`, 2, "gpuimg: read stack FILE: no cuda field; the file must hold"},
		{"yaml list", "- cuda: 12.2.2\n", 2, "gpuimg: read stack FILE: line 1: the file must be a mapping"},
		{"yaml from resolve -o yaml", yamlStack, 0, ""},
	}
	t.Run("publish --since", func(t *testing.T) {
		p := filepath.Join(dir, "report.json")
		if err := os.WriteFile(p, []byte(`[{"results": []}]`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := run(t, "publish", "-f", "../../examples/publish.yaml", "--since", p)
		if code != ExitInvalid || !strings.Contains(errOut, "read previous report "+p+": it holds a JSON array, not an object; pass the report.json") || strings.Contains(errOut, "Go value") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, code := run(t, "matrix", "check", "--stack", p, "--gpu", "h100")
			errOut = strings.ReplaceAll(errOut, p, "FILE")
			if code != tt.code || !strings.Contains(errOut, tt.errHas) {
				t.Fatalf("exit %d (want %d), stderr %q lacks %q", code, tt.code, errOut, tt.errHas)
			}
			if strings.Contains(errOut, "Go value") || strings.Contains(errOut, "matrix.") {
				t.Errorf("Go's types leak: %q", errOut)
			}
		})
	}
}

// TestCommandErrors: arguments cobra would answer with its internals, or
// with help and exit 0, get an error that lists the choices.
func TestCommandErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		errHas string
		outHas string
	}{
		{"list without a kind lists the kinds", []string{"matrix", "list"}, 2, "matrix list needs the kind of rows to list; use one of cuda, archs, cudnn, nccl, torch", ""},
		{"list with two kinds", []string{"matrix", "list", "cuda", "torch"}, 2, "matrix list takes one kind, got 2", ""},
		{"unknown shell", []string{"completion", "tcsh"}, 2, `unknown shell "tcsh"; gpuimg writes completion scripts for bash, zsh, fish, powershell`, ""},
		{"completion without a shell", []string{"completion"}, 2, "completion takes one shell, got 0", ""},
		{"completion zsh", []string{"completion", "zsh"}, 0, "", "compdef _gpuimg gpuimg"},
		{"completion fish", []string{"completion", "fish", "--no-descriptions"}, 0, "", "complete -c gpuimg"},
		{"unknown subcommand", []string{"matrix", "frob"}, 2, `unknown command "frob" for gpuimg matrix; use one of: check, expand, list, resolve, update`, ""},
		{"near miss", []string{"images", "cpy"}, 2, "did you mean copy?", ""},
		{"a group alone prints its help", []string{"matrix"}, 0, "", "Available Commands:"},
		{"missing argument shows usage", []string{"validate"}, 2, "validate: accepts 1 arg(s), received 0; usage: gpuimg validate IMAGE", ""},
		{"--version", []string{"--version"}, 0, "", "gpuimg "},
		{"validate with a GPU list", []string{"validate", "img", "--gpu", "a10g,l4"}, 2, "--gpu a10g,l4 names 2 GPUs, and validate checks one; run validate once per GPU", ""},
		{"validate with an empty GPU entry", []string{"validate", "img", "--gpu", "h100,"}, 2, `--gpu: GPU list "h100," has an empty entry; name each GPU`, ""},
		{"a run's flag without --run", []string{"validate", "img", "--bench"}, 2, "--bench only works with --run: without it validate reads the image and runs nothing; add --run docker", ""},
		{"run flags without --run", []string{"validate", "img", "--max-loss", "3%", "--probe-image", "r/p:1"}, 2, "--probe-image, --max-loss only work with --run", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if !strings.Contains(errOut, tt.errHas) || !strings.Contains(out, tt.outHas) {
				t.Errorf("stderr %q lacks %q, or stdout lacks %q:\n%s", errOut, tt.errHas, tt.outHas, out)
			}
		})
	}
	version, _, _ := run(t, "version")
	flag, _, _ := run(t, "--version")
	if flag != version || !strings.HasPrefix(flag, "gpuimg ") {
		t.Errorf("gpuimg --version printed %q, gpuimg version %q", flag, version)
	}
}

func TestBuildBuildxHabits(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name   string
		args   []string
		errHas string
		not    string
	}{
		{"-o in buildx syntax", []string{"-o", "type=oci,dest=x.tar"}, "gpuimg's -o is --output-format, the result format on stdout (text or json); give BuildKit outputs with --output, as docker buildx build's -o: --output type=oci,dest=x.tar", ""},
		{"-o unknown", []string{"-o", "xml"}, `unknown output format "xml"; use -o text, -o json`, "--output"},
		{"--output as a format", []string{"--output", "json"}, "--output is an extra BuildKit output (type=oci,dest=FILE …), not the result format; for the result format on stdout use -o json", ""},
		{"-f Dockerfile with a syntax line", []string{"-f", write("Dockerfile", "# syntax=docker/dockerfile:1\nFROM ubuntu:22.04\nRUN true\n")}, "-f takes a gpuimg.yaml (the stack, extras and build settings), and this is a Dockerfile", "unmarshal"},
		{"-f Dockerfile with ARG first", []string{"-f", write("a.Dockerfile", "# our image\n\nARG BASE=ubuntu\nFROM $BASE\n")}, "this is a Dockerfile", "unmarshal"},
		{"-f Containerfile", []string{"-f", write("Containerfile", "from ubuntu\n")}, "this is a Dockerfile", ""},
		{"-f broken gpuimg.yaml", []string{"-f", write("gpuimg.yaml", "torch: [\n")}, "see docs/build.md for the gpuimg.yaml format", "Dockerfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, append([]string{"build", "--torch", "2.3"}, tt.args...)...)
			if code != ExitInvalid || !strings.Contains(errOut, tt.errHas) {
				t.Fatalf("exit %d (want 2), stderr %q lacks %q", code, errOut, tt.errHas)
			}
			if tt.not != "" && strings.Contains(errOut, tt.not) {
				t.Errorf("stderr %q has %q", errOut, tt.not)
			}
		})
	}
}

func TestIsDockerfile(t *testing.T) {
	dir := t.TempDir()
	for i, tt := range []struct {
		content string
		want    bool
	}{
		{"FROM ubuntu\n", true},
		{"# syntax = docker/dockerfile:1.7\nFROM x\n", true},
		{"# escape=`\nFROM x\n", true},
		{"# check=skip=all\n", true},
		{"\n\n# builds the app\nARG V=1\nFROM x:$V\n", true},
		{"\tFrom x\n", true},
		{"torch: 2.3\ncuda: 12.2\n", false},
		{"# gpuimg.yaml\nfrom: x\n", false},
		{"RUN x\nFROM y\n", false},
		{"", false},
	} {
		p := filepath.Join(dir, strings.Repeat("f", i+1))
		if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := isDockerfile(p); got != tt.want {
			t.Errorf("isDockerfile(%q) = %v, want %v", tt.content, got, tt.want)
		}
	}
	if isDockerfile(filepath.Join(dir, "missing")) {
		t.Error("a missing file is a Dockerfile")
	}
}

func TestPublishFailedWording(t *testing.T) {
	res := func(name string, o publish.Outcome) publish.Result {
		r := publish.Result{Variant: publish.Variant{Name: name}, Outcome: o}
		if o == publish.Failed {
			r.Error = "build: boom"
		}
		return r
	}
	tests := []struct {
		name    string
		results []publish.Result
		err     string
		hint    string
	}{
		{"one of one", []publish.Result{res("a", publish.Failed)}, "1 of 1 variant failed: a (build: boom)", "nothing was published; fix the failures and run again"},
		{"all of two", []publish.Result{res("a", publish.Failed), res("b", publish.Failed)}, "2 of 2 variants failed", "nothing was published"},
		{"one of three", []publish.Result{res("a", publish.Failed), res("b", publish.Published), res("c", publish.Unchanged)}, "1 of 3 variants failed", "of the others, 1 published, 1 unchanged; fix the failures"},
		{"with a dry run's plans", []publish.Result{res("a", publish.Failed), res("b", publish.Planned)}, "1 of 2 variants failed", "of the others, 1 planned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := (&PublishOptions{}).render(&out, io.Discard, &publish.Report{Results: tt.results}, nil)
			var e *Error
			if !errors.As(err, &e) || e.Code != ExitFailed {
				t.Fatalf("render = %v, want exit 1", err)
			}
			if !strings.Contains(e.Err.Error(), tt.err) || e.Hint != tt.hint && !strings.HasPrefix(e.Hint, tt.hint) {
				t.Errorf("error %q hint %q; want %q and %q", e.Err, e.Hint, tt.err, tt.hint)
			}
			if strings.Contains(e.Hint, "other variants were published") {
				t.Errorf("hint %q", e.Hint)
			}
		})
	}
}

// complete runs cobra's __complete, as the shell scripts do, and returns
// the candidates.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, errOut, code := run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
		t.Fatalf("__complete %v: no directive line:\n%s", args, out)
	}
	return lines[:len(lines)-1]
}

func TestFlagValueCompletion(t *testing.T) {
	rows := filepath.Join(t.TempDir(), "ours.yaml")
	if err := os.WriteFile(rows, []byte(`sources:
  - {id: ours, title: our lab, url: "https://wiki.example.invalid/gpus"}
gpus:
  - {name: Lab-X1, aliases: [labx1], arch: sm_90, source: ours}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		want    []string
		notWant string
	}{
		{[]string{"matrix", "resolve", "--gpu", "h10"}, []string{"h100", "h100-pcie"}, "a10g"},
		{[]string{"matrix", "resolve", "--gpu", "a10g,l4"}, []string{"a10g,l4"}, "a10g,h100"},
		{[]string{"matrix", "check", "--gpu", "sm_9"}, []string{"sm_90"}, ""},
		{[]string{"matrix", "resolve", "--matrix-file", rows, "--gpu", "lab"}, []string{"labx1", "lab-x1"}, ""},
		{[]string{"build", "--target", "sagemaker/p"}, []string{"sagemaker/p5"}, "gke/"},
		{[]string{"validate", "img", "--target", "sagemaker/p"}, []string{"sagemaker/p5"}, ""},
		{[]string{"images", "import", "img", "--target", "sagemaker/p"}, []string{"sagemaker/p5"}, ""},
		{[]string{"matrix", "resolve", "--torch", ""}, []string{"latest", "2.3", "2.3.1"}, ""},
		{[]string{"matrix", "resolve", "--torch", "2.3"}, []string{"2.3", "2.3.1"}, "latest"},
		{[]string{"matrix", "resolve", "--tensorflow", "2.1"}, []string{"2.15"}, ""},
		{[]string{"matrix", "resolve", "--jax", "0.4"}, []string{"0.4.30"}, ""},
		{[]string{"matrix", "resolve", "--cuda", "12.2"}, []string{"12.2", "12.2.2"}, "11.8"},
		{[]string{"matrix", "resolve", "--os", "ubu"}, []string{"ubuntu22.04", "ubuntu"}, "rockylinux9"},
		{[]string{"build", "--flavor", ""}, []string{"base", "runtime", "devel"}, ""},
		{[]string{"matrix", "resolve", "--python", "3.1"}, []string{"3.10", "3.12"}, ""},
		{[]string{"matrix", "resolve", "-o", ""}, []string{"text", "json", "yaml"}, "table"},
		{[]string{"build", "-o", ""}, []string{"text", "json"}, "table"},
		{[]string{"validate", "img", "-o", ""}, []string{"text", "json", "junit"}, ""},
		{[]string{"matrix", "expand", "-o", ""}, []string{"text", "json", "github", "bake"}, "table"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := complete(t, tt.args...)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("candidates %v lack %q", got, w)
				}
			}
			for _, g := range got {
				if tt.notWant != "" && strings.HasPrefix(g, tt.notWant) {
					t.Errorf("candidates %v have %q", got, g)
				}
			}
		})
	}
}

// TestEveryValueFlagCompletes: every flag named after a matrix value, and
// every -o that is a format, has a completion function in every command.
func TestEveryValueFlagCompletes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			named := slices.Contains([]string{"gpu", "target", "torch", "tensorflow", "jax", "cuda", "cudnn", "python", "os", "flavor"}, f.Name)
			format := f.Shorthand == "o" && c.CommandPath() != "gpuimg matrix update" // update's -o is a file
			if _, ok := c.GetFlagCompletionFunc(f.Name); (named || format) && !ok {
				t.Errorf("%s --%s has no completion", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot())
}

// TestHelpDefaults: wrapping the flags' values for requireValues keeps
// help as it was: an empty list prints no "(default [])".
func TestHelpDefaults(t *testing.T) {
	for _, args := range [][]string{{"build", "--help"}, {"publish", "--help"}, {"validate", "--help"}} {
		out, errOut, code := run(t, args...)
		if code != 0 || strings.Contains(out, "(default [])") || !strings.Contains(out, `(default "text")`) && args[0] != "publish" {
			t.Errorf("%v: exit %d, help:\n%s%s", args, code, out, errOut)
		}
	}
	// Groups refuse unknown subcommands by running, but their usage stays
	// a group's; probe runs and has a subcommand, and shows both.
	if out, _, _ := run(t, "matrix", "--help"); strings.Contains(out, "gpuimg matrix [flags]") || !strings.Contains(out, "gpuimg matrix [command]") {
		t.Errorf("matrix usage:\n%s", out)
	}
	if out, _, _ := run(t, "probe", "--help"); !strings.Contains(out, "gpuimg probe [flags]") || !strings.Contains(out, "gpuimg probe [command]") {
		t.Errorf("probe usage:\n%s", out)
	}
}

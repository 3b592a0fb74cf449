package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMatrixExpandGitHubOutputLine runs the --help example exactly as a
// workflow step does, through a real shell:
//
//	echo "matrix=$(gpuimg matrix expand -f publish.yaml -o github)" >> "$GITHUB_OUTPUT"
//
// and reads $GITHUB_OUTPUT back as the runner does: one name=value a
// line. A JSON value over several lines would leave the runner with
// lines that are no name=value ("Invalid format").
func TestMatrixExpandGitHubOutputLine(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the workflow step with")
	}
	out, errOut, code := run(t, "matrix", "expand", "-f", examplePublish, "-o", "github")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("-o github is %d lines, want one:\n%.300s", strings.Count(out, "\n"), out)
	}
	dir := t.TempDir()
	stdout := filepath.Join(dir, "stdout")
	must(t, os.WriteFile(stdout, []byte(out), 0o644))
	ghOutput := filepath.Join(dir, "github_output")
	step := exec.CommandContext(t.Context(), sh, "-c", `echo "matrix=$(cat "$1")" >> "$GITHUB_OUTPUT"`, "sh", stdout)
	step.Env = append(os.Environ(), "GITHUB_OUTPUT="+ghOutput)
	if b, err := step.CombinedOutput(); err != nil {
		t.Fatalf("the workflow step: %v\n%s", err, b)
	}
	b, err := os.ReadFile(ghOutput)
	must(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("$GITHUB_OUTPUT holds %d lines, want one name=value", len(lines))
	}
	name, value, ok := strings.Cut(lines[0], "=")
	if !ok || name != "matrix" {
		t.Fatalf("$GITHUB_OUTPUT line %.80q is no matrix=VALUE", lines[0])
	}
	var m struct {
		Include []map[string]string `json:"include"`
	}
	if err := json.Unmarshal([]byte(value), &m); err != nil {
		t.Fatalf("fromJSON(steps.x.outputs.matrix) would fail: %v", err)
	}
	if len(m.Include) != len(exampleVariants) {
		t.Errorf("include has %d jobs, want %d", len(m.Include), len(exampleVariants))
	}
}

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// examplePublish is the example publish.yaml of the README.
const examplePublish = "../../examples/publish.yaml"

// TestMatrixExpandBakeBuildx: docker buildx bake (pinned in tools/go.mod)
// accepts the bake output as is and reads back every target and tag.
func TestMatrixExpandBakeBuildx(t *testing.T) {
	testenv.Require(t, "builds docker buildx from tools/go.mod (minutes the first time)", testenv.Slow)
	buildx, err := testenv.Buildx(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The example, with an environment variable bake would interpolate if
	// gpuimg did not escape it.
	src, err := os.ReadFile(examplePublish)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pf := filepath.Join(dir, "publish.yaml")
	withEnv := strings.Replace(string(src), "  pip: [\"numpy==2.1.3\"]\n", "  pip: [\"numpy==2.1.3\"]\n  env: {GREETING: \"${USER} %{x}\"}\n", 1)
	if withEnv == string(src) {
		t.Fatal("examples/publish.yaml has no build.pip line to add env after")
	}
	if err := os.WriteFile(pf, []byte(withEnv), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "matrix", "expand", "-f", pf, "-o", "bake")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	file := filepath.Join(dir, "bake.json")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), buildx, "bake", "-f", file, "--print")
	cmd.Dir = dir
	// buildx's own state in the test's directory; --print needs no builder.
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(dir, "docker"), "BUILDX_CONFIG="+filepath.Join(dir, "buildx"), "BUILDX_NO_DEFAULT_ATTESTATIONS=1")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("buildx bake --print: %v\n%s", err, stderr.String())
	}
	var printed struct {
		Group  map[string]struct{ Targets []string } `json:"group"`
		Target map[string]struct {
			Tags             []string            `json:"tags"`
			DockerfileInline string              `json:"dockerfile-inline"`
			Labels           map[string]string   `json:"labels"`
			Platforms        []string            `json:"platforms"`
			CacheFrom        []map[string]string `json:"cache-from"`
		} `json:"target"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &printed); err != nil {
		t.Fatalf("buildx printed no JSON: %v\n%s", err, stdout.String())
	}
	var want publish.BakeFile
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}
	if got := printed.Group["default"].Targets; !slices.Equal(got, want.Group["default"].Targets) {
		t.Errorf("buildx's default group %q, want %q", got, want.Group["default"].Targets)
	}
	for _, name := range want.Group["default"].Targets {
		p, w := printed.Target[name], want.Target[name]
		if !slices.Equal(p.Tags, w.Tags) || !slices.Equal(p.Platforms, w.Platforms) {
			t.Errorf("%s: buildx read tags %q platforms %q, want %q %q", name, p.Tags, p.Platforms, w.Tags, w.Platforms)
		}
		// buildx prints strings escaped for bake, as gpuimg writes them.
		if !strings.Contains(p.DockerfileInline, `GREETING="\$${USER} %%{x}"`) || p.DockerfileInline != w.DockerfileInline || p.Labels[matrix.StackLabel] != w.Labels[matrix.StackLabel] || p.Labels[publish.InputsLabel] != w.Labels[publish.InputsLabel] {
			t.Errorf("%s: buildx read a different Dockerfile or labels:\n%s", name, p.DockerfileInline)
		}
		if len(p.CacheFrom) != 1 || p.CacheFrom[0]["type"] != "registry" {
			t.Errorf("%s: cache-from %v", name, p.CacheFrom)
		}
	}
}

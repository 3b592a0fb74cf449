package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestBuildxBuildsContextDir builds what build --dockerfile-only
// --context-dir and matrix expand -o bake --context-dir write with docker
// buildx alone (pinned in tools/go.mod; a builder of the remote driver on
// the test buildkitd, in a private BUILDX_CONFIG, removed at the end): the
// image, pushed, carries the labels gpuimg sets (from the Dockerfile's
// LABEL lines), and the proof stage (gpuimg-check) passes. The
// Dockerfiles' "# syntax=docker/dockerfile:1.17" line is obeyed: buildx
// forwards to that image, which the test pushes (BuildKit's Dockerfile
// frontend, built from tools/go.mod) where the buildkitd's docker.io
// mirror finds it. A framework-less CUDA 12.2 stack: its Python comes
// from the fixture base, no index is needed.
func TestBuildxBuildsContextDir(t *testing.T) {
	testenv.Require(t, "builds with buildkitd through docker buildx (compiled from tools/go.mod the first time), which runs build steps with runc", testenv.Slow, testenv.Root)
	t.Parallel()
	ctx := t.Context()
	env := sharedEnv(t, "gx-")
	buildx, err := testenv.Buildx(ctx)
	must(t, err)
	_, err = env.PushBase(ctx, "nvidia/cuda:12.2.2-runtime-ubuntu22.04")
	must(t, err)
	must(t, env.PushDockerfileFrontend(ctx))
	bx := newBuildx(t, buildx, env.BuildKit.Address())

	t.Run("buildx build of build --dockerfile-only --context-dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ctx")
		df, errOut, code := run(t, "build", "--cuda", "12.2", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(), "--dockerfile-only", "--context-dir", dir)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		written, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
		must(t, err)
		if string(written) != df {
			t.Error("the Dockerfile written differs from the one printed")
		}
		ref := env.Registry.Host + "/gpuimg/buildx:build"
		out := bx.run(t, dir, "build", "--progress", "plain", "--target", "gpuimg-check", ".")
		if !strings.Contains(out, "docker.io/"+builder.DockerfileSyntax) || !strings.Contains(out, "gpuimg check: ") {
			t.Errorf("buildx did not forward to %s, or the proof did not run:\n%s", builder.DockerfileSyntax, lastLines(out, 40))
		}
		bx.run(t, dir, "build", "--progress", "plain", "--output", "type=image,name="+ref+",push=true,registry.insecure=true", ".")
		labels := imageLabels(t, ref)
		var stack matrix.Stack
		if err := json.Unmarshal([]byte(labels[matrix.StackLabel]), &stack); err != nil || stack.CUDA != "12.2.2" {
			t.Errorf("label %s = %q (%v), want the stack of CUDA 12.2.2", matrix.StackLabel, labels[matrix.StackLabel], err)
		}
		if !strings.HasPrefix(labels[publish.InputsLabel], "sha256:") || !strings.Contains(df, `LABEL `+publish.InputsLabel+`="`+labels[publish.InputsLabel]+`"`) {
			t.Errorf("label %s = %q, not the Dockerfile's", publish.InputsLabel, labels[publish.InputsLabel])
		}
		if labels["org.opencontainers.image.base.digest"] == "" {
			t.Errorf("no base digest label: %v", labels)
		}
	})

	t.Run("buildx bake of matrix expand -o bake --context-dir", func(t *testing.T) {
		work := t.TempDir()
		pf := filepath.Join(work, "publish.yaml")
		must(t, os.WriteFile(pf, []byte("repository: "+env.Registry.Host+"/gpuimg/bake\ntag: \"cu{cuda_short}-py{python}\"\nmatrix:\n  cuda: [\"12.2\"]\n"), 0o644))
		dir := filepath.Join(work, "ctx")
		_, errOut, code := run(t, "matrix", "expand", "-f", pf, "--matrix-file", env.MatrixFile, "-o", "bake", "--context-dir", dir)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var bake publish.BakeFile
		b, err := os.ReadFile(filepath.Join(dir, cli.BakeFileName))
		must(t, err)
		must(t, json.Unmarshal(b, &bake))
		if len(bake.Target) != 1 {
			t.Fatalf("%d bake targets, want 1", len(bake.Target))
		}
		bx.run(t, dir, "bake", "-f", cli.BakeFileName, "--progress", "plain", "--set", "*.target=gpuimg-check", "--set", "*.cache-from=", "--set", "*.cache-to=")
		bx.run(t, dir, "bake", "-f", cli.BakeFileName, "--progress", "plain", "--set", "*.output=type=image,push=true,registry.insecure=true", "--set", "*.cache-from=", "--set", "*.cache-to=")
		for _, tg := range bake.Target {
			labels := imageLabels(t, tg.Tags[0])
			if got, want := labels[publish.InputsLabel], tg.Labels[publish.InputsLabel]; got == "" || got != want {
				t.Errorf("%s: label %s = %q, want the target's %q", tg.Tags[0], publish.InputsLabel, got, want)
			}
			if labels[matrix.StackLabel] != tg.Labels[matrix.StackLabel] {
				t.Errorf("%s: label %s = %q, want %q", tg.Tags[0], matrix.StackLabel, labels[matrix.StackLabel], tg.Labels[matrix.StackLabel])
			}
		}
	})
}

// buildxRun is docker buildx with state of its own and one builder, of
// the remote driver, on a test buildkitd.
type buildxRun struct {
	bin, builder string
	env          []string
}

// newBuildx creates a buildx builder on the buildkitd at addr, in a
// private BUILDX_CONFIG and DOCKER_CONFIG, and removes it when t ends.
func newBuildx(t *testing.T, bin, addr string) *buildxRun {
	t.Helper()
	state := t.TempDir()
	b := &buildxRun{bin: bin, builder: "gpuimg-e2e", env: append(os.Environ(),
		"BUILDX_CONFIG="+filepath.Join(state, "buildx"), "DOCKER_CONFIG="+filepath.Join(state, "docker"), "BUILDX_NO_DEFAULT_ATTESTATIONS=1")}
	b.run(t, state, "create", "--name", b.builder, "--driver", "remote", addr)
	t.Cleanup(func() {
		cmd := exec.Command(b.bin, "rm", b.builder)
		cmd.Env = b.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("buildx rm %s: %v\n%s", b.builder, err, out)
		}
	})
	return b
}

// run runs buildx with args in dir (on the builder, but for create), and
// returns its output; it fails t when buildx fails.
func (b *buildxRun) run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if args[0] != "create" {
		args = append([]string{args[0], "--builder", b.builder}, args[1:]...)
	}
	cmd := exec.CommandContext(t.Context(), b.bin, args...)
	cmd.Dir, cmd.Env = dir, b.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("buildx %s: %v\n%s", strings.Join(args, " "), err, lastLines(string(out), 40))
	}
	t.Logf("buildx %s:\n%s", args[0], lastLines(string(out), 8))
	return string(out)
}

// imageLabels are the config labels of the image ref names (for
// linux/amd64 when it is an index).
func imageLabels(t *testing.T, ref string) map[string]string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	img, err := remote.Image(r, remote.WithContext(t.Context()))
	must(t, err)
	cfg, err := img.ConfigFile()
	must(t, err)
	return cfg.Config.Labels
}

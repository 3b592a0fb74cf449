package cli

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

var updateGolden = flag.Bool("update", false, "rewrite internal/cli/testdata/golden/*.txt from the commands' output")

// TestGoldenOutput runs a fixed set of commands that need no daemon
// (matrix resolve, check, list and expand, publish --dry-run, validate,
// probe judge, images export, convert, copy --dry-run and ls, the
// errors for a bad -o, and the error object under -o json and github)
// and compares stdout, stderr and the exit status byte for byte with
// testdata/golden: a refactor of flags or rendering
// must leave them as they are. -update rewrites the files; the diff is
// then the change of output to review.
//
// Paths that change from run to run (the test's directory, the
// in-process registry's address) are written as $DIR and $REGISTRY, the
// durations copy prints as $SECONDS and the time a report was made as $NOW.
func TestGoldenOutput(t *testing.T) {
	t.Setenv("BUILDKIT_HOST", "unix:///nonexistent/buildkitd.sock") // no build reaches a daemon
	dir := t.TempDir()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	// A CUDA 12.2 / torch cu121 image: in an OCI layout and in the
	// in-process registry.
	img := smallImage(t, "cuda>=12.2")
	ociDir := filepath.Join(dir, "layout")
	p, err := layout.Write(ociDir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "torch"})))
	for _, tag := range []string{"2.3", "2.3-cu121"} {
		r, err := name.ParseReference(host + "/ml/torch:" + tag)
		must(t, err)
		must(t, remote.Write(r, img))
	}
	// A CUDA 12.4.1 image that sets CUDA_VERSION and no
	// NVIDIA_REQUIRE_CUDA (the NVIDIA container toolkit's legacy rule).
	legacyDir := filepath.Join(dir, "legacy")
	lp, err := layout.Write(legacyDir, empty.Index)
	must(t, err)
	must(t, lp.AppendImage(withEnv(t, cudaTorchImage(t, "12.4.1", "12.1", ""), "CUDA_VERSION=12.4.1")))
	probeResult := filepath.Join("testdata", "golden", "h200.json") // a copy of validate/testdata/probe/h200.json
	publishFile := filepath.Join("..", "..", "examples", "publish.yaml")
	oci := "oci:" + ociDir

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"resolve", []string{"matrix", "resolve", "--cuda", "12.2", "--torch", "2.3"}},
		{"resolve-json", []string{"matrix", "resolve", "--cuda", "12.2", "--torch", "2.3", "-o", "json"}},
		{"resolve-yaml", []string{"matrix", "resolve", "--cuda", "12.2", "--torch", "2.3", "-o", "yaml"}},
		{"resolve-jax", []string{"matrix", "resolve", "--jax", "latest", "--os", "ubuntu"}},
		{"resolve-conflict", []string{"matrix", "resolve", "--cuda", "11.8", "--torch", "2.9"}},
		{"resolve-conflict-json", []string{"matrix", "resolve", "--cuda", "11.8", "--torch", "2.9", "-o", "json"}},
		{"resolve-error-json", []string{"matrix", "resolve", "--cuda", "abc", "-o", "json"}},
		{"resolve-bad-output", []string{"matrix", "resolve", "--cuda", "12.2", "-o", "xml"}},
		{"check", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "h100"}},
		{"check-json", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "h100", "-o", "json"}},
		{"check-fail", []string{"matrix", "check", "--cuda", "12.4", "--torch", "2.6", "--driver", "535.104.05", "--gpu", "rtx5090"}},
		{"check-fail-json", []string{"matrix", "check", "--cuda", "12.4", "--torch", "2.6", "--driver", "535.104.05", "--gpu", "rtx5090", "-o", "json"}},
		{"check-gpus", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "a10g,l4"}},
		{"check-bad-output", []string{"matrix", "check", "--cuda", "12.2", "-o", "yaml"}},
		{"check-driver-branch", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535"}},
		{"list-cuda", []string{"matrix", "list", "cuda"}},
		{"list-cuda-json", []string{"matrix", "list", "cuda", "-o", "json"}},
		{"list-torch", []string{"matrix", "list", "torch"}},
		{"list-gpus", []string{"matrix", "list", "gpus"}},
		{"list-nccl", []string{"matrix", "list", "nccl"}},
		{"list-targets", []string{"matrix", "list", "targets"}},
		{"list-targets-json", []string{"matrix", "list", "targets", "-o", "json"}},
		{"list-os", []string{"matrix", "list", "os"}},
		{"list-images-json", []string{"matrix", "list", "images", "-o", "json"}},
		{"list-bad-output", []string{"matrix", "list", "cuda", "-o", "yaml"}},
		{"expand", []string{"matrix", "expand", "-f", publishFile}},
		{"expand-json", []string{"matrix", "expand", "-f", publishFile, "-o", "json"}},
		{"expand-github", []string{"matrix", "expand", "-f", publishFile, "-o", "github"}},
		{"expand-bake", []string{"matrix", "expand", "-f", publishFile, "-o", "bake"}},
		{"expand-error-github", []string{"matrix", "expand", "-f", filepath.Join(dir, "none.yaml"), "-o", "github"}},
		{"expand-bad-output", []string{"matrix", "expand", "-f", publishFile, "-o", "xml"}},
		{"publish-dry-run", []string{"publish", "-f", publishFile, "--dry-run", "--progress", "plain"}},
		{"publish-bad-progress", []string{"publish", "-f", publishFile, "--dry-run", "--progress", "tty"}},
		{"validate", []string{"validate", oci, "--driver", "535.104.05", "--gpu", "h100"}},
		{"validate-json", []string{"validate", oci, "--driver", "535.104.05", "--gpu", "h100", "-o", "json"}},
		{"validate-junit", []string{"validate", oci, "--driver", "535.104.05", "--gpu", "h100", "-o", "junit"}},
		{"validate-target", []string{"validate", oci, "--target", "runpod"}},
		{"validate-fail", []string{"validate", oci, "--driver", "470.57.02"}},
		{"validate-legacy", []string{"validate", "oci:" + legacyDir, "--driver", "535.104.05", "--gpu", "h100"}},
		{"validate-driver-branch", []string{"validate", oci, "--driver", "535"}},
		{"validate-bad-output", []string{"validate", oci, "-o", "xml"}},
		{"probe-judge", []string{"probe", "judge", "--reference", probeResult}},
		{"probe-judge-json", []string{"probe", "judge", "--reference", probeResult, "-o", "json"}},
		{"probe-judge-bad-output", []string{"probe", "judge", "--reference", probeResult, "-o", "xml"}},
		{"export", []string{"images", "export", oci, filepath.Join(dir, "torch.tar"), "--format", "docker-archive"}},
		{"export-json", []string{"images", "export", oci, filepath.Join(dir, "torch.oci.tar"), "-o", "json"}},
		{"export-bad-output", []string{"images", "export", oci, filepath.Join(dir, "x.tar"), "-o", "xml"}},
		{"convert", []string{"images", "convert", oci, host + "/ml/torch:2.3-zstd", "--compression", "zstd"}},
		{"convert-json", []string{"images", "convert", oci, host + "/ml/torch:2.3-gzip", "--compression", "gzip", "-o", "json"}},
		{"convert-bad-compression", []string{"images", "convert", oci, host + "/ml/torch:2.3-lz4", "--compression", "lz4"}},
		{"convert-bad-output", []string{"images", "convert", oci, host + "/ml/torch:2.3-t", "--compression", "zstd", "-o", "xml"}},
		{"copy-dry-run", []string{"images", "copy", "--dry-run", oci, host + "/ml/copy:2.3"}},
		{"copy-dry-run-json", []string{"images", "copy", "--dry-run", oci, host + "/ml/copy:2.3", "-o", "json"}},
		{"copy-platform", []string{"images", "copy", "--dry-run", "--platform", "linux/amd64", oci, host + "/ml/amd64:2.3"}},
		{"copy-bad-platform", []string{"images", "copy", "--platform", "linux/", oci, host + "/ml/amd64:2.3"}},
		{"copy-bad-output", []string{"images", "copy", oci, host + "/ml/copy:2.3", "-o", "xml"}},
		{"ls", []string{"images", "ls", host + "/ml/torch"}},
		{"ls-json", []string{"images", "ls", host + "/ml/torch", "-o", "json"}},
		{"ls-table-is-text", []string{"images", "ls", host + "/ml/torch", "-o", "text"}},
		{"ls-bad-output", []string{"images", "ls", host + "/ml/torch", "-o", "xml"}},
		{"build-bad-output", []string{"build", "--cuda", "12.2", "-o", "xml"}},
		{"build-buildkit-output", []string{"build", "--cuda", "12.2", "-o", "type=oci,dest=x.tar"}},
		{"build-bad-buildkit-output", []string{"build", "--cuda", "12.2", "--output", "json"}},
		{"build-bad-copy", []string{"build", "--cuda", "12.2", "--copy", "app"}},
		{"build-bad-compression", []string{"build", "--cuda", "12.2", "--compression", "lz4"}},
		{"build-bad-platform", []string{"build", "--cuda", "12.2", "--platform", "linux/"}},
		{"import-bad-output", []string{"images", "import", oci, "--target", "runpod", "--to", host + "/ml/x:1", "-o", "xml"}},
		{"version-text-is-table", []string{"version", "-o", "table"}},
		{"version-bad-output", []string{"version", "-o", "yaml"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tt.args...)
			norm := func(s string) string {
				s = strings.ReplaceAll(s, dir, "$DIR")
				s = strings.ReplaceAll(s, host, "$REGISTRY")
				s = nowRE.ReplaceAllString(s, "${1}$$NOW")
				return secondsRE.ReplaceAllString(s, "${1}$$SECONDS")
			}
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = norm(a)
			}
			got := fmt.Sprintf("$ gpuimg %s\nexit %d\n-- stdout --\n%s-- stderr --\n%s", strings.Join(args, " "), code, norm(stdout), norm(stderr))
			file := filepath.Join("testdata", "golden", tt.name+".txt")
			if *updateGolden {
				must(t, os.WriteFile(file, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./internal/cli -run TestGoldenOutput -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("output of gpuimg %s changed (-update rewrites %s):\n%s", strings.Join(args, " "), file, lineDiff(string(want), got))
			}
		})
	}
}

// secondsRE matches the durations the commands print (copy's "done in
// 0.1s", its JSON "seconds").
var secondsRE = regexp.MustCompile(`(done in |"seconds": )[0-9][0-9.e-]*s?`)

// nowRE matches the time a validation report was made (its JSON
// "created", with the nanoseconds time.Now has; the fixtures' times have
// none).
var nowRE = regexp.MustCompile(`("created": ")[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]+Z`)

// lineDiff names the first line where want and got differ, with both.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "same lines"
}

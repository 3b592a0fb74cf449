package cli

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestQuietStderr runs the long commands that run here (every one that
// reads or writes images, and build up to its Dockerfile) with -q: each
// succeeds with nothing on stderr. Without -q, those marked chatty write
// their notes there (the stack and layers lines, what was attached, the
// publish summary beside -o json), so the test sees -q take them away.
func TestQuietStderr(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := host + "/ml/torch:2.3"
	for _, r := range []string{ref, host + "/nvidia/cuda:12.2.2-runtime-ubuntu22.04"} {
		nr, err := name.ParseReference(r)
		must(t, err)
		must(t, remote.Write(nr, smallImage(t, "cuda>=12.2")))
	}
	dir := t.TempDir()
	key, _ := pemKeyPair(t, dir, "k")
	clean := layoutOf(t, [2]string{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"}, [2]string{"app/serve", "#!/bin/sh\n"})

	for _, tt := range []struct {
		name   string
		args   []string
		chatty bool // writes notes on stderr without -q
	}{
		{"build --dockerfile-only", []string{"build", "--cuda", "12.2", "--registry-mirror", "docker.io=" + host, "--dockerfile-only"}, true},
		{"validate", []string{"validate", ref}, false},
		{"validate --attach", []string{"validate", ref, "--attach", "--key", key}, true},
		{"sbom --attach", []string{"sbom", ref, "--attach", "--key", key}, true},
		{"images export", []string{"images", "export", ref, filepath.Join(dir, "torch.tar"), "--progress", "plain"}, false},
		{"images copy", []string{"images", "copy", ref, host + "/mirror/torch:2.3", "--progress", "plain"}, false},
		{"images convert", []string{"images", "convert", ref, host + "/ml/torch:2.3-zstd", "--compression", "zstd", "--progress", "plain"}, false},
		{"images import", []string{"images", "import", "oci:" + clean, "--target", "runpod", "--to", host + "/runpod/model:v1", "--progress", "plain"}, false},
		{"publish -o json", []string{"publish", "-f", filepath.Join("..", "..", "examples", "publish.yaml"), "--dry-run", "-o", "json"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := run(t, append([]string{"-q"}, tt.args...)...)
			if code != ExitOK {
				t.Fatalf("-q: exit %d:\n%s", code, stderr)
			}
			if stderr != "" {
				t.Errorf("-q: stderr is not empty:\n%s", stderr)
			}
			if !tt.chatty {
				return
			}
			if _, stderr, code = run(t, tt.args...); code != ExitOK || stderr == "" {
				t.Errorf("without -q: exit %d, stderr %q; want its notes", code, stderr)
			}
		})
	}
}

package cli

import (
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestPublishNoBuilderReached: publish whose only builder is a closed
// port on 127.0.0.1 could not run: exit 2 in one line naming the
// builder, the report still written, within the connect timeout. The
// base image is pinned through --registry-mirror on an in-process
// registry, so the builder is the one thing missing.
func TestPublishNoBuilderReached(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	file := filepath.Join(dir, "publish.yaml")
	must(t, os.WriteFile(file, []byte("repository: "+host+"/ml/torch\ntag: \"{torch}-cu{cuda_short}\"\nmatrix:\n  cuda: [\"12.2\"]\n  torch: [\"2.3\"]\nvalidate: {driver: 535.104.05}\n"), 0o644))
	f, err := publish.LoadFile(file)
	must(t, err)
	db, err := matrix.Builtin()
	must(t, err)
	plan, err := publish.Expand(t.Context(), db, f, publish.ExpandOptions{})
	must(t, err)
	base, err := random.Image(256, 1)
	must(t, err)
	r, err := name.ParseReference(host + "/" + strings.TrimPrefix(plan.Variants[0].Stack.BaseImage, "docker.io/"))
	must(t, err)
	must(t, remote.Write(r, base))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	closed := "tcp://" + l.Addr().String()
	must(t, l.Close())

	start := time.Now()
	out, errOut, code := run(t, "publish", "-f", file, "--builder", closed, "--registry-mirror", "docker.io="+host,
		"--progress", "quiet", "--report-dir", filepath.Join(dir, "report"), "--state-dir", filepath.Join(dir, "state"))
	t.Logf("exit %d: %s%s", code, errOut, out)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("publish took %s to find its builder unreachable", took)
	}
	if code != ExitInvalid || !strings.Contains(errOut, "no builder of the pool could be reached") || !strings.Contains(errOut, l.Addr().String()) ||
		strings.Count(errOut, "gpuimg:") != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, want %d with one line naming the unreachable builder\nstderr %s\nstdout %s", code, ExitInvalid, errOut, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "report", publish.ReportHTML)); err != nil || !strings.Contains(out, "1 failed") {
		t.Errorf("the report: %v; stdout %s", err, out)
	}
}

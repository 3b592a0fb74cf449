package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestInterruptNamesItself checks that a command stopped by SIGINT ends
// saying so, with exit 130, and not with the hint of an input error
// ("fix the publish file"): the cancelled run is no fault of the file.
func TestInterruptNamesItself(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(&Interrupted{Signal: syscall.SIGINT})
	var out, errb bytes.Buffer
	t.Setenv("BUILDKIT_HOST", "")
	code := Main(ctx, []string{"publish", "-f", filepath.Join("..", "..", "examples", "publish.yaml"), "--dry-run",
		"--builder", "tcp://127.0.0.1:1", "--registry-mirror", "docker.io=127.0.0.1:1", "--report-dir", t.TempDir()}, &out, &errb)
	msg := errb.String()
	if code != 130 || !strings.HasPrefix(msg, "gpuimg: interrupted by SIGINT; stopped: ") || strings.Contains(msg, "fix the publish file") {
		t.Errorf("exit %d, want 130 saying it was interrupted and not blaming the publish file:\n%s", code, msg)
	}
}

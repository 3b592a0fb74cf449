package verbs

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	controlapi "github.com/moby/buildkit/api/services/control"
	"google.golang.org/grpc"

	"github.com/gpuimg/gpuimg/builder"
)

// workers is the one call of BuildKit's control API that DialBuilder and
// Alive make: a stand-in daemon that answers it, as TestLocalInUse's
// stand-in buildkitd is sleep (real daemons: TestBuildEndToEnd,
// TestPublishEndToEnd).
type workers struct {
	controlapi.UnimplementedControlServer
}

func (workers) ListWorkers(context.Context, *controlapi.ListWorkersRequest) (*controlapi.ListWorkersResponse, error) {
	return &controlapi.ListWorkersResponse{}, nil
}

// TestDialBuilder: a named address is dialled (the local daemon is not
// touched), checked, and its Alive follows the daemon; one that does not
// answer is an error naming it.
func TestDialBuilder(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "buildkitd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	controlapi.RegisterControlServer(srv, workers{})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	local := &builder.Local{StateDir: filepath.Join(dir, "local")}

	addr := "unix://" + sock
	b, err := DialBuilder(t.Context(), addr, local)
	if err != nil {
		t.Fatal(err)
	}
	if b.Addr != addr || b.Local {
		t.Errorf("dialled %q (local %v), want %q, not local", b.Addr, b.Local, addr)
	}
	if _, err := os.Stat(local.StateDir); !os.IsNotExist(err) {
		t.Errorf("the local daemon's state dir exists (%v) after dialling a named builder", err)
	}
	if !b.Alive(t.Context()) {
		t.Error("not alive while the daemon answers")
	}
	srv.Stop()
	if b.Alive(t.Context()) {
		t.Error("alive after the daemon stopped")
	}
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	gone := "unix://" + filepath.Join(dir, "nobody.sock")
	if b, err := DialBuilder(t.Context(), gone, local); err == nil || b != nil || !strings.Contains(err.Error(), gone) {
		t.Errorf("dial of a daemon that is not there: %v, %v; want an error naming %s", b, err, gone)
	}
}

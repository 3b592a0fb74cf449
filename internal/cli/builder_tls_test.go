package cli

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestBuilderTLS connects to a real buildkitd listening on tcp:// with
// mutual TLS, through the --builder-tls-* flags' options.
func TestBuilderTLS(t *testing.T) {
	testenv.Require(t, "starts buildkitd with TLS", testenv.Slow, testenv.Root)
	ctx := t.Context()
	tools, err := testenv.BuildTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// buildkitd's OCI worker runs runc; on a fresh machine this test may
	// run before any shared environment has installed it.
	must(t, testenv.EnsurePackages(ctx, "runc"))
	dir, err := os.MkdirTemp("/tmp", "gt-")
	must(t, err)
	defer os.RemoveAll(dir)
	files, err := testenv.WriteCerts(dir)
	must(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := "tcp://" + l.Addr().String()
	l.Close()
	cmd := exec.Command(tools.Buildkitd, "--root", filepath.Join(dir, "root"), "--addr", addr, "--otel-socket-path", filepath.Join(dir, "otel.sock"),
		"--tlscacert", files["ca"], "--tlscert", files["server"], "--tlskey", files["server-key"], "--oci-worker-net", "host")
	logf, err := os.Create(filepath.Join(dir, "log"))
	must(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	must(t, cmd.Start())
	defer func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}()

	o := &BuilderOptions{TLSCA: files["ca"], TLSCert: files["client"], TLSKey: files["client-key"], TLSName: "127.0.0.1"}
	var lastErr error
	for range 100 {
		c, err := builder.Connect(ctx, addr, o.clientOpts()...)
		if err == nil {
			c.Close()
			lastErr = nil
			break
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("connect with TLS: %v\n%s", lastErr, b)
	}
	// Without a client certificate the daemon must refuse.
	noCert := &BuilderOptions{TLSCA: files["ca"], TLSName: "127.0.0.1"}
	if c, err := builder.Connect(ctx, addr, noCert.clientOpts()...); err == nil {
		c.Close()
		t.Fatal("connected without a client certificate: the test proves nothing")
	} else if !strings.Contains(err.Error(), addr) {
		t.Errorf("error does not name the daemon: %v", err)
	}
}

package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// gpuimgBinary builds cmd/gpuimg into a temporary directory: signals are
// tested on a real process.
func gpuimgBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gpuimg")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := testenv.GoBuild(ctx, "./cmd/gpuimg", bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestSignalsEndBlockingReads runs gpuimg on reads that never end (a
// stdin nobody writes, a registry that never answers) and sends one
// SIGTERM or SIGINT: the command ends within seconds with 143 or 130,
// saying so, and leaves nothing in its output directory or TMPDIR.
func TestSignalsEndBlockingReads(t *testing.T) {
	if testing.Short() && os.Getenv("GPUIMG_SIGNAL_TESTS") == "" {
		t.Skip("builds the gpuimg binary; set GPUIMG_SIGNAL_TESTS=1 to run it under -short")
	}
	bin := gpuimgBinary(t)
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers, until the test ends
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stall) })
	host := strings.TrimPrefix(srv.URL, "http://")
	out := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		sig  syscall.Signal
		code int
		want string
	}{
		{"--stack - on a stalled stdin, SIGTERM", []string{"matrix", "check", "--stack", "-", "--driver", "535.104.05"}, syscall.SIGTERM, 143, "interrupted by SIGTERM"},
		{"--stack - on a stalled stdin, SIGINT", []string{"matrix", "check", "--stack", "-", "--driver", "535.104.05"}, syscall.SIGINT, 130, "interrupted by SIGINT"},
		{"images ls on a stalled registry", []string{"images", "ls", host + "/stalled/repo", "--insecure"}, syscall.SIGTERM, 143, "interrupted by SIGTERM"},
		{"images export from a stalled registry", []string{"images", "export", host + "/stalled/repo:t", filepath.Join(out, "x.tar"), "--insecure"}, syscall.SIGTERM, 143, "interrupted by SIGTERM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(bin, c.args...)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stdin, err := cmd.StdinPipe() // open, never written
			must(t, err)
			defer stdin.Close()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			must(t, cmd.Start())
			time.Sleep(time.Second) // into the blocking read
			must(t, cmd.Process.Signal(c.sig))
			timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
			_ = cmd.Wait() // the exit code is judged below
			if !timer.Stop() {
				t.Fatalf("still running 20 s after the signal\n%s", stderr.String())
			}
			if got := cmd.ProcessState.ExitCode(); got != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, want %d naming %q:\n%s", got, c.code, c.want, stderr.String())
			}
			for _, dir := range []string{tmp, out} {
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("%s holds %v afterwards", dir, ents)
				}
			}
		})
	}
}

// TestFIFOFilesRefused: a FIFO given as -f (build, matrix expand),
// --matrix-file or --stack is refused at once, exit 2, without opening
// it blocking: no writer ever comes.
func TestFIFOFilesRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	for _, args := range [][]string{
		{"build", "-f", fifo},
		{"matrix", "expand", "-f", fifo},
		{"matrix", "resolve", "--cuda", "12.2", "--matrix-file", fifo},
		{"matrix", "check", "--stack", fifo, "--driver", "535.104.05"},
	} {
		done := make(chan struct{})
		var errOut string
		var code int
		go func() {
			defer close(done)
			_, errOut, code = run(t, args...)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: still reading the FIFO after 20 s", args)
		}
		if code != ExitInvalid || !strings.Contains(errOut, "not a regular file") {
			t.Errorf("%v: exit %d, want %d naming a FIFO:\n%s", args, code, ExitInvalid, errOut)
		}
	}
}

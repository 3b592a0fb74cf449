package cli

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/images"
)

// TestProgressOnAPseudoTerminal gives showProgress a real pseudo-terminal
// as stderr: auto mode redraws one line in place (\r, erase to the end of
// the line) and ends it with a newline; a pipe gets plain lines; -q and
// --progress quiet get nothing.
func TestProgressOnAPseudoTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx) // until the tty side closes
		read <- string(b)
	}()
	feed(t, tty, "auto", false)
	_ = tty.Close()
	var got string
	select {
	case got = <-read:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing read from the pseudo-terminal")
	}
	if n := strings.Count(got, "\r"); n < 2 || !strings.Contains(got, "\x1b[K") {
		t.Errorf("no redraw in place on a terminal (%d carriage returns):\n%q", n, got)
	}
	if !strings.Contains(got, "export: 4.0 MiB / 4.0 MiB (100%), layers 4/4") {
		t.Errorf("the last state is not shown:\n%q", got)
	}

	r, w, err := os.Pipe()
	must(t, err)
	feed(t, w, "auto", false)
	_ = w.Close()
	b, _ := io.ReadAll(r)
	if strings.Contains(string(b), "\r") || !strings.Contains(string(b), "export: 1.0 MiB / 4.0 MiB (25%), layers 1/4\n") {
		t.Errorf("a pipe gets plain lines:\n%q", b)
	}
	for _, tt := range []struct {
		mode  string
		quiet bool
	}{{"quiet", false}, {"auto", true}} {
		var buf bytes.Buffer
		feed(t, &buf, tt.mode, tt.quiet)
		if buf.Len() != 0 {
			t.Errorf("--progress %s, -q %v wrote %q", tt.mode, tt.quiet, buf.String())
		}
	}
	if _, _, err := showProgress(progressCmd(io.Discard, false), "x", "tty"); err == nil || exitCode(err) != ExitInvalid {
		t.Errorf("--progress tty: %v, want a bad-input error", err)
	}
}

// progressCmd is a command with the global flags, stderr w, -q set or
// not.
func progressCmd(w io.Writer, q bool) *cobra.Command {
	cmd := &cobra.Command{}
	addScreenFlags(cmd.Flags())
	if q {
		_ = cmd.Flags().Set("quiet", "true")
	}
	cmd.SetErr(w)
	return cmd
}

// feed shows four layers of 1 MiB read, 150 ms apart, through the
// option images is given.
func feed(t *testing.T, w io.Writer, mode string, q bool) {
	t.Helper()
	fn, done, err := newProgress(progressCmd(w, q), "export", mode)
	must(t, err)
	for i := 1; i <= 4; i++ {
		time.Sleep(150 * time.Millisecond)
		fn(images.Progress{Bytes: int64(i) << 20, Total: 4 << 20, LayersDone: i, Layers: 4})
	}
	done()
}

// TestExportIndexProgressPlain: images export of a whole index in plain
// mode ends with every platform's layers read (2 images of 3 layers:
// layers 6/6), not one platform's or none.
func TestExportIndexProgressPlain(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/ml/multi:1"
	idx, err := random.Index(4096, 3, 2)
	must(t, err)
	r, err := name.ParseReference(ref)
	must(t, err)
	must(t, remote.WriteIndex(r, idx))
	_, stderr, code := run(t, "images", "export", ref, filepath.Join(t.TempDir(), "multi.tar"), "--progress", "plain")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "(100%), layers 6/6") {
		t.Errorf("the last progress line is %q, want every platform's 6 layers read:\n%s", last, stderr)
	}
}

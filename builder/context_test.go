package builder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCopySources builds a context with links that stay inside it and
// links that leave it (absolute, relative, through a chain, through a
// linked directory on the way), and checks which --copy sources are
// refused, with the link named.
func TestCheckCopySources(t *testing.T) {
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600))
	ctx := t.TempDir()
	for _, d := range []string{"app/lib", "bad/abs", "bad/rel", "bad/chain", "bad/dangling"} {
		must(os.MkdirAll(filepath.Join(ctx, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(ctx, "app/main.py"), []byte("print(1)\n"), 0o644))
	must(os.Symlink("main.py", filepath.Join(ctx, "app/alias.py")))           // inside
	must(os.Symlink("../main.py", filepath.Join(ctx, "app/lib/up.py")))       // inside, one level up
	must(os.Symlink(filepath.Join(ctx, "app"), filepath.Join(ctx, "appdir"))) // absolute, inside
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ctx, "bad/abs/key")))
	must(os.Symlink("../../../"+filepath.Base(outside)+"/secret", filepath.Join(ctx, "bad/rel/key")))
	must(os.Symlink("../abs/key", filepath.Join(ctx, "bad/chain/key"))) // inside, to a link that leaves
	must(os.Symlink("/etc/gpuimg-nonexistent", filepath.Join(ctx, "bad/dangling/key")))
	must(os.Symlink(outside, filepath.Join(ctx, "outdir")))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ctx, "top")))

	tests := []struct {
		copy string
		want string // "" = accepted; else in the error
	}{
		{"app:/app", ""},
		{"app/main.py:/app/main.py", ""},
		{"app/alias.py:/app/alias.py", ""},
		{"appdir:/app", ""},
		{"bad/abs:/x", "bad/abs/key -> " + filepath.Join(outside, "secret")},
		{"bad/rel:/x", "bad/rel/key -> ../../../"},
		{"bad/chain:/x", "bad/chain/key -> ../abs/key"},
		{"bad/dangling:/x", "bad/dangling/key -> /etc/gpuimg-nonexistent"},
		{"bad:/x", "points outside the context directory"},
		{"top:/x", "top -> " + filepath.Join(outside, "secret")},
		{"outdir/secret:/x", "outdir points outside the context directory"},
		{"missing:/x", "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.copy, func(t *testing.T) {
			err := checkCopySources(ctx, []string{tt.copy})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("accepted, want an error with %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q lacks %q", err, tt.want)
			case tt.want != "" && tt.want != "no such file or directory" && !errors.Is(err, ErrOutsideContext):
				t.Errorf("error %q does not wrap ErrOutsideContext", err)
			}
		})
	}
}

// TestPushFailure reads BuildKit's push errors as they reach the client.
func TestPushFailure(t *testing.T) {
	tests := []struct {
		msg       string
		registry  string
		transient bool
	}{
		{`failed to solve: failed to push 127.0.0.1:5000/gpuimg/e2e:t: unexpected status from PUT request to http://127.0.0.1:5000/v2/gpuimg/e2e/manifests/t: 503 Service Unavailable`, "127.0.0.1:5000", true},
		{`failed to solve: failed to push reg.example.com/ml/torch:2.3: failed to do request: Head "https://reg.example.com/v2/ml/torch/blobs/sha256:ab": dial tcp 10.0.0.1:443: connect: connection refused`, "reg.example.com", true},
		{`failed to solve: failed to push 127.0.0.1:5500/a:b: unexpected status from POST request to http://127.0.0.1:5500/v2/a/blobs/uploads/: 429 Too Many Requests`, "127.0.0.1:5500", true},
		{`failed to solve: failed to push 127.0.0.1:43899/gpuimg/faults-flaky:t: toomanyrequests: slow down`, "127.0.0.1:43899", true},
		{`failed to solve: failed to push 127.0.0.1:5500/a:500: unexpected status from PUT request: 401 Unauthorized`, "127.0.0.1:5500", false},
		{`failed to solve: failed to push reg.example.com/a@sha256:0123: server message: insufficient_scope: authorization failed`, "reg.example.com", false},
		{`failed to solve: process "/bin/sh -c pip install x" did not complete successfully: exit code: 1`, "", false},
	}
	for _, tt := range tests {
		reg, tr := pushFailure(errors.New(tt.msg))
		if reg != tt.registry || tr != tt.transient {
			t.Errorf("%s:\n got %q %v, want %q %v", tt.msg, reg, tr, tt.registry, tt.transient)
		}
	}
}

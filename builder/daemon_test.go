package builder

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocalInUse runs a stand-in daemon (sleep, copied under the name
// buildkitd so pid() accepts it) and checks the use lock: while one Local
// holds it, another can neither stop it nor restart it with other
// settings; after Release it stops. No test holds the lock under a real
// buildkitd: this stand-in is the only check of it.
func TestLocalInUse(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "buildkitd")
	if err := os.WriteFile(fake, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fake, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	// Start returns once execve has closed the child's close-on-exec
	// pipe, which the kernel does before it writes the new arguments:
	// /proc/PID/cmdline (what Local.pid checks for "buildkitd") can still
	// be empty for a moment.
	for i := 0; ; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		if err == nil && bytes.Contains(b, []byte("buildkitd")) {
			break
		}
		if i == 500 {
			t.Fatalf("the stand-in buildkitd's cmdline never named it: %q", b)
		}
		time.Sleep(time.Millisecond)
	}
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "buildkitd.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}

	building := &Local{StateDir: state}
	if err := building.hold(); err != nil { // what Ensure leaves held
		t.Fatal(err)
	}
	other := &Local{StateDir: state, InsecureRegistries: []string{"reg.internal:5000"}}
	if err := other.Stop(t.Context()); !errors.Is(err, ErrInUse) {
		t.Fatalf("Stop under a running build: %v, want ErrInUse", err)
	}
	if _, err := other.Ensure(t.Context()); !errors.Is(err, ErrInUse) {
		t.Fatalf("Ensure with other settings under a running build: %v, want ErrInUse", err)
	}
	if syscall.Kill(cmd.Process.Pid, 0) != nil {
		t.Fatal("the daemon was stopped under a running build")
	}
	// A second user with the same daemon shares it: a shared hold works.
	second := &Local{StateDir: state}
	if err := second.hold(); err != nil {
		t.Fatalf("a second build cannot share the daemon: %v", err)
	}
	second.Release()

	building.Release()
	if err := other.Stop(t.Context()); err != nil {
		t.Fatalf("Stop after the build ended: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon still runs after Stop")
	}
}

func TestDaemonEnv(t *testing.T) {
	for _, tt := range []struct {
		name      string
		environ   []string
		path      []string
		wantPATH  string
		wantOther []string
	}{
		{"no Path: gpuimg's environment as it is", []string{"HOME=/root", "PATH=/usr/bin"}, nil, "/usr/bin", []string{"HOME=/root"}},
		{"Path before PATH", []string{"PATH=/usr/bin:/bin", "HOME=/root"}, []string{"/opt/emu", "/opt/x"}, "/opt/emu:/opt/x:/usr/bin:/bin", []string{"HOME=/root"}},
		{"no PATH in the environment", []string{"HOME=/root"}, []string{"/opt/emu"}, "/opt/emu", []string{"HOME=/root"}},
		{"an empty PATH adds no empty entry (the current directory)", []string{"PATH="}, []string{"/opt/emu"}, "/opt/emu", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := daemonEnv(tt.environ, tt.path)
			var paths, other []string
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, "PATH="); ok {
					paths = append(paths, v)
				} else {
					other = append(other, kv)
				}
			}
			if len(paths) != 1 || paths[0] != tt.wantPATH {
				t.Errorf("PATH entries %q, want one: %q", paths, tt.wantPATH)
			}
			if !slices.Equal(other, tt.wantOther) {
				t.Errorf("the rest %q, want %q", other, tt.wantOther)
			}
		})
	}
	l := &Local{StateDir: "/x"}
	before := string(l.config())
	l.Path = []string{"/opt/emu"}
	if after := string(l.config()); after == before || !strings.Contains(after, "/opt/emu") {
		t.Errorf("a Path is not part of the daemon's settings (config):\n%s", after)
	}
}

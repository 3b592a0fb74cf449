package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// slowIndex is a fault proxy in front of the pip index that holds every
// request for the package gpuimg-slow while hold is set: a build that
// installs it stops at its last pip step (every earlier step done) for as
// long as a test needs.
type slowIndex struct {
	*testenv.FaultProxy
	held    chan *http.Request
	release chan struct{}
	gone    atomic.Int32 // held requests whose client gave up
}

func startSlowIndex(t *testing.T, env *testenv.Env) *slowIndex {
	t.Helper()
	if _, err := testenv.Wheel(env.WheelDir, "gpuimg-slow", "1.0", "py3-none-any", map[string]string{"gpuimg_slow/__init__.py": "VERSION = '1.0'\n"}); err != nil {
		t.Fatal(err)
	}
	p, err := testenv.StartFaultProxy(strings.TrimSuffix(env.Index.URL, "/simple/"))
	must(t, err)
	t.Cleanup(func() { _ = p.Close() })
	s := &slowIndex{FaultProxy: p}
	s.hold()
	return s
}

// hold starts holding gpuimg-slow's requests, with fresh channels.
func (s *slowIndex) hold() {
	s.held, s.release = make(chan *http.Request, 8), make(chan struct{})
	held, release := s.held, s.release
	s.SetRule(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "gpuimg-slow") && !strings.Contains(r.URL.Path, "gpuimg_slow") {
			return false
		}
		if testenv.Hold(w, r, held, release, 3*time.Minute) {
			s.gone.Add(1)
		}
		return true
	})
}

// letGo releases the held requests and passes every later one on; a
// second call does nothing.
func (s *slowIndex) letGo() {
	s.SetRule(nil)
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// waitHeld waits for n held requests.
func (s *slowIndex) waitHeld(t *testing.T, n int, what string) {
	t.Helper()
	for range n {
		select {
		case <-s.held:
		case <-time.After(4 * time.Minute):
			t.Fatalf("%s: no build reached the held pip step", what)
		}
	}
}

// proc is a gpuimg process a test signals.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr lockedBuffer
	done   chan struct{}
	tmp    string // its TMPDIR
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs the gpuimg binary bin with args and a TMPDIR of its own,
// and kills it (by PID) if the test ends first.
func start(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{}), tmp: t.TempDir()}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), "TMPDIR="+p.tmp), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	must(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("gpuimg %v still ran after %s:\n%s", p.cmd.Args[1:3], limit, lastLines(p.stderr.String(), 20))
	}
	return p.cmd.ProcessState.ExitCode()
}

// leftovers lists what the process left in its TMPDIR.
func (p *proc) leftovers() []string {
	ents, _ := os.ReadDir(p.tmp)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// tagExists says whether ref resolves in its registry.
func tagExists(t *testing.T, ref string) bool {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	_, err = remote.Head(r, remote.WithContext(t.Context()))
	return err == nil
}

// withArg returns args with the value after flag replaced.
func withArg(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i := range out[:len(out)-1] {
		if out[i] == flag {
			out[i+1] = value
		}
	}
	return out
}

// withoutArg returns args without flag and its value.
func withoutArg(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// testBuildFaults runs issue 15's faults in builds and pushes on
// TestBuildEndToEnd's environment (its registry, buildkitd and index;
// the framework steps are cached by its first build). buildArgs is that
// test's build command line. One more buildkitd is started, to be killed.
func testBuildFaults(t *testing.T, env *testenv.Env, buildArgs func(extra string, more ...string) []string) {
	ctx := t.Context()
	reg := env.Registry.Host
	bin := gpuimgBinary(t)

	t.Run("a --copy symlink leaving the context or a .. destination is refused", func(t *testing.T) {
		proj := t.TempDir()
		must(t, os.WriteFile(filepath.Join(proj, "app.py"), []byte("print(1)\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte("gpuimg-req==2.0\n"), 0o644))
		must(t, os.Symlink("/etc/shadow", filepath.Join(proj, "key")))
		for _, tt := range []struct{ copy, want string }{
			{"key:/app/key", "symbolic link key -> /etc/shadow points outside the context directory"},
			{"app.py:/app/../etc/cron.d/app", `must not contain ".."`},
		} {
			args := withArg(withArg(buildArgs("1.0", "-t", reg+"/gpuimg/faults:ctx", "--push"), "--context", proj), "--copy", tt.copy)
			_, errOut, code := run(t, args...)
			if code != cli.ExitInvalid || !strings.Contains(errOut, tt.want) || errorLines(errOut) != 1 {
				t.Errorf("--copy %s: exit %d, want 2 and one line with %q:\n%s", tt.copy, code, tt.want, lastLines(errOut, 5))
			}
		}
		if tagExists(t, reg+"/gpuimg/faults:ctx") {
			t.Error("a refused build wrote its tag")
		}
	})

	t.Run("registry answers 429 and 503 during the push: retried, complete", func(t *testing.T) {
		p, err := testenv.StartFaultProxy("http://" + reg)
		must(t, err)
		defer p.Close()
		// containerd retries a 429 at once, 5 times, and BuildKit does not
		// retry it after that: 429 to every upload for 2 s fails the
		// first push, and gpuimg's retry is what gets the image through.
		var posts, puts atomic.Int32
		var mu sync.Mutex
		var first time.Time
		throttled := func() bool {
			mu.Lock()
			defer mu.Unlock()
			if first.IsZero() {
				first = time.Now()
			}
			return time.Since(first) < 2*time.Second
		}
		p.SetRule(func(w http.ResponseWriter, r *http.Request) bool {
			switch {
			case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/blobs/uploads/") && throttled() && posts.Add(1) > 0:
				http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
				return true
			case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") && puts.Add(1) <= 1:
				http.Error(w, "maintenance", http.StatusServiceUnavailable)
				return true
			}
			return false
		})
		ref := p.Host + "/gpuimg/faults-flaky:t"
		out, errOut, code := run(t, buildArgs("1.0", "-t", ref, "--push")...)
		if code != 0 {
			t.Fatalf("exit %d through a flaky registry:\n%s", code, lastLines(errOut, 20))
		}
		if posts.Load() < 5 || puts.Load() < 1 {
			t.Fatalf("the faults were not hit: %d upload starts, %d manifest puts", posts.Load(), puts.Load())
		}
		t.Logf("%d upload starts answered 429; %s", posts.Load(), firstLine(errOut, "trying again"))
		if !strings.Contains(errOut, "trying again") {
			t.Errorf("no retry was reported:\n%s", lastLines(errOut, 20))
		}
		var res struct{ Digest string }
		must(t, json.Unmarshal([]byte(out), &res))
		r, err := name.ParseReference(reg+"/gpuimg/faults-flaky:t", name.Insecure)
		must(t, err)
		img, err := remote.Image(r, remote.WithContext(ctx))
		must(t, err)
		if d, _ := img.Digest(); d.String() != res.Digest {
			t.Errorf("the tag is at %s, the build said %s", d, res.Digest)
		}
		layers, err := img.Layers()
		must(t, err)
		for _, l := range layers { // every blob is there: the image is complete
			rc, err := l.Compressed()
			must(t, err)
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
			must(t, err)
		}
	})

	t.Run("registry down during the push: one error naming it, no tag", func(t *testing.T) {
		p, err := testenv.StartFaultProxy("http://" + reg)
		must(t, err)
		defer p.Close()
		p.SetRule(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				return false // reads work; writes fail
			}
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return true
		})
		ref := p.Host + "/gpuimg/faults-down:t"
		_, errOut, code := run(t, buildArgs("1.0", "-t", ref, "--push", "--retries", "1")...)
		t.Log(firstLine(errOut, "gpuimg: build"))
		want := "push to " + p.Host + " failed (try 2 of 2; no tag was written"
		if code != cli.ExitFailed || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, want 1 with %q:\n%s", code, want, lastLines(errOut, 10))
		}
		if tagExists(t, reg+"/gpuimg/faults-down:t") {
			t.Error("a failed push wrote its tag")
		}
	})

	t.Run("disk full while writing an OCI archive output: clean error, no partial file", func(t *testing.T) {
		full := t.TempDir()
		if out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", full).CombinedOutput(); err != nil {
			t.Skipf("mount tmpfs: %v %s", err, out)
		}
		defer func() {
			if out, err := exec.Command("umount", full).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v %s", full, err, out)
			}
		}()
		_, errOut, code := run(t, buildArgs("1.0", "--output", "type=oci,dest="+filepath.Join(full, "image.tar"))...)
		t.Log(firstLine(errOut, "no space"))
		if code == 0 || !strings.Contains(errOut, "no space left on device") {
			t.Errorf("exit %d, want a failure saying the disk is full:\n%s", code, lastLines(errOut, 5))
		}
		if left, _ := os.ReadDir(full); len(left) > 0 {
			t.Errorf("a build that filled the disk left %v", left)
		}
	})

	slow := startSlowIndex(t, env)
	slowArgs := func(more ...string) []string {
		args := buildArgs("1.0", append([]string{"--pip", "gpuimg-slow==1.0"}, more...)...)
		for i, a := range args {
			if a == "--pip-index-url" {
				args[i+1] = slow.URL + "/simple/"
			}
		}
		return args
	}

	t.Run("SIGINT during a build: solve cancelled, no tag, no temporary files, exit 130", func(t *testing.T) {
		slow.hold()
		defer slow.letGo()
		ref := reg + "/gpuimg/faults:sigint"
		p := start(t, bin, nil, slowArgs("-t", ref, "--push")...)
		slow.waitHeld(t, 1, "gpuimg build")
		must(t, p.cmd.Process.Signal(syscall.SIGINT))
		if code := p.wait(t, time.Minute); code != 130 {
			t.Errorf("exit %d, want 130:\n%s", code, lastLines(p.stderr.String(), 10))
		}
		t.Log(firstLine(p.stderr.String(), "gpuimg: interrupted"))
		if errOut := p.stderr.String(); !strings.Contains(errOut, "gpuimg: interrupted by SIGINT") {
			t.Errorf("stderr does not say it was interrupted:\n%s", lastLines(errOut, 10))
		}
		deadline := time.Now().Add(30 * time.Second)
		for slow.gone.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond) // BuildKit stops the step's pip
		}
		if slow.gone.Load() == 0 {
			t.Error("the held pip request was never dropped: BuildKit's solve went on")
		}
		if tagExists(t, ref) {
			t.Error("an interrupted build wrote its tag")
		}
		if left := p.leftovers(); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})

	t.Run("SIGTERM during publish: no tag, no temporary files, exit 143", func(t *testing.T) {
		slow.hold()
		defer slow.letGo()
		dir := t.TempDir()
		file := filepath.Join(dir, "publish.yaml")
		repo := reg + "/gpuimg/faults-pub"
		must(t, os.WriteFile(file, []byte("repository: "+repo+"\ntag: \"{torch}-cu{cuda_short}\"\nmatrix:\n  cuda: [\"12.2\"]\n  torch: [\"2.3\"]\nbuild:\n  pip: [gpuimg-slow==1.0]\nvalidate: {driver: 535.104.05}\n"), 0o644))
		p := start(t, bin, nil, "publish", "-f", file, "--torch-compile=false", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
			"--pip-index-url", slow.URL+"/simple/", "--builder", env.BuildKit.Address(), "--report-dir", filepath.Join(dir, "report"), "--progress", "plain")
		slow.waitHeld(t, 1, "gpuimg publish")
		must(t, p.cmd.Process.Signal(syscall.SIGTERM))
		if code := p.wait(t, time.Minute); code != 143 {
			t.Errorf("exit %d, want 143:\n%s", code, lastLines(p.stderr.String(), 10))
		}
		if tagExists(t, repo+":2.3.1-cu122") {
			t.Error("an interrupted publish wrote its tag")
		}
		if left := p.leftovers(); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})

	t.Run("two builds at once share gpuimg's own buildkitd, which is not stopped under them", func(t *testing.T) {
		slow.hold()
		defer slow.letGo()
		state, err := os.MkdirTemp("/tmp", "gf-")
		must(t, err)
		defer os.RemoveAll(state)
		path := "PATH=" + filepath.Dir(env.Tools.Buildkitd) + ":" + os.Getenv("PATH")
		args := func(tag string) []string {
			return append(withoutArg(slowArgs("-t", reg+"/gpuimg/faults:"+tag, "--push"), "--builder"), "--state-dir", state)
		}
		defer func() {
			if out, err := exec.Command(bin, "builder", "stop", "--state-dir", state).CombinedOutput(); err != nil {
				t.Errorf("builder stop after the builds: %v %s", err, out)
			}
		}()
		a := start(t, bin, []string{path}, args("twin-a")...)
		b := start(t, bin, []string{path}, args("twin-b")...)
		slow.waitHeld(t, 2, "two gpuimg builds")
		stop := exec.Command(bin, "builder", "stop", "--state-dir", state)
		out, err := stop.CombinedOutput()
		t.Logf("builder stop under two builds: %s", strings.TrimSpace(string(out)))
		if err == nil || !strings.Contains(string(out), "in use by another gpuimg process") {
			t.Errorf("builder stop under two running builds: %v %s", err, out)
		}
		slow.letGo()
		var digests []string
		for _, p := range []*proc{a, b} {
			if code := p.wait(t, 5*time.Minute); code != 0 {
				t.Fatalf("a concurrent build exited %d:\n%s", code, lastLines(p.stderr.String(), 20))
			}
			var res struct{ Digest string }
			must(t, json.Unmarshal(p.stdout.Bytes(), &res))
			digests = append(digests, res.Digest)
		}
		if digests[0] != digests[1] {
			t.Errorf("the same inputs gave %s and %s", digests[0], digests[1])
		}
		pids, _ := exec.Command("pgrep", "-f", "buildkitd --root "+state).Output()
		if n := len(strings.Fields(string(pids))); n != 1 {
			t.Errorf("%d buildkitds run on %s, want 1 shared", n, state)
		}
	})

	t.Run("buildkitd killed mid-build: one error naming it, no tag, the rerun uses the cache", func(t *testing.T) {
		slow.hold()
		defer slow.letGo()
		bk, err := env.StartBuildKit(ctx, "bkf")
		must(t, err)
		t.Cleanup(func() { _ = bk.Stop(context.WithoutCancel(ctx)) })
		pid, _ := bk.Running()
		ref := reg + "/gpuimg/faults:killed"
		args := withArg(slowArgs("-t", ref, "--push"), "--builder", bk.Address())
		var code int
		var errOut string
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, errOut, code = run(t, args...)
		}()
		slow.waitHeld(t, 1, "gpuimg build on the extra buildkitd")
		must(t, syscall.Kill(pid, syscall.SIGKILL))
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatal("gpuimg build did not return after its buildkitd was killed")
		}
		t.Log(firstLine(errOut, "gpuimg: buildkitd"))
		want := "buildkitd at " + bk.Address() + " stopped during the build"
		if code != cli.ExitFailed || !strings.Contains(errOut, want) || errorLines(errOut) != 1 {
			t.Errorf("exit %d, want 1 and one line with %q:\n%s", code, want, lastLines(errOut, 10))
		}
		if tagExists(t, ref) {
			t.Error("a build whose daemon died wrote its tag")
		}
		slow.letGo()
		c, err := bk.Ensure(ctx) // restarted on its state: the cache survives
		must(t, err)
		c.Close()
		_, progress, code := run(t, args...)
		if code != 0 {
			t.Fatalf("rerun exited %d:\n%s", code, lastLines(progress, 20))
		}
		// The venv and framework steps finished before the kill: in the
		// rerun each of them (in the plan's solve and in the layered
		// solve made from it) comes from the cache.
		cached, steps := 0, 0
		for line := range strings.SplitSeq(progress, "\n") {
			if strings.Contains(line, "] RUN ") && (strings.Contains(line, "gpuimg-verify.py torch") || strings.Contains(line, "-m venv")) {
				steps++
				if step := strings.Fields(line)[0]; strings.Contains(progress, step+" CACHED") {
					cached++
				}
			}
		}
		if steps < 2 || cached != steps {
			t.Errorf("%d of the %d venv and framework steps the killed daemon finished came from its cache:\n%s", cached, steps, lastLines(progress, 40))
		}
		if !tagExists(t, ref) {
			t.Error("the rerun wrote no tag")
		}
	})
}

// firstLine is the first line of s containing sub, for the test log.
func firstLine(s, sub string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}

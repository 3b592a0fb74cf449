package builder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/buildkit/client"

	"github.com/gpuimg/gpuimg/images"
)

// Connect dials a BuildKit daemon (unix://, tcp://, docker-container://,
// kube-pod:// … as BuildKit's client accepts) and checks it answers.
func Connect(ctx context.Context, addr string, opts ...client.ClientOpt) (*client.Client, error) {
	c, err := client.New(ctx, addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to buildkitd at %s: %w", addr, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.ListWorkers(pctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("buildkitd at %s does not answer: %w", addr, err)
	}
	return c, nil
}

// Alive says whether the daemon behind c still answers (within 10s).
func Alive(ctx context.Context, c *client.Client) bool {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := c.ListWorkers(pctx)
	return err == nil
}

// Local manages a buildkitd that gpuimg starts itself and reuses across
// runs. It keeps its state (root, socket, config, log, pid) in StateDir.
type Local struct {
	// StateDir holds the daemon's state. Required.
	StateDir string
	// Buildkitd is the buildkitd binary; empty means look it up on PATH.
	Buildkitd string
	// Mirrors and InsecureRegistries go into buildkitd.toml.
	Mirrors            images.Mirrors
	InsecureRegistries []string
	// Path are directories put before buildkitd's PATH, where it finds
	// the programs it runs itself: the buildkit-qemu-ARCH emulators that
	// run the steps of a foreign platform (BuildKit starts them per step;
	// nothing is registered with the kernel's binfmt_misc). A daemon
	// running with another Path is restarted, as for other settings.
	Path []string

	mu  sync.Mutex
	use *os.File // holds a shared lock on the daemon while this process uses it
}

// ErrNeedsRoot is returned when a local buildkitd cannot be started
// because gpuimg does not run as root.
var ErrNeedsRoot = errors.New("gpuimg starts a local buildkitd only as root")

// ErrInUse is returned when the local daemon would have to stop (Stop, or
// Ensure with other settings) while another gpuimg process builds on it.
var ErrInUse = errors.New("the local buildkitd is in use by another gpuimg process")

func (l *Local) socket() string {
	p := filepath.Join(l.StateDir, "buildkitd.sock")
	if len(p) < 100 {
		return p
	}
	// Unix socket paths are limited to 108 bytes.
	sum := sha256.Sum256([]byte(l.StateDir))
	return fmt.Sprintf("/run/gpuimg-%x.sock", sum[:6])
}

// otelSocket is buildkitd's trace socket, beside its API socket.
func (l *Local) otelSocket() string { return strings.TrimSuffix(l.socket(), ".sock") + "-otel.sock" }

// Address is the daemon's address.
func (l *Local) Address() string { return "unix://" + l.socket() }

func (l *Local) config() []byte {
	var b bytes.Buffer
	b.WriteString("# Written by gpuimg; rewritten when its settings change.\n")
	if len(l.Path) > 0 {
		fmt.Fprintf(&b, "# buildkitd's PATH starts with %s\n", strings.Join(l.Path, string(os.PathListSeparator)))
	}
	b.WriteString("[worker.oci]\n  enabled = true\n  snapshotter = \"overlayfs\"\n  gc = true\n")
	b.WriteString("[worker.containerd]\n  enabled = false\n")
	insecure := map[string]bool{}
	for _, r := range l.InsecureRegistries {
		insecure[r] = true
	}
	regs := slices.Sorted(maps.Keys(l.Mirrors))
	for _, r := range regs {
		host, plain := images.MirrorHost(l.Mirrors[r])
		reg := r
		if reg == "index.docker.io" {
			reg = "docker.io"
		}
		fmt.Fprintf(&b, "[registry.%q]\n  mirrors = [%q]\n", reg, host)
		if plain {
			insecure[host] = true
		}
	}
	hosts := slices.Sorted(maps.Keys(insecure))
	for _, h := range hosts {
		fmt.Fprintf(&b, "[registry.%q]\n  http = true\n  insecure = true\n", h)
	}
	return b.Bytes()
}

// Ensure returns a client for the local daemon, starting it (detached, so
// later runs reuse it) if it is not running or its settings changed.
//
// Several processes may use one daemon at once: Ensure serializes starts
// with a lock file in StateDir, and from its return until Release (or the
// process ends) it holds the daemon in use, so that no other process
// stops it or restarts it with other settings under a running build
// (those get ErrInUse). If ctx ends while the daemon starts, Ensure stops
// it again.
func (l *Local) Ensure(ctx context.Context) (*client.Client, error) {
	c, err := l.ensure(ctx)
	if err != nil {
		l.Release() // also an exclusive hold taken to restart
	}
	return c, err
}

func (l *Local) ensure(ctx context.Context) (*client.Client, error) {
	if err := os.MkdirAll(l.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create buildkitd state dir: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(l.StateDir, "start.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	cfgPath := filepath.Join(l.StateDir, "buildkitd.toml")
	want := l.config()
	have, _ := os.ReadFile(cfgPath)
	if pid := l.pid(); pid > 0 {
		if bytes.Equal(have, want) {
			if c, err := Connect(ctx, l.Address()); err == nil {
				if err := l.hold(); err != nil {
					c.Close()
					return nil, err
				}
				return c, nil
			}
		}
		if err := l.exclusive(); err != nil {
			return nil, fmt.Errorf("restart buildkitd (pid %d) with this build's settings (mirrors, insecure registries): %w; run again when that build ends, or give this build its own --state-dir", pid, err)
		}
		if err := l.stop(ctx); err != nil {
			return nil, err
		}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w (rootless BuildKit needs rootlesskit); run as root, or pass --builder ADDR (or BUILDKIT_HOST) for a running buildkitd", ErrNeedsRoot)
	}
	bin := l.Buildkitd
	if bin == "" {
		var err error
		if bin, err = findBinary("buildkitd"); err != nil {
			return nil, fmt.Errorf("buildkitd not found; build it with `make tools` (pinned in tools/go.mod) and put bin/ on PATH, or pass --builder ADDR: %w", err)
		}
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return nil, errors.New("runc not found; install it (apt-get install runc) or pass --builder ADDR for a running buildkitd")
	}
	if err := os.WriteFile(cfgPath, want, 0o600); err != nil {
		return nil, fmt.Errorf("write buildkitd config: %w", err)
	}
	sock := l.socket()
	_ = os.Remove(sock)
	logf, err := os.OpenFile(filepath.Join(l.StateDir, "buildkitd.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open buildkitd log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin,
		"--root", filepath.Join(l.StateDir, "root"),
		"--addr", "unix://"+sock,
		// Its trace socket too, or every buildkitd shares
		// /run/buildkit/otel-grpc.sock and leaves it behind.
		"--otel-socket-path", l.otelSocket(),
		"--config", cfgPath,
		"--oci-worker-net", "host",
	)
	// Its temporary mounts (buildkit-mount*, the buildkit-secrets* tmpfs)
	// go below its state too, not in /tmp: the ones a daemon leaves when
	// it is killed mid-build stay with its state, and leave with it.
	tmp := filepath.Join(l.StateDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("make buildkitd's temporary directory: %w", err)
	}
	cmd.Env = append(daemonEnv(os.Environ(), l.Path), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlive gpuimg, for reuse
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start buildkitd: %w", err)
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(l.StateDir, "buildkitd.pid"), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("write buildkitd pid: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// A daemon that never answered is of no use to a later run: stop what
	// was started.
	abandon := func() {
		_ = l.stop(context.WithoutCancel(ctx))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			if err == nil {
				err = errors.New("exit status 0")
			}
			_ = os.Remove(filepath.Join(l.StateDir, "buildkitd.pid"))
			return nil, fmt.Errorf("buildkitd exited at start (%w): %s", err, l.logTail())
		case <-ctx.Done():
			abandon()
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := os.Stat(sock); err == nil {
			if c, err := Connect(ctx, l.Address()); err == nil {
				if err := l.hold(); err != nil {
					c.Close()
					return nil, err
				}
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			abandon()
			return nil, fmt.Errorf("buildkitd did not answer within 30s: %s", l.logTail())
		}
	}
}

// lockFile takes an exclusive lock on path, waiting for it (or for ctx),
// and returns its release.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// useLock opens the lock file every user of the daemon holds shared.
func (l *Local) useLock() (*os.File, error) {
	if l.use != nil {
		return l.use, nil
	}
	f, err := os.OpenFile(filepath.Join(l.StateDir, "buildkitd.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock buildkitd: %w", err)
	}
	l.use = f
	return f, nil
}

// hold marks the daemon in use by this process (a shared lock), until
// Release. Starts are serialized, so nobody holds it exclusively now.
func (l *Local) hold() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := l.useLock()
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		return fmt.Errorf("lock buildkitd: %w", err)
	}
	return nil
}

// exclusive takes the daemon for this process alone (to stop it), or
// returns ErrInUse when another process holds it.
func (l *Local) exclusive() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := l.useLock()
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return ErrInUse
		}
		return fmt.Errorf("lock buildkitd: %w", err)
	}
	return nil
}

// Release ends this process's use of the daemon that Ensure began; the
// daemon keeps running for later runs. It is safe to call more than once.
func (l *Local) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.use != nil {
		l.use.Close()
		l.use = nil
	}
}

func (l *Local) logTail() string {
	b, _ := os.ReadFile(filepath.Join(l.StateDir, "buildkitd.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// pid returns the pid of a running daemon started by gpuimg, or 0.
func (l *Local) pid() int {
	b, err := os.ReadFile(filepath.Join(l.StateDir, "buildkitd.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return 0
	}
	// Make sure the pid is still a buildkitd (pids are reused).
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && !bytes.Contains(cmdline, []byte("buildkitd")) {
		return 0
	}
	return pid
}

// Running reports whether the local daemon runs, and its pid.
func (l *Local) Running() (int, bool) {
	pid := l.pid()
	return pid, pid > 0
}

// Stop stops the local daemon if it runs (SIGTERM, then SIGKILL after
// 10s). It ends this process's own use first (Release), and returns
// ErrInUse, leaving the daemon running, while another process builds on it.
func (l *Local) Stop(ctx context.Context) error {
	l.Release()
	if l.pid() == 0 {
		return nil
	}
	if err := os.MkdirAll(l.StateDir, 0o700); err != nil {
		return fmt.Errorf("stop buildkitd: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(l.StateDir, "start.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if err := l.exclusive(); err != nil {
		return fmt.Errorf("stop buildkitd (pid %d): %w; stop it when that build ends", l.pid(), err)
	}
	defer l.Release()
	return l.stop(ctx)
}

// stop stops the daemon; the caller holds it exclusively.
func (l *Local) stop(ctx context.Context) error {
	pid := l.pid()
	if pid == 0 {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop buildkitd (pid %d): %w", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			time.Sleep(200 * time.Millisecond)
			break
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
	}
	_ = os.Remove(filepath.Join(l.StateDir, "buildkitd.pid"))
	_ = os.Remove(l.socket())
	_ = os.Remove(l.otelSocket())
	return nil
}

// findBinary looks for name on PATH, then beside the running executable.
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH nor beside gpuimg", name)
}

// daemonEnv is buildkitd's environment: gpuimg's, with the directories
// in path put before its PATH.
func daemonEnv(environ, path []string) []string {
	if len(path) == 0 {
		return environ
	}
	dirs := slices.Clone(path)
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if v != "" {
				dirs = append(dirs, v)
			}
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+strings.Join(dirs, string(os.PathListSeparator)))
}

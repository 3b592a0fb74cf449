package testenv

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ContainerdTools builds containerd, its runc shim and ctr (cmd/containerd,
// cmd/containerd-shim-runc-v2 and cmd/ctr of github.com/containerd/containerd/v2,
// pinned in tools/go.mod) into bin/ of the checkout, unless they are there
// already, and returns the paths of containerd and ctr (the shim is beside
// them). It is apart from BuildTools because few tests need them.
func ContainerdTools(ctx context.Context) (containerd, ctr string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	bin := filepath.Join(root, "bin")
	containerd, ctr = filepath.Join(bin, "containerd"), filepath.Join(bin, "ctr")
	missing := false
	for _, p := range []string{containerd, ctr, filepath.Join(bin, "containerd-shim-runc-v2")} {
		if _, err := os.Stat(p); err != nil {
			missing = true
		}
	}
	if !missing {
		return containerd, ctr, nil
	}
	done := startStep(ctx, "compiling containerd, its runc shim and ctr", "from tools/go.mod into bin/, once (a few minutes on two cores)")
	defer done()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+"/",
		"github.com/containerd/containerd/v2/cmd/containerd",
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
		"github.com/containerd/containerd/v2/cmd/ctr")
	cmd.Dir = filepath.Join(root, "tools")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("build containerd from tools/go.mod: %w\n%s", err, out)
	}
	return containerd, ctr, nil
}

// ContainerdOptions configure a containerd started by StartContainerd.
type ContainerdOptions struct {
	// MaxConcurrentDownloads is how many layers one pull fetches at once
	// (the transfer service's max_concurrent_downloads). Default 3,
	// containerd's own default.
	MaxConcurrentDownloads int
	// MaxConcurrentUnpacks is how many layers one pull unpacks at once
	// (the transfer service's max_concurrent_unpacks). Default 1,
	// containerd's own default: each layer waits for the one below it.
	MaxConcurrentUnpacks int
	// ProxySnapshotters are external snapshotters (name → gRPC socket),
	// such as stargz.
	ProxySnapshotters map[string]string
	// PathPrefix is put first in containerd's PATH (before bin/, where it
	// finds its shim), where the shim looks for runc: a directory with a
	// runc wrapper (a tracer) in it.
	PathPrefix string
	// LogLevel is containerd's --log-level (default "warn"); "debug" logs
	// each layer's unpack ("diff applied", with its duration d), which
	// LogPath's file then holds.
	LogLevel string
}

// Containerd is a containerd started for tests and benchmarks: its own
// root, state and socket under one directory, no CRI, stopped by PID.
type Containerd struct {
	// Address is the gRPC socket (ctr's --address).
	Address string
	// Ctr is the ctr binary built with it.
	Ctr  string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// containerdConfig is containerd's configuration (version 3, containerd
// 2.x) for a daemon whose files all live under dir.
func containerdConfig(dir, sock string, o ContainerdOptions) string {
	n := o.MaxConcurrentDownloads
	if n <= 0 {
		n = 3
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version = 3\nroot = %q\nstate = %q\n", filepath.Join(dir, "root"), filepath.Join(dir, "state"))
	b.WriteString("disabled_plugins = [\"io.containerd.grpc.v1.cri\", \"io.containerd.cri.v1.runtime\", \"io.containerd.cri.v1.images\"]\n")
	fmt.Fprintf(&b, "[grpc]\n  address = %q\n", sock)
	fmt.Fprintf(&b, "[ttrpc]\n  address = %q\n", sock+".ttrpc")
	fmt.Fprintf(&b, "[debug]\n  address = %q\n", "")
	u := o.MaxConcurrentUnpacks
	if u <= 0 {
		u = 1
	}
	fmt.Fprintf(&b, "[plugins.\"io.containerd.transfer.v1.local\"]\n  max_concurrent_downloads = %d\n  max_concurrent_unpacks = %d\n", n, u)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range o.ProxySnapshotters {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "[proxy_plugins.%q]\n  type = \"snapshot\"\n  address = %q\n", name, o.ProxySnapshotters[name])
	}
	return b.String()
}

// StartContainerd builds containerd and ctr if needed and starts
// containerd with its root, state and socket under dir (keep dir short:
// the socket lives there). Stop stops it by PID and removes dir.
func StartContainerd(ctx context.Context, dir string, o ContainerdOptions) (*Containerd, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("containerd needs root")
	}
	if err := EnsurePackages(ctx, "runc"); err != nil {
		return nil, err
	}
	bin, ctr, err := ContainerdTools(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "c.sock")
	if len(sock) > 100 {
		sum := sha256.Sum256([]byte(dir))
		sock = filepath.Join(os.TempDir(), fmt.Sprintf("ctd-%x.sock", sum[:6]))
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(dir, sock, o)), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		return nil, err
	}
	level := o.LogLevel
	if level == "" {
		level = "warn"
	}
	cmd := exec.Command(bin, "--config", cfg, "--log-level", level)
	cmd.Stdout, cmd.Stderr = logf, logf
	// containerd finds its shim in PATH: the one built beside it, not a
	// Debian containerd's.
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	if o.PathPrefix != "" {
		path = o.PathPrefix + string(os.PathListSeparator) + path
	}
	cmd.Env = append(os.Environ(), "PATH="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	c := &Containerd{Address: sock, Ctr: ctr, dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(c.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			if _, err := c.Run(ctx, "version"); err == nil {
				return c, nil
			}
		}
		select {
		case <-c.done:
			b, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			return nil, fmt.Errorf("containerd exited at start: %s", tail(b, 1500))
		case <-ctx.Done():
			c.Stop()
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Stop()
			return nil, fmt.Errorf("containerd did not answer on %s within 30s", sock)
		}
	}
}

// LogPath is containerd's log file (removed by Stop).
func (c *Containerd) LogPath() string { return filepath.Join(c.dir, "containerd.log") }

// Run runs ctr against this containerd (namespace "gpuimg") and returns
// its standard output; the error carries its standard error.
func (c *Containerd) Run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Ctr, append([]string{"--address", c.Address, "--namespace", "gpuimg"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w\n%s%s", strings.Join(args, " "), err, tail(out, 1000), tail([]byte(stderr.String()), 2000))
	}
	return out, nil
}

// Stop stops containerd by PID (SIGTERM, then SIGKILL to its process
// group after 20 s), unmounts what is left under its directory and
// removes it. Containers must be gone already (ctr run --rm).
func (c *Containerd) Stop() {
	if c == nil {
		return
	}
	stopByPID(c.cmd, c.done, 20*time.Second, true)
	unmountUnder(c.dir)
	_ = os.RemoveAll(c.dir)
	_ = os.Remove(c.Address)
}

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mounts = append(mounts, f[4])
		}
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
}

// Stargzd builds tools/stargzd (stargz-snapshotter's service and a lazy
// pull, from the versions pinned in tools/go.mod) into bin/ of the
// checkout, unless it is there already, and returns its path.
func Stargzd(ctx context.Context) (string, error) {
	return pinnedTool(ctx, "stargzd", ".", "./stargzd", "tools/stargzd over stargz-snapshotter from tools/go.mod into bin/, once (a minute or two)")
}

// Stargz is a stargz-snapshotter (tools/stargzd serve) with its own root
// and socket under one directory, for a containerd's proxy_plugins.
type Stargz struct {
	// Socket is its gRPC socket.
	Socket string
	bin    string
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
}

// StartStargz builds stargzd if needed and starts a snapshotter under dir.
// It needs root and /dev/fuse (layers are FUSE mounts). Stop stops it by
// PID, unmounts its layers and removes dir.
func StartStargz(ctx context.Context, dir string) (*Stargz, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("stargz-snapshotter needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("stargz-snapshotter needs /dev/fuse: %w", err)
	}
	bin, err := Stargzd(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Stargz{Socket: filepath.Join(dir, "sg.sock"), bin: bin, dir: dir, done: make(chan struct{})}
	logf, err := os.Create(filepath.Join(dir, "stargz.log"))
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "serve", "-root", filepath.Join(dir, "root"), "-address", s.Socket)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start stargzd: %w", err)
	}
	go func() { _ = s.cmd.Wait(); logf.Close(); close(s.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if conn, err := net.Dial("unix", s.Socket); err == nil {
			conn.Close()
			return s, nil
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(filepath.Join(dir, "stargz.log"))
			return nil, fmt.Errorf("stargzd exited at start: %s", tail(b, 1500))
		case <-ctx.Done():
			s.Stop()
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("stargzd did not listen on %s within 20s", s.Socket)
		}
	}
}

// Pull pulls ref lazily into containerd c through this snapshotter (what
// ctr-remote image rpull does): only each layer's table of contents and
// its prefetched files are fetched before the container starts.
func (s *Stargz) Pull(ctx context.Context, c *Containerd, ref string) error {
	out, err := exec.CommandContext(ctx, s.bin, "rpull", "-address", c.Address, "-namespace", "gpuimg", ref).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stargzd rpull %s: %w\n%s", ref, err, tail(out, 2000))
	}
	return nil
}

// Stop stops the snapshotter by PID, unmounts what it left and removes
// its directory. Stop containerd first.
func (s *Stargz) Stop() {
	if s == nil {
		return
	}
	stopByPID(s.cmd, s.done, 10*time.Second, true)
	unmountUnder(s.dir)
	_ = os.RemoveAll(s.dir)
}

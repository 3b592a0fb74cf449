package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// RepoRoot finds the gpuimg checkout from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/gpuimg/gpuimg\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the gpuimg checkout")
		}
		dir = parent
	}
}

// GoBuild builds pkg, a main package of this module ("./cmd/gpuimg"),
// into the file out, static (CGO_ENABLED=0), as `make build` does.
func GoBuild(ctx context.Context, pkg, out string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// Tools are the helper binaries pinned in tools/go.mod.
type Tools struct {
	Buildkitd, Buildctl, Registry, Crane string
}

// BuildTools builds buildkitd, buildctl and the registry from tools/go.mod
// into bin/ of the checkout, unless they are there already.
func BuildTools(ctx context.Context) (Tools, error) {
	root, err := RepoRoot()
	if err != nil {
		return Tools{}, err
	}
	bin := filepath.Join(root, "bin")
	t := Tools{Buildkitd: filepath.Join(bin, "buildkitd"), Buildctl: filepath.Join(bin, "buildctl"), Registry: filepath.Join(bin, "registry"), Crane: filepath.Join(bin, "crane")}
	missing := false
	for _, p := range []string{t.Buildkitd, t.Buildctl, t.Registry, t.Crane} {
		if _, err := os.Stat(p); err != nil {
			missing = true
		}
	}
	if !missing {
		return t, nil
	}
	done := startStep(ctx, "compiling buildkitd, buildctl, the registry and crane",
		"from tools/go.mod into bin/, once (about 5 minutes on two cores: most of a first run)")
	defer done()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+"/",
		"github.com/moby/buildkit/cmd/buildkitd",
		"github.com/moby/buildkit/cmd/buildctl",
		"github.com/distribution/distribution/v3/cmd/registry",
		"github.com/google/go-containerregistry/cmd/crane")
	cmd.Dir = filepath.Join(root, "tools")
	if out, err := cmd.CombinedOutput(); err != nil {
		return Tools{}, fmt.Errorf("build tools from tools/go.mod: %w\n%s", err, out)
	}
	return t, nil
}

// Buildx builds docker buildx (cmd/buildx, pinned in tools/go.mod) into
// bin/ of the checkout, unless it is there already, and returns its path.
// It is apart from BuildTools because few tests need it.
func Buildx(ctx context.Context) (string, error) {
	return pinnedTool(ctx, "buildx", ".", "github.com/docker/buildx/cmd/buildx", "")
}

// pinnedTool builds package pkg of the Go module in tools/modDir (where
// it is pinned) into bin/name of the checkout, unless it is there
// already, and returns its path. note, when set, says what the first
// build does and how long it takes, as a step of the test's progress.
func pinnedTool(ctx context.Context, name, modDir, pkg, note string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if note != "" {
		done := startStep(ctx, "compiling "+name, note)
		defer done()
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = filepath.Join(root, "tools", modDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s from %s: %w\n%s", name, filepath.Join("tools", modDir, "go.mod"), err, out)
	}
	return bin, nil
}

// EnsurePackages installs Debian packages that are missing (needs root).
func EnsurePackages(ctx context.Context, pkgs ...string) error {
	missing := missingPackages(ctx, pkgs)
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("need Debian packages %s; install them as root (apt-get install %s)", strings.Join(missing, " "), strings.Join(missing, " "))
	}
	// Test packages run in parallel and may install at the same time:
	// one apt at a time among them (apt-get update does not wait for the
	// lists lock), and dpkg's lock waited for against anything else.
	unlock, err := lockFile(ctx, filepath.Join(CacheDir(), "apt.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if missing = missingPackages(ctx, pkgs); len(missing) == 0 {
		return nil // another test installed them meanwhile
	}
	done := startStep(ctx, "installing "+strings.Join(missing, ", "), "apt-get update and apt-get install, once (about a minute)")
	defer done()
	lock := []string{"-o", "DPkg::Lock::Timeout=600"}
	upd := exec.CommandContext(ctx, "apt-get", append(lock, "update", "-qq")...)
	if out, err := upd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %w\n%s", err, out)
	}
	args := append(append(lock, "install", "-y", "-qq", "--no-install-recommends"), missing...)
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %w\n%s", strings.Join(missing, " "), err, out)
	}
	return nil
}

func missingPackages(ctx context.Context, pkgs []string) []string {
	var missing []string
	for _, p := range pkgs {
		out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.Contains(string(out), "install ok installed") {
			missing = append(missing, p)
		}
	}
	return missing
}

// lockFile takes an exclusive flock on path, waiting until ctx is done.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return func() { f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

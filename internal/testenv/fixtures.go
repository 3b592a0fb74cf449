package testenv

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// DebianMirror is where debootstrap and the fixtures' apt get packages.
const DebianMirror = "http://deb.debian.org/debian"

// CacheDir is where fixtures are kept between runs (they take a minute
// to make): $GPUIMG_TESTENV_CACHE, else ~/.cache/gpuimg-testenv.
func CacheDir() string {
	if d := os.Getenv("GPUIMG_TESTENV_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "gpuimg-testenv")
	}
	return filepath.Join(home, ".cache", "gpuimg-testenv")
}

// BaseRootfs returns a tar of a minimal Debian bookworm root filesystem
// with the given extra packages (python3 and python3-venv by default),
// made with debootstrap and cached under CacheDir by package list.
func BaseRootfs(ctx context.Context, include ...string) (string, error) {
	if len(include) == 0 {
		include = []string{"python3", "python3-venv"}
	}
	include = slices.Sorted(slices.Values(include)) // a copy: the caller's slice stays as it was
	return minbaseRootfs(ctx, "bookworm", include, "making a Debian bookworm root filesystem",
		"debootstrap --variant=minbase with "+strings.Join(include, ", ")+", once (2 to 3 minutes; cached in %s)")
}

// PythonlessRootfs returns a tar of a minimal Debian bookworm root
// filesystem with no extra packages, so no Python at all, as NVIDIA's
// Ubuntu bases have none: gpuimg's build installs python3.X and its venv
// with apt there (from the Env's AptRepo in tests). Cached like
// BaseRootfs.
func PythonlessRootfs(ctx context.Context) (string, error) {
	return minbaseRootfs(ctx, "bookworm", nil, "making a Debian bookworm root filesystem without Python",
		"debootstrap --variant=minbase, once (2 to 3 minutes; cached in %s)")
}

// minbaseRootfs returns a tar of debootstrap --variant=minbase of suite
// with include, cached under CacheDir by suite and package list; step and
// detail (with %s for the cache directory) are the progress line shown
// while it is made.
func minbaseRootfs(ctx context.Context, suite string, include []string, step, detail string) (string, error) {
	sum := sha256.Sum256([]byte(suite + " minbase " + strings.Join(include, ",")))
	dir := CacheDir()
	out := filepath.Join(dir, fmt.Sprintf("rootfs-%s-%x.tar", suite, sum[:6]))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := EnsurePackages(ctx, "debootstrap"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.MkdirTemp(dir, "rootfs-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(root)
	done := startStep(ctx, step, fmt.Sprintf(detail, dir))
	defer done()
	args := []string{"--variant=minbase"}
	if len(include) > 0 {
		args = append(args, "--include="+strings.Join(include, ","))
	}
	cmd := exec.CommandContext(ctx, "debootstrap", append(args, suite, root, DebianMirror)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("debootstrap %s: %w\n%s", suite, err, tail(b, 2000))
	}
	return out, tarRootfs(ctx, root, out)
}

// tarRootfs empties root's apt lists, apt archives and logs (a lean,
// nearly deterministic image) and /proc, then archives root as out (written
// under a temporary name first).
func tarRootfs(ctx context.Context, root, out string) error {
	for _, p := range []string{"proc", "var/lib/apt/lists", "var/cache/apt/archives", "var/log"} {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			return err
		}
	}
	tmp := out + ".tmp"
	tarCmd := exec.CommandContext(ctx, "tar", "-C", root, "--numeric-owner", "--sort=name", "--mtime=2024-01-01 00:00:00", "-cf", tmp, ".")
	if b, err := tarCmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tar rootfs: %w\n%s", err, b)
	}
	return os.Rename(tmp, out)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// PushImage pushes a single-layer image made of rootfs tar to ref (on a
// loopback registry, over plain HTTP), with env and labels in its config, and returns
// its digest. The config's created time is fixed, so the same rootfs gives
// the same digest. Its apt sources stay Debian's; an Env's PushBase* point
// them at the Env's loopback repository instead.
func PushImage(ctx context.Context, rootfsTar, ref string, env []string, labels map[string]string) (string, error) {
	return pushImage(ctx, rootfsTar, ref, env, labels, nil)
}

// PushImageAptRepo is PushImage with repo's sources.list in the image:
// apt in a build on it installs from that loopback repository alone.
func PushImageAptRepo(ctx context.Context, rootfsTar, ref string, env []string, repo *AptRepo) (string, error) {
	return pushImage(ctx, rootfsTar, ref, env, nil, repo)
}

// pushImage is PushImage with repo's sources.list in the image
// (fixtureImage; none changed for a nil repo).
func pushImage(ctx context.Context, rootfsTar, ref string, env []string, labels map[string]string, repo *AptRepo) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	img, err := fixtureImage(rootfsTar, "amd64", env, labels, repo)
	if err != nil {
		return "", err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

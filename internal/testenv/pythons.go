package testenv

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// TwoPythons are the CPython versions in TwoPythonsRootfs.
var TwoPythons = []string{"3.13", "3.14"}

// TwoPythonsRootfs returns a tar of a minimal Debian sid root filesystem
// with two CPython versions (TwoPythons, with venv), made with debootstrap
// and cached under CacheDir. Debian's stable release has one Python;
// unstable carries two while it moves from one to the next, which is what
// a benchmark of switching Python versions on the same base needs. The
// cache keeps the first one made: sid changes daily.
func TwoPythonsRootfs(ctx context.Context) (string, error) {
	var include []string
	for _, v := range TwoPythons {
		include = append(include, "python"+v, "python"+v+"-venv")
	}
	sum := sha256.Sum256([]byte("sid minbase " + strings.Join(include, ",")))
	dir := CacheDir()
	out := filepath.Join(dir, fmt.Sprintf("rootfs-sid-%x.tar", sum[:6]))
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
	done := startStep(ctx, "making a Debian sid root filesystem with Python "+strings.Join(TwoPythons, " and "),
		fmt.Sprintf("debootstrap --variant=minbase, once (2 to 3 minutes; cached in %s)", dir))
	defer done()
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(include, ","), "sid", root, DebianMirror)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("debootstrap sid: %w\n%s", err, tail(b, 2000))
	}
	return out, tarRootfs(ctx, root, out)
}

package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
)

// qemuExecvePatch makes QEMU's aarch64 user-mode emulator follow execve()
// into guest programs (see the patch's header for why).
//
//go:embed qemu-execve.patch
var qemuExecvePatch []byte

// qemuOrig is the upstream source Debian 12 ships QEMU from; the patch
// applies to it as it is (Debian's own patches are not needed here).
const qemuOrig = "qemu_7.2+dfsg.orig.tar.xz"

// EmulatorPackages are what Emulator needs to build QEMU.
var EmulatorPackages = []string{"gcc", "libc6-dev", "dpkg-dev", "ninja-build", "meson", "pkg-config", "python3", "patch", "xz-utils", "binutils",
	"libglib2.0-dev", "libpcre2-dev", "zlib1g-dev"}

// ErrEmulatorDeps means Emulator could not install what building QEMU
// needs: this machine cannot run arm64 build steps.
var ErrEmulatorDeps = errors.New("cannot install the packages to build the arm64 emulator")

// Emulator returns a directory holding buildkit-qemu-aarch64: a static
// QEMU user-mode emulator for arm64 that BuildKit uses, when it is on
// buildkitd's PATH, to run linux/arm64 build steps on an amd64 host without
// any binfmt_misc registration (nothing global on the host changes).
//
// Stock QEMU cannot do this (a build step's shell could not start the
// programs it runs), so Emulator builds Debian's QEMU 7.2 source with
// qemu-execve.patch, for the aarch64-linux-user target only: about two
// minutes on two cores, once; the result is cached under CacheDir by the
// patch's hash. It needs root (apt-get for the build dependencies) and
// Debian's mirror (the source).
func Emulator(ctx context.Context) (string, error) {
	if runtime.GOARCH != "amd64" {
		return "", fmt.Errorf("the test emulator is built for amd64 hosts, this is %s", runtime.GOARCH)
	}
	sum := sha256.Sum256(append([]byte(qemuOrig+" aarch64-linux-user\n"), qemuExecvePatch...))
	dir := filepath.Join(CacheDir(), fmt.Sprintf("qemu-execve-%x", sum[:6]))
	bin := filepath.Join(dir, "buildkit-qemu-aarch64")
	if _, err := os.Stat(bin); err == nil {
		return dir, nil
	}
	if err := EnsurePackages(ctx, EmulatorPackages...); err != nil {
		return "", fmt.Errorf("%w: %w", ErrEmulatorDeps, err)
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return "", err
	}
	done := startStep(ctx, "building the arm64 emulator",
		fmt.Sprintf("Debian's QEMU 7.2 source with qemu-execve.patch, once (about 2 minutes on two cores; cached in %s)", dir))
	defer done()
	work, err := os.MkdirTemp(CacheDir(), "qemu-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	// The source, with a private apt configuration (deb-src) that leaves the
	// host's alone.
	lists := filepath.Join(work, "lists")
	if err := os.MkdirAll(filepath.Join(lists, "partial"), 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(work, "sources.list")
	if err := os.WriteFile(src, []byte("deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "+DebianMirror+" bookworm main\n"), 0o644); err != nil {
		return "", err
	}
	apt := []string{"-o", "Dir::Etc::SourceList=" + src, "-o", "Dir::Etc::SourceParts=/dev/null",
		"-o", "Dir::State::Lists=" + lists, "-o", "APT::Sandbox::User=root", "-qq"}
	run := func(dir string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %v: %w\n%s", name, args, err, tail(out, 3000))
		}
		return nil
	}
	if err := run(work, "apt-get", append(apt, "update")...); err != nil {
		return "", err
	}
	if err := run(work, "apt-get", append(apt, "source", "--download-only", "qemu")...); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(work, qemuOrig)); err != nil {
		return "", fmt.Errorf("the qemu source in Debian is no longer %s; update internal/testenv/emulator.go and the patch: %w", qemuOrig, err)
	}
	if err := run(work, "tar", "xf", qemuOrig); err != nil {
		return "", err
	}
	tree := filepath.Join(work, "qemu-7.2.0")
	patch := exec.CommandContext(ctx, "patch", "-p1", "--forward")
	patch.Dir = tree
	patch.Stdin = bytes.NewReader(qemuExecvePatch)
	if out, err := patch.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apply qemu-execve.patch: %w\n%s", err, out)
	}
	build := filepath.Join(tree, "build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		return "", err
	}
	if err := run(build, "../configure", "--static", "--target-list=aarch64-linux-user", "--without-default-features",
		"--disable-werror", "--disable-docs", "--disable-install-blobs",
		// configure would otherwise probe docker and podman (for
		// cross-compilers), and podman leaves /run/containers behind.
		"--disable-containers"); err != nil {
		return "", err
	}
	if err := run(build, "ninja", "-j", strconv.Itoa(runtime.NumCPU()), "qemu-aarch64"); err != nil {
		return "", err
	}
	if err := run(build, "strip", "qemu-aarch64"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// A regular file, not a link: BuildKit copies it into each build step.
	if err := os.Rename(filepath.Join(build, "qemu-aarch64"), bin+".tmp"); err != nil {
		return "", err
	}
	return dir, os.Rename(bin+".tmp", bin)
}

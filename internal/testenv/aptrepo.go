package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // apt's Packages index carries MD5sum beside SHA256
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// AptRepoPackages are what the local apt repository (AptRepoDir) is made
// to install on top of the Python-less bookworm minbase (PythonlessRootfs):
// what gpuimg's Python step installs with apt for Python 3.11 when the
// base lacks it (builder's pythonPackages: python3.11, python3.11-venv)
// and torch.compile's C compiler and headers (builder's compilerPackages:
// gcc, libc6-dev, python3.11-dev), and the InfiniBand fabric's user space
// (matrix fabrics.yaml, build: libibverbs1, ibverbs-providers) for
// gpuimg build --fabric infiniband.
func AptRepoPackages() []string {
	return []string{"python3.11", "python3.11-venv", "gcc", "libc6-dev", "python3.11-dev", "libibverbs1", "ibverbs-providers"}
}

// AptRepoDir returns a directory that is a flat apt repository (Packages
// and Release beside the .deb files, for `deb [trusted=yes] URL ./`)
// standing in for Debian 12's archive (bookworm main, amd64) in test
// builds: the packages AptRepoPackages names and every package they
// depend on, at the versions bookworm main serves when it is made. The
// host's apt downloads them once, with a private configuration that
// reads bookworm main only (the suite debootstrap makes the fixture bases
// from; no -updates or -security, whose newer libc6 the bases would not
// match) and an empty dpkg status, so the closure holds every
// dependency, also those a base already has: apt on an older cached base
// can then upgrade what a newer package pins (python3.11-dev needs
// python3.11 of its own version). It is cached under CacheDir.
//
// Made on 2026-12-01 it held 88 packages (79 MB), among them
// python3.11 3.11.2-6+deb12u8 (with -minimal, -venv, -dev and
// libpython3.11*), gcc 4:12.2.0-3 (gcc-12 12.2.0-14+deb12u1),
// libc6 and libc6-dev 2.36-9+deb12u14, linux-libc-dev 6.1.176-1,
// binutils 2.40-2, python3-pip-whl 23.0.1+dfsg-1 and
// python3-setuptools-whl 66.1.1-1+deb12u2.
func AptRepoDir(ctx context.Context) (string, error) {
	return AptRepoDirOf(ctx, "bookworm", AptRepoPackages())
}

// AptRepoDirOf is AptRepoDir for another suite of Debian's archive (main,
// amd64) and packages: the same closure, made the same way and cached by
// suite and packages. bench/startup's sid base gets torch.compile's
// compiler and its two Pythons' headers from one made of sid; a sid
// repository is as of the day it is made, as the sid root filesystem
// is (TwoPythonsRootfs), so one made on another day may carry newer
// versions of what the base has (apt then upgrades them in the build).
func AptRepoDirOf(ctx context.Context, suite string, pkgs []string) (string, error) {
	sum := sha256.Sum256([]byte(suite + " main amd64 closure " + strings.Join(pkgs, ",")))
	dir := filepath.Join(CacheDir(), fmt.Sprintf("apt-%s-%x", suite, sum[:6]))
	repo := filepath.Join(dir, "repo")
	done := filepath.Join(dir, ".done")
	if _, err := os.Stat(done); err == nil {
		return repo, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(CacheDir(), "apt-repo.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(done); err == nil {
		return repo, nil // made by another test meanwhile
	}
	finish := startStep(ctx, "making a local apt repository of "+strings.Join(pkgs, ", "),
		fmt.Sprintf("the host's apt downloads them and their dependencies from Debian's %s, once (about 80 MB; cached in %s)", suite, dir))
	defer finish()
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	cache, state, status := filepath.Join(dir, "cache"), filepath.Join(dir, "state"), filepath.Join(dir, "status")
	for _, d := range []string{filepath.Join(repo, "partial"), cache, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		return "", err
	}
	opts, err := privateApt(ctx, dir, "Debian "+suite+" for the local apt repository",
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "+DebianMirror+" "+suite+" main",
		"-o", "Dir::Etc::Preferences=/dev/null", "-o", "Dir::Etc::PreferencesParts=/dev/null",
		"-o", "Dir::State="+state, "-o", "Dir::State::status="+status,
		"-o", "Dir::Cache="+cache, "-o", "Dir::Cache::Archives="+repo,
		"-o", "APT::Architecture=amd64", "-o", "APT::Architectures=amd64")
	if err != nil {
		return "", err
	}
	dl := slices.Concat(opts, []string{"install", "-y", "--download-only", "--no-install-recommends"}, pkgs)
	if out, err := exec.CommandContext(ctx, "apt-get", dl...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get install --download-only %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	for _, p := range []string{filepath.Join(repo, "partial"), filepath.Join(repo, "lock")} {
		if err := os.RemoveAll(p); err != nil {
			return "", err
		}
	}
	if err := writeAptIndex(ctx, repo); err != nil {
		return "", err
	}
	for _, p := range []string{filepath.Join(dir, "lists"), cache, state} {
		_ = os.RemoveAll(p)
	}
	return repo, os.WriteFile(done, nil, 0o644)
}

// writeAptIndex writes dir's Packages (each .deb's control fields, as
// dpkg-deb -f prints them, then Filename, Size, MD5sum and SHA256, in
// file name order) and a Release listing it, as dpkg-scanpackages and
// apt-ftparchive would for a flat repository.
func writeAptIndex(ctx context.Context, dir string) error {
	debs, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil {
		return err
	}
	if len(debs) == 0 {
		return fmt.Errorf("no .deb files in %s: the download gave none", dir)
	}
	slices.Sort(debs)
	var idx bytes.Buffer
	for _, deb := range debs {
		ctl, err := exec.CommandContext(ctx, "dpkg-deb", "-f", deb).Output()
		if err != nil {
			return fmt.Errorf("dpkg-deb -f %s: %w", filepath.Base(deb), err)
		}
		b, err := os.ReadFile(deb)
		if err != nil {
			return err
		}
		idx.Write(bytes.TrimRight(ctl, "\n"))
		fmt.Fprintf(&idx, "\nFilename: ./%s\nSize: %d\nMD5sum: %x\nSHA256: %x\n\n", filepath.Base(deb), len(b), md5.Sum(b), sha256.Sum256(b)) //nolint:gosec // see the import
	}
	if err := os.WriteFile(filepath.Join(dir, "Packages"), idx.Bytes(), 0o644); err != nil {
		return err
	}
	p := idx.Bytes()
	release := fmt.Sprintf("Origin: gpuimg-testenv\nLabel: Debian (main, amd64) subset for test builds\nArchitectures: amd64\nDate: Mon, 01 Jan 2024 00:00:00 UTC\nMD5Sum:\n %x %d Packages\nSHA256:\n %x %d Packages\n",
		md5.Sum(p), len(p), sha256.Sum256(p), len(p)) //nolint:gosec // see the import
	return os.WriteFile(filepath.Join(dir, "Release"), []byte(release), 0o644)
}

// AptRepo serves a flat apt repository (AptRepoDir) over HTTP on
// 127.0.0.1 until Close.
type AptRepo struct {
	// URL is the repository's address (http://127.0.0.1:PORT/).
	URL string
	srv *http.Server
}

// ServeAptRepo serves dir as a flat apt repository until Close.
func ServeAptRepo(dir string) (*AptRepo, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &AptRepo{URL: "http://" + l.Addr().String() + "/", srv: &http.Server{Handler: http.FileServer(http.Dir(dir))}} //nolint:gosec // loopback test server
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

// SourcesList is /etc/apt/sources.list naming the repository alone, for
// a fixture base: apt in a test build then installs from loopback only.
func (r *AptRepo) SourcesList() string {
	return "# gpuimg testenv: Debian 12 packages served on loopback (testenv.AptRepoDir)\ndeb [trusted=yes] " + r.URL + " ./\n"
}

// Close stops the server; nil-safe.
func (r *AptRepo) Close() error {
	if r == nil {
		return nil
	}
	if err := r.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// withSourcesList copies the rootfs tar in to w with its
// /etc/apt/sources.list replaced by sources and the files of
// /etc/apt/sources.list.d left out (the directory stays), so apt in an
// image of it reads sources alone. A tar without sources.list gets one
// at its end.
func withSourcesList(w io.Writer, in io.Reader, sources string) error {
	tr, tw := tar.NewReader(in), tar.NewWriter(w)
	wrote := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch {
		case name == "etc/apt/sources.list":
			h.Size, h.Typeflag, h.Linkname = int64(len(sources)), tar.TypeReg, ""
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := io.WriteString(tw, sources); err != nil {
				return err
			}
			wrote = true
			continue
		case strings.HasPrefix(name, "etc/apt/sources.list.d/") && strings.Trim(name, "/") != "etc/apt/sources.list.d":
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil { //nolint:gosec // our own fixture tar
			return err
		}
	}
	if !wrote {
		if err := tw.WriteHeader(&tar.Header{Name: "./etc/apt/sources.list", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(sources)), ModTime: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, sources); err != nil {
			return err
		}
	}
	return tw.Close()
}

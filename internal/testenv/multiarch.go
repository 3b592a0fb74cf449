package testenv

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ForeignRootfs returns a tar of a Debian bookworm root filesystem for a
// foreign architecture (arm64) with the given extra packages (python3 and
// python3-venv by default), cached under CacheDir like BaseRootfs.
//
// Nothing of the foreign architecture runs to make it: debootstrap
// --foreign resolves and downloads the packages, and every one is
// unpacked with dpkg-deb, as debootstrap's second stage would before
// running maintainer scripts. Those scripts never run, so dpkg's database
// is empty; /etc/passwd and /etc/group are base-passwd's masters. That is
// enough for what gpuimg's build steps use of a base image (its python3,
// venv and ensurepip), and it takes seconds where a second stage under
// emulation takes minutes.
func ForeignRootfs(ctx context.Context, arch string, include ...string) (string, error) {
	if len(include) == 0 {
		include = []string{"python3", "python3-venv"}
	}
	include = slices.Sorted(slices.Values(include)) // a copy: the caller's slice stays as it was
	sum := sha256.Sum256([]byte("bookworm minbase foreign unpacked " + arch + " " + strings.Join(include, ",")))
	dir := CacheDir()
	out := filepath.Join(dir, fmt.Sprintf("rootfs-bookworm-%s-%x.tar", arch, sum[:6]))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := EnsurePackages(ctx, "debootstrap"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.MkdirTemp(dir, "rootfs-"+arch+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(root)
	done := startStep(ctx, "making a Debian bookworm "+arch+" root filesystem",
		fmt.Sprintf("debootstrap --foreign downloads its packages, dpkg-deb unpacks them, once (about a minute; cached in %s)", dir))
	defer done()
	cmd := exec.CommandContext(ctx, "debootstrap", "--foreign", "--arch="+arch, "--variant=minbase",
		"--include="+strings.Join(include, ","), "bookworm", root, DebianMirror)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("debootstrap --foreign --arch=%s: %w\n%s", arch, err, tail(b, 2000))
	}
	debs, _ := filepath.Glob(filepath.Join(root, "var/cache/apt/archives/*.deb"))
	if len(debs) == 0 {
		return "", fmt.Errorf("debootstrap --foreign left no packages in %s", root)
	}
	for _, deb := range debs {
		if b, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
			return "", fmt.Errorf("unpack %s: %w\n%s", filepath.Base(deb), err, b)
		}
	}
	for _, f := range []string{"passwd", "group"} {
		b, err := os.ReadFile(filepath.Join(root, "usr/share/base-passwd", f+".master"))
		if err != nil {
			return "", fmt.Errorf("base-passwd's %s.master: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc", f), b, 0o644); err != nil {
			return "", err
		}
	}
	// No debootstrap state, no package files, and /proc a directory, not
	// debootstrap's link to the host's /proc (runc mounts proc only on a
	// directory).
	if err := os.RemoveAll(filepath.Join(root, "debootstrap")); err != nil {
		return "", err
	}
	return out, tarRootfs(ctx, root, out)
}

// fixtureImage is a single-layer image of rootfsTar for linux/arch, with
// NVIDIA's PATH, env and labels in its config and a fixed creation time,
// so the same rootfs gives the same digest. Its /etc/apt/sources.list is
// repo's alone (AptRepo.SourcesList), so apt in a test build never
// reaches past loopback; a nil repo leaves the rootfs as it is.
func fixtureImage(rootfsTar, arch string, env []string, labels map[string]string, repo *AptRepo) (v1.Image, error) {
	opener := func() (io.ReadCloser, error) { return os.Open(rootfsTar) }
	if repo != nil {
		opener = func() (io.ReadCloser, error) {
			f, err := os.Open(rootfsTar)
			if err != nil {
				return nil, err
			}
			pr, pw := io.Pipe()
			go func() {
				err := withSourcesList(pw, f, repo.SourcesList())
				f.Close()
				pw.CloseWithError(err)
			}()
			return pr, nil
		}
	}
	layer, err := tarball.LayerFromOpener(opener)
	if err != nil {
		return nil, fmt.Errorf("layer from %s: %w", rootfsTar, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = arch, "linux"
	cfg.Created = v1.Time{Time: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg.Config.Env = append([]string{"PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	cfg.Config.Cmd = []string{"bash"}
	cfg.Config.Labels = labels
	return mutate.ConfigFile(img, cfg)
}

// PushIndex pushes a multi-platform image to ref (on a loopback registry):
// one fixture image per architecture (arch → rootfs tar), under a manifest
// list, as NVIDIA publishes nvidia/cuda, with repo's sources.list
// (fixtureImage). It returns the list's digest.
func PushIndex(ctx context.Context, ref string, rootfsByArch map[string]string, env []string, repo *AptRepo) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	archs := slices.Sorted(maps.Keys(rootfsByArch))
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	for _, a := range archs {
		img, err := fixtureImage(rootfsByArch[a], a, env, nil, repo)
		if err != nil {
			return "", err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// PushBaseIndex pushes tag (nvidia/cuda:12.2.2-base-ubuntu22.04) as a
// multi-platform base: the environment's amd64 rootfs, plus the given
// foreign ones (arch → rootfs tar, from ForeignRootfs), with NVIDIA's
// environment as PushBase sets it. It returns the index digest.
func (e *Env) PushBaseIndex(ctx context.Context, tag string, foreign map[string]string) (string, error) {
	repo, version, _ := strings.Cut(tag, ":")
	all := map[string]string{"amd64": e.rootfs}
	maps.Copy(all, foreign)
	return PushIndex(ctx, e.Registry.Host+"/"+repo+":"+version, all, baseEnv(version), e.AptRepo)
}

// baseEnv is NVIDIA's environment for a tag's version (12.2.2-base-…).
func baseEnv(version string) []string {
	cuda, _, _ := strings.Cut(version, "-")
	mm := strings.Join(strings.SplitN(cuda, ".", 3)[:2], ".")
	return []string{"CUDA_VERSION=" + cuda, "NVIDIA_REQUIRE_CUDA=cuda>=" + mm, "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"}
}

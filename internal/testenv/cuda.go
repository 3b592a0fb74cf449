package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// DebianCUDAPackages are Debian 12's packages of NVIDIA's CUDA 11.8
// libraries (non-free), used as real test data: libcudart carries the
// runtime version in its file name, libcurand and libcublas carry device
// code for sm_35 … sm_90.
var DebianCUDAPackages = []string{"libcudart11.0", "libcurand10", "libcublas11"}

// DebianCUDA downloads Debian's CUDA 11.8 library packages (and
// nvidia-cuda-toolkit for its cuobjdump) with a private apt configuration
// that enables contrib and non-free without touching the host's, unpacks
// them under CacheDir, and returns the unpacked root. It needs network to
// Debian's mirror; the result is cached.
func DebianCUDA(ctx context.Context) (root string, err error) {
	return debianNonFree(ctx, "debian-cuda-11.8", "bookworm", append(append([]string(nil), DebianCUDAPackages...), "nvidia-cuda-toolkit"))
}

// DebianCUBLASLt downloads Debian 12's libcublaslt11 (NVIDIA's cuBLASLt
// of CUDA 11.8, non-free, cubins for sm_35 … sm_90) the same way as
// DebianCUDA, cached on its own, and returns the path of its
// libcublasLt.so.11.11.3.6.
func DebianCUBLASLt(ctx context.Context) (lib string, err error) {
	root, err := debianNonFree(ctx, "debian-cublaslt-11.8", "bookworm", []string{"libcublaslt11"})
	if err != nil {
		return "", err
	}
	libs, _ := filepath.Glob(filepath.Join(root, "usr/lib/x86_64-linux-gnu/libcublasLt.so.*.*"))
	if len(libs) != 1 {
		return "", fmt.Errorf("libcublaslt11 unpacked %d libcublasLt.so.X.Y files under %s, want 1", len(libs), root)
	}
	return libs[0], nil
}

// DebianTorchCUDALib is the library of DebianTorchCUDA's root that holds
// PyTorch's device code (1.18 GB).
const DebianTorchCUDALib = "usr/lib/x86_64-linux-gnu/libtorch_cuda.so.2.6.0"

// DebianTorchCUDA downloads Debian 13's real CUDA build of PyTorch
// (libtorch-cuda-2.6 from contrib, built with CUDA 12.4: cubins for
// sm_50 … sm_90 and the arch-specific sm_90a) and Debian 13's
// nvidia-cuda-toolkit 12.4 for its cuobjdump, the same way as DebianCUDA,
// and returns the unpacked root. The two packages are 480 MB and 87 MB to
// download and 1.6 GB unpacked; the result is cached.
func DebianTorchCUDA(ctx context.Context) (root string, err error) {
	return debianNonFree(ctx, "debian-torch-cuda-2.6", "trixie", []string{"libtorch-cuda-2.6", "nvidia-cuda-toolkit"})
}

// DebianNVML downloads Debian's libnvidia-ml1 (NVIDIA's own NVML library
// of driver 535, non-free) the same way and returns the path of its
// libnvidia-ml.so.1. Without the NVIDIA kernel module, as here, nvmlInit
// fails with NVML_ERROR_DRIVER_NOT_LOADED: the state of a container that
// has the driver's user-space libraries but no GPU.
func DebianNVML(ctx context.Context) (lib string, err error) {
	root, err := debianNonFree(ctx, "debian-nvml", "bookworm", []string{"libnvidia-ml1"})
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "usr", "lib", "x86_64-linux-gnu", "nvidia", "current", "libnvidia-ml.so.1"), nil
}

// debianNonFree downloads pkgs (not their dependencies) from the Debian
// release suite's main, contrib and non-free with a private apt
// configuration and unpacks them under CacheDir()/name/root.
func debianNonFree(ctx context.Context, name, suite string, pkgs []string) (root string, err error) {
	dir := filepath.Join(CacheDir(), name)
	root = filepath.Join(dir, "root")
	done := filepath.Join(dir, ".done")
	if _, err := os.Stat(done); err == nil {
		return root, nil
	}
	finish := startStep(ctx, "downloading "+strings.Join(pkgs, ", "),
		fmt.Sprintf("from Debian's non-free archive, once (a minute or more, depending on the network; cached in %s)", dir))
	defer finish()
	archives := filepath.Join(dir, "archives")
	for _, d := range []string{filepath.Join(archives, "partial"), root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	opts, err := privateApt(ctx, dir, "Debian non-free",
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "+DebianMirror+" "+suite+" main contrib non-free",
		"-o", "Dir::Cache::Archives="+archives)
	if err != nil {
		return "", err
	}
	dl := exec.CommandContext(ctx, "apt-get", append(opts, append([]string{"download"}, pkgs...)...)...)
	dl.Dir = archives
	if out, err := dl.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(archives, "*.deb"))
	if len(debs) < len(pkgs) {
		return "", fmt.Errorf("downloaded %d of %d packages", len(debs), len(pkgs))
	}
	for _, deb := range debs {
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
			return "", fmt.Errorf("unpack %s: %w\n%s", deb, err, out)
		}
		_ = os.Remove(deb)
	}
	return root, os.WriteFile(done, nil, 0o644)
}

// privateApt writes an apt configuration of its own under dir (the one
// sources line, lists in dir/lists), leaving the host's alone, runs
// apt-get update with it and returns the apt-get options that use it,
// extra among them. what names the sources in an error.
func privateApt(ctx context.Context, dir, what, sources string, extra ...string) ([]string, error) {
	lists := filepath.Join(dir, "lists")
	if err := os.MkdirAll(filepath.Join(lists, "partial"), 0o755); err != nil {
		return nil, err
	}
	src := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(src, []byte(sources+"\n"), 0o644); err != nil {
		return nil, err
	}
	opts := slices.Concat([]string{"-o", "Dir::Etc::SourceList=" + src, "-o", "Dir::Etc::SourceParts=/dev/null", "-o", "Dir::State::Lists=" + lists},
		extra, []string{"-o", "APT::Sandbox::User=root", "-qq"})
	if out, err := exec.CommandContext(ctx, "apt-get", append(opts, "update")...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("apt-get update (%s): %w\n%s", what, err, out)
	}
	return opts, nil
}

// Cuobjdump returns the cuobjdump unpacked by DebianCUDA or DebianTorchCUDA.
func Cuobjdump(root string) string { return filepath.Join(root, "usr", "bin", "cuobjdump") }

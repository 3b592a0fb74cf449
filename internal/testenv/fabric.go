package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// DebianFabricPackages are Debian 13's packages of the multi-node user
// space, used as real test data for the fabric checks (validate
// --fabric): libfabric 2.1.0 with its built-in providers (efa among
// them, so it links rdma-core's libefa), rdma-core 56.1's libibverbs,
// librdmacm and ibverbs-providers (libefa, libmlx5 and the provider
// modules under libibverbs/), hwloc (which aws-ofi-nccl links), NVIDIA's
// NCCL 2.22.3 (libnccl2, contrib), and the C and C++ runtime the
// libraries need, so an image made of them alone resolves every
// DT_NEEDED.
var DebianFabricPackages = []string{
	"libfabric1", "libibverbs1", "ibverbs-providers", "librdmacm1t64", "libpsm2-2", "libnuma1",
	"libnl-3-200", "libnl-route-3-200", "libhwloc15", "libudev1", "libcap2",
	"libnccl2", "libc6", "libgcc-s1", "libstdc++6",
}

// DebianFabricNCCL is the NCCL release of DebianFabric's libnccl2.
const DebianFabricNCCL = "2.22.3"

// DebianFabric downloads DebianFabricPackages (not their dependencies)
// from Debian 13 (trixie: main, contrib, non-free) with a private apt
// configuration, as DebianCUDA does, and returns the unpacked root. The
// packages are about 120 MB to download (libnccl2 is 115 MB); the result
// is cached under CacheDir.
func DebianFabric(ctx context.Context) (root string, err error) {
	return debianNonFree(ctx, "debian-fabric-trixie", "trixie", DebianFabricPackages)
}

// AWSOFINCCLTwin builds a structural twin of aws-ofi-nccl 1.21.1's
// plugin, libnccl-net-ofi.so: not the plugin (aws-ofi-nccl is not in
// Debian, and its binary comes only with AWS's EFA installer), but a
// shared object with the plugin's dynamic section as the project's
// build makes it (src/Makefile.am at v1.21.1: a libtool -module
// -avoid-version library, so its soname is the file name; configure.ac
// links libfabric with -lfabric, hwloc with -lhwloc, cudart statically by
// default (m4/check_pkg_cuda.m4), and it is C++: libstdc++ and libgcc_s).
// needed replaces the DT_NEEDED list when not nil (a twin that needs
// something the image lacks). It returns the bytes; it needs gcc (CC).
func AWSOFINCCLTwin(ctx context.Context, dir string, needed []string) ([]byte, error) {
	if needed == nil {
		needed = AWSOFINCCLNeeded
	}
	work := filepath.Join(dir, "ofi-twin")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	return SharedObject(ctx, work, ELFSpec{Soname: "libnccl-net-ofi.so", Needed: needed})
}

// AWSOFINCCLNeeded is the twin's DT_NEEDED list (see AWSOFINCCLTwin).
var AWSOFINCCLNeeded = []string{"libfabric.so.1", "libhwloc.so.15", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"}

// DebianFabricLayer is DebianFabric's root as a layer tar (about 250 MB,
// most of it libnccl.so.2.22.3), made once and cached beside the root;
// it returns the tar's path. Tests stack their own small layers on it.
func DebianFabricLayer(ctx context.Context) (string, error) {
	root, err := DebianFabric(ctx)
	if err != nil {
		return "", err
	}
	out := filepath.Join(filepath.Dir(root), "layer.tar")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp := out + ".tmp"
	cmd := exec.CommandContext(ctx, "tar", "-C", root, "--numeric-owner", "--sort=name", "--mtime=2024-01-01 00:00:00", "-cf", tmp, ".")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("tar %s: %w\n%s", root, err, b)
	}
	return out, os.Rename(tmp, out)
}

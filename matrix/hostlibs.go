package matrix

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
)

// The libraries an image may need without carrying them: the one list
// both dependency-closure checks use, validate's libs/closure (static,
// from the layers) and the build's own check (builder's proof.py, which
// reads HostLibsJSON), so the two never disagree.

// hostDriverLibs are the NVIDIA driver's user-space libraries that the
// container toolkit mounts from the host (and an image must not carry:
// validate's driver-libs check), by soname or link name.
var hostDriverLibs = []string{"libcuda.so.1", "libcuda.so", "libcudadebugger.so.1", "libnvcuvid.so.1", "libnvoptix.so.1"}

// hostDriverPrefix: every libnvidia-*.so* (libnvidia-ml.so.1,
// libnvidia-ptxjitcompiler.so.1, libnvidia-nvvm.so.4, …) is the driver's.
const hostDriverPrefix = "libnvidia-"

// IsHostDriverLib says whether a needed library is one the NVIDIA
// container toolkit mounts from the host's driver.
func IsHostDriverLib(name string) bool {
	if slices.Contains(hostDriverLibs, name) {
		return true
	}
	return strings.HasPrefix(name, hostDriverPrefix) && strings.Contains(name, ".so")
}

// IsHostDriverFile says whether a file, by its base name, is one of the
// driver's libraries (libcuda.so.535.104.05, libnvidia-ml.so.1,
// libnvidia-pkcs11.so.535.104.05): its own needs are the host driver's,
// not the image's. CUDA's forward-compatibility directory
// (/usr/local/cuda-X.Y/compat, which NVIDIA's base images install) holds
// such copies, among them libnvidia-pkcs11.so, which needs OpenSSL 1.1's
// libcrypto.so.1.1 that Ubuntu 22.04 and later lack; it is loaded only in
// confidential-computing mode, beside its OpenSSL 3 twin
// libnvidia-pkcs11-openssl3.so (nixpkgs drops the 1.1 one for that
// reason: NixOS/nixpkgs pkgs/development/cuda-modules/packages/
// cuda_compat.nix at 783b159d, "keep the OpenSSL 3 PKCS#11 module and
// discard the unused alternative linked against OpenSSL 1.1", read
// 2026-12-01).
func IsHostDriverFile(base string) bool {
	stem, _, ok := strings.Cut(base, ".so")
	if !ok {
		return false
	}
	return IsHostDriverLib(base) || slices.ContainsFunc(hostDriverLibs, func(l string) bool { return strings.HasPrefix(l, stem+".so") })
}

// OptionalPlugin is a library nothing links against: its user dlopens it
// only where the host provides what it needs, so an image without those
// libraries is normal, and they are noted, not failed.
type OptionalPlugin struct {
	// Prefix is the plugin's file name prefix.
	Prefix string `json:"prefix"`
	// HostLibs are the needed libraries it may lack.
	HostLibs []string `json:"host_libs"`
	// What says what it is, for messages.
	What string `json:"what"`
}

// optionalPlugins: cuFile dlopens libcufile_rdma.so for GPUDirect
// Storage over RDMA (rapidsai/kvikio#153: "cuFile will dlopen
// libcufile_rdma.so by itself"); it needs the host's RDMA stack, whose
// sonames are as two public readelf-based audits of NVIDIA's cufile
// wheels list them (read 2026-12-01).
var optionalPlugins = []OptionalPlugin{
	{Prefix: "libcufile_rdma.so", HostLibs: []string{"libibverbs.so.1", "libmlx5.so.1", "librdmacm.so.1"}, What: "cuFile's RDMA plugin, loaded only with the host's RDMA stack"},
}

// OptionalPluginOf says which optional plugin the file at p is, when
// every one of missing is a library that plugin may lack.
func OptionalPluginOf(p string, missing []string) (OptionalPlugin, bool) {
	for _, o := range optionalPlugins {
		if strings.HasPrefix(path.Base(p), o.Prefix) && !slices.ContainsFunc(missing, func(n string) bool { return !slices.Contains(o.HostLibs, n) }) {
			return o, true
		}
	}
	return OptionalPlugin{}, false
}

// HostLibsJSON is the list as data for a check outside Go:
// {"driver_libs": [...], "driver_prefix": "libnvidia-", "optional": [...]},
// meaning what IsHostDriverLib, IsHostDriverFile and OptionalPluginOf
// mean.
func HostLibsJSON() []byte {
	b, err := json.MarshalIndent(struct {
		DriverLibs   []string         `json:"driver_libs"`
		DriverPrefix string           `json:"driver_prefix"`
		Optional     []OptionalPlugin `json:"optional"`
	}{hostDriverLibs, hostDriverPrefix, optionalPlugins}, "", " ")
	if err != nil {
		panic(err) // static data
	}
	return append(b, '\n')
}

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
// meaning what IsHostDriverLib and OptionalPluginOf mean.
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

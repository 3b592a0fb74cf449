package matrix

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestHostLibs: the driver's libraries by name, and the JSON form other
// checks read (the build's proof.py) means the same as IsHostDriverLib
// and OptionalPluginOf.
func TestHostLibs(t *testing.T) {
	var data struct {
		DriverLibs   []string         `json:"driver_libs"`
		DriverPrefix string           `json:"driver_prefix"`
		Optional     []OptionalPlugin `json:"optional"`
	}
	if err := json.Unmarshal(HostLibsJSON(), &data); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"libcuda.so.1": true, "libcuda.so": true, "libnvidia-ml.so.1": true, "libnvidia-ptxjitcompiler.so.1": true,
		"libcudadebugger.so.1": true, "libnvcuvid.so.1": true, "libnvoptix.so.1": true,
		"libcudart.so.12": false, "libcublas.so.12": false, "libnvidia-ml": false, "libnvrtc.so.12": false, "libcusparseLt.so.0": false,
	} {
		if got := IsHostDriverLib(name); got != want {
			t.Errorf("IsHostDriverLib(%q) = %v, want %v", name, got, want)
		}
		fromJSON := slices.Contains(data.DriverLibs, name) || strings.HasPrefix(name, data.DriverPrefix) && strings.Contains(name, ".so")
		if fromJSON != want {
			t.Errorf("HostLibsJSON says %q is the driver's: %v, want %v", name, fromJSON, want)
		}
	}
	for base, want := range map[string]bool{
		"libcuda.so.535.104.05": true, "libcuda.so.1": true, "libnvidia-pkcs11.so.535.104.05": true, "libnvidia-pkcs11-openssl3.so.590.48.01": true,
		"libcudadebugger.so.1": true, "libcudart.so.12": false, "libcudnn.so.9": false, "libcuda": false, "libcufile.so.0": false,
	} {
		if got := IsHostDriverFile(base); got != want {
			t.Errorf("IsHostDriverFile(%q) = %v, want %v", base, got, want)
		}
	}
	if p, ok := OptionalPluginOf("usr/local/cuda-12.4/targets/x86_64-linux/lib/libcufile_rdma.so.1", []string{"libmlx5.so.1"}); !ok || !strings.Contains(p.What, "RDMA") {
		t.Errorf("libcufile_rdma.so.1 lacking libmlx5.so.1: %v %v", p, ok)
	}
	if _, ok := OptionalPluginOf("lib/libcufile_rdma.so.1", []string{"libmlx5.so.1", "libcudart.so.12"}); ok {
		t.Error("a plugin lacking a library besides the host's counted as optional")
	}
	if len(data.Optional) != 1 || data.Optional[0].Prefix != "libcufile_rdma.so" {
		t.Errorf("optional plugins in JSON: %+v", data.Optional)
	}
}

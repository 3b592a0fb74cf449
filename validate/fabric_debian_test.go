package validate

import (
	"errors"
	"os"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestFabricDebian runs the EFA checks on images of Debian 13's real
// multi-node user space (testenv.DebianFabric: libfabric 2.1.0 with its
// built-in efa provider, rdma-core 56.1, hwloc, NVIDIA's NCCL 2.22.3)
// with aws-ofi-nccl's plugin as an ELF twin (testenv.AWSOFINCCLTwin: the
// plugin's soname and DT_NEEDED, not its code; aws-ofi-nccl is not in
// Debian), each case a small layer over them. The NCCL older than
// aws-ofi-nccl's range and the wheel's NCCL are twins too (Debian has no
// NCCL before 2.22.3): libnccl.so.2 by soname, the version in the file
// name or the wheel's METADATA, which is what the checks read.
func TestFabricDebian(t *testing.T) {
	testenv.Require(t, "downloads Debian 13's libfabric, rdma-core and NCCL (120 MB, cached)", testenv.Slow)
	ctx := t.Context()
	base, err := testenv.DebianFabricLayer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	debian, err := tarball.LayerFromFile(base)
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := testenv.AWSOFINCCLTwin(ctx, t.TempDir(), nil)
	if errors.Is(err, testenv.ErrNoCC) {
		t.Skipf("the plugin twin needs gcc: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	nccl, err := testenv.SharedObject(ctx, t.TempDir(), testenv.ELFSpec{Soname: "libnccl.so.2", Needed: []string{"libc.so.6"}})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := testenv.DebianFabric(ctx)
	if _, err := os.Stat(root + "/" + triplet64 + "libnccl.so." + testenv.DebianFabricNCCL); err != nil {
		t.Fatalf("Debian's libnccl2 is not %s: %v", testenv.DebianFabricNCCL, err)
	}
	pluginLayer := file{ofiDir + "libnccl-net-ofi.so", string(plugin)}
	img := func(env []string, files ...file) v1.Image {
		return withEnv(t, image(t, debian, layer(t, append([]file{pluginLayer}, files...)...)), env...)
	}
	for _, tt := range []struct {
		name string
		img  v1.Image
		want map[string]string
	}{
		{"Debian's stack with the plugin", img(efaEnv), map[string]string{
			"plugin": "pass", "closure": "pass /opt/amazon/ofi-nccl/lib64/libnccl-net-ofi.so, /usr/lib/x86_64-linux-gnu/libefa.so.1.3.56.1, /usr/lib/x86_64-linux-gnu/libfabric.so.1.27.0",
			"provider": "pass has the efa provider built in (it links libefa.so.1)", "nccl": "pass NCCL 2.22.3", "env": "pass", "libs": "warn libgdrapi.so",
			"verbs": "pass libibverbs loads its efa provider (/etc/libibverbs.d/efa.driver; /usr/lib/x86_64-linux-gnu/libibverbs/libefa-rdmav34.so (/usr/lib/x86_64-linux-gnu/libefa.so.1.3.56.1))"}},
		{"the plugin's DT_NEEDED libfabric is missing", img(efaEnv, file{triplet64 + ".wh.libfabric.so.1", ""}, file{triplet64 + ".wh.libfabric.so.1.27.0", ""}), map[string]string{
			"closure": "fail /opt/amazon/ofi-nccl/lib64/libnccl-net-ofi.so needs libfabric.so.1", "provider": "fail no readable libfabric.so.1", "libs": "fail libfabric.so.1, libfabric"}},
		{"NCCL older than the plugin's range", img(efaEnv, file{triplet64 + ".wh.libnccl.so.2", ""}, file{triplet64 + ".wh.libnccl.so.2.22.3", ""}, file{triplet64 + "libnccl.so.2.16.5", string(nccl)}, file{triplet64 + "libnccl.so.2", "->libnccl.so.2.16.5"}), map[string]string{
			"nccl": "fail NCCL 2.16.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.16.5) is older than every aws-ofi-nccl release supports (NCCL >= 2.17.1"}},
		{"a wheel's NCCL shadows the system one", img(efaEnv, file{sp + "nvidia_nccl_cu12-2.21.5.dist-info/METADATA", "Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: 2.21.5\n\n"}, file{sp + "nvidia/nccl/lib/libnccl.so.2", string(nccl)}), map[string]string{
			"nccl/shadow": "warn the framework loads the wheel's NCCL (nvidia-nccl-cu12 2.21.5), not the system NCCL 2.22.3 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.22.3)"}},
		{"NCCL_NET=Socket in the image config", img(append([]string{"NCCL_NET=Socket"}, efaEnv...)), map[string]string{
			"env": "fail NCCL_NET=Socket (image config ENV) turns it off: NCCL_NET names the one network NCCL may use"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := fabricChecks(t, tt.img, "efa")
			for name, want := range tt.want {
				st, msg, _ := strings.Cut(want, " ")
				c := got[name]
				if string(c.Status) != st || !strings.Contains(c.Message, msg) {
					t.Errorf("fabric:efa:%s = %s %q, want %s containing %q", name, c.Status, c.Message, st, msg)
				}
			}
			if tt.name == "Debian's stack with the plugin" {
				for n, c := range got {
					if c.Status == matrix.Fail {
						t.Errorf("fabric:efa:%s fails on the whole stack: %s", n, c.Message)
					}
				}
			}
		})
	}
}

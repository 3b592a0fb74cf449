package validate

import (
	"fmt"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// fabricFixtures are small shared objects with the dynamic sections of
// the fabric pieces (testenv.SharedObject): aws-ofi-nccl's plugin as its
// build makes it (testenv.AWSOFINCCLNeeded), a libfabric with the efa
// provider built in (it links rdma-core's libefa, as Debian's and AWS's
// do) and one without, and rdma-core's and NCCL's libraries by soname.
var fabricFixtures elfFixtures

func fabricLibs(t *testing.T) map[string]string {
	t.Helper()
	fabricFixtures.once.Do(func() {
		fabricFixtures.libs = map[string]string{}
		for name, spec := range map[string]testenv.ELFSpec{
			"plugin":        {Soname: "libnccl-net-ofi.so", Needed: testenv.AWSOFINCCLNeeded},
			"libfabric-efa": {Soname: "libfabric.so.1", Needed: []string{"librdmacm.so.1", "libefa.so.1", "libibverbs.so.1", "libc.so.6"}},
			"libfabric-tcp": {Soname: "libfabric.so.1", Needed: []string{"libc.so.6"}},
			"efa":           {Soname: "libefa.so.1", Needed: []string{"libibverbs.so.1", "libc.so.6"}},
			"ibverbs":       {Soname: "libibverbs.so.1", Needed: []string{"libc.so.6"}},
			"rdmacm":        {Soname: "librdmacm.so.1", Needed: []string{"libibverbs.so.1", "libc.so.6"}},
			"mlx5":          {Soname: "libmlx5.so.1", Needed: []string{"libibverbs.so.1", "libc.so.6"}},
			"nccl":          {Soname: "libnccl.so.2", Needed: []string{"libc.so.6"}},
			"plain":         {Soname: "libplain.so"},
		} {
			b, err := testenv.SharedObject(t.Context(), t.TempDir(), spec)
			if err != nil {
				fabricFixtures.err = err
				return
			}
			fabricFixtures.libs[name] = string(b)
		}
	})
	return fabricFixtures.get(t)
}

const (
	triplet64 = "usr/lib/x86_64-linux-gnu/"
	ofiDir    = "opt/amazon/ofi-nccl/lib64/"
)

// efaBase is an image as AWS's installer leaves it, less what a case
// changes: the plugin in /opt/amazon/ofi-nccl/lib64 (on LD_LIBRARY_PATH,
// selected with NCCL_NET_PLUGIN=ofi), libfabric with efa, rdma-core and a
// system NCCL 2.22.3.
func efaBase(so map[string]string, drop ...string) []file {
	fs := []file{
		{ofiDir + "libnccl-net-ofi.so", so["plugin"]},
		{triplet64 + "libfabric.so.1.27.0", so["libfabric-efa"]},
		{triplet64 + "libfabric.so.1", "->libfabric.so.1.27.0"},
		{triplet64 + "libefa.so.1", so["efa"]},
		{triplet64 + "libibverbs.so.1", so["ibverbs"]},
		{triplet64 + "librdmacm.so.1", so["rdmacm"]},
		{triplet64 + "libhwloc.so.15", so["plain"]},
		{triplet64 + "libstdc++.so.6", so["plain"]},
		{triplet64 + "libgcc_s.so.1", so["plain"]},
		{triplet64 + "libc.so.6", so["plain"]},
		{triplet64 + "libnccl.so.2.22.3", so["nccl"]},
		{triplet64 + "libnccl.so.2", "->libnccl.so.2.22.3"},
		{triplet64 + "libibverbs/libefa-rdmav34.so", "->../libefa.so.1"},
		{"etc/libibverbs.d/efa.driver", "driver efa\n"},
	}
	var out []file
	for _, f := range fs {
		keep := true
		for _, d := range drop {
			if strings.HasSuffix(f.name, d) {
				keep = false
			}
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}

var efaEnv = []string{"LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib64", "NCCL_NET_PLUGIN=ofi"}

// fabricChecks validates img with the fabric and returns its fabric
// checks by name.
func fabricChecks(t *testing.T, img v1.Image, fabric string) map[string]Check {
	t.Helper()
	d := db(t)
	f, err := d.Fabric(fabric)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Inspect(t.Context(), img, Options{DB: d, Fabrics: []matrix.Fabric{f}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Check{}
	for _, c := range r.Checks {
		if strings.HasPrefix(c.Name, "fabric:") {
			out[strings.TrimPrefix(c.Name, "fabric:"+fabric+":")] = c
		}
		if c.Name == "libs/closure" && strings.Contains(c.Message, "libnccl-net") {
			t.Errorf("libs/closure reads the fabric's objects: %s", c.Message)
		}
	}
	if fails := func() bool {
		for _, c := range out {
			if c.Status == matrix.Fail {
				return true
			}
		}
		return false
	}(); fails && r.Verdict != matrix.Fail {
		t.Errorf("a fabric check fails and the verdict is %s", r.Verdict)
	}
	return out
}

func TestFabricEFA(t *testing.T) {
	so := fabricLibs(t)
	wheel := sp + "nvidia_nccl_cu12-2.21.5.dist-info/METADATA"
	for _, tt := range []struct {
		name  string
		files []file
		env   []string
		want  map[string]string // check → status and a piece of its message
	}{
		{"installed as AWS does", efaBase(so), efaEnv, map[string]string{
			"plugin": "pass NCCL opens libnccl-net-ofi.so", "closure": "pass", "libs": "warn libgdrapi.so",
			"provider": "pass has the efa provider built in (it links libefa.so.1)", "nccl": "pass NCCL 2.22.3", "env": "pass NCCL_NET_PLUGIN=ofi",
			"verbs": "pass libibverbs loads its efa provider (/etc/libibverbs.d/efa.driver; /usr/lib/x86_64-linux-gnu/libibverbs/libefa-rdmav34.so (/usr/lib/x86_64-linux-gnu/libefa.so.1))"}},
		{"no efa.driver for libibverbs", efaBase(so, "efa.driver"), efaEnv, map[string]string{
			"verbs": "fail no efa.driver is in the image"}},
		{"efa named in RDMAV_DRIVERS", efaBase(so, "efa.driver"), append([]string{"RDMAV_DRIVERS=mlx5:efa"}, efaEnv...), map[string]string{
			"verbs": "pass libibverbs loads its efa provider (RDMAV_DRIVERS (image config ENV)"}},
		{"the provider module's link dangles", efaBase(so, "libefa.so.1"), efaEnv, map[string]string{
			"verbs": "fail no libibverbs provider module libefa-rdmavN.so that resolves"}},
		{"no plugin", efaBase(so, "libnccl-net-ofi.so"), efaEnv, map[string]string{
			"plugin": "fail no aws-ofi-nccl plugin", "provider": "pass"}},
		{"plugin off the search path", efaBase(so), []string{"NCCL_NET_PLUGIN=ofi"}, map[string]string{
			"plugin": "fail finds none on the library search path"}},
		{"only libnccl-net-ofi.so, NCCL_NET_PLUGIN unset", efaBase(so), efaEnv[:1], map[string]string{
			"plugin": "fail set NCCL_NET_PLUGIN=ofi"}},
		{"older installer's libnccl-net.so", append(efaBase(so, "libnccl-net-ofi.so"), file{"opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so", so["plugin"]}), []string{"LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu"}, map[string]string{
			"plugin": "pass NCCL opens libnccl-net.so"}},
		{"libfabric missing", efaBase(so, "libfabric.so.1.27.0", "libfabric.so.1"), efaEnv, map[string]string{
			"closure": "fail /opt/amazon/ofi-nccl/lib64/libnccl-net-ofi.so needs libfabric.so.1", "libs": "fail libfabric.so.1", "provider": "fail no readable libfabric.so.1"}},
		{"libfabric without efa", append(efaBase(so, "libfabric.so.1.27.0"), file{triplet64 + "libfabric.so.1.27.0", so["libfabric-tcp"]}), efaEnv, map[string]string{
			"provider": "fail has no efa provider"}},
		{"efa provider as a module", append(efaBase(so, "libfabric.so.1.27.0"), file{triplet64 + "libfabric.so.1.27.0", so["libfabric-tcp"]}, file{triplet64 + "libfabric/libefa-fi.so", so["efa"]}), efaEnv, map[string]string{
			"provider": "pass loads the efa provider as a module"}},
		{"NCCL older than every release supports", append(efaBase(so, "libnccl.so.2.22.3", "libnccl.so.2"), file{triplet64 + "libnccl.so.2.16.5", so["nccl"]}), efaEnv, map[string]string{
			"nccl": "fail NCCL 2.16.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.16.5) is older than every aws-ofi-nccl release supports (NCCL >= 2.17.1"}},
		{"no NCCL", efaBase(so, "libnccl.so.2.22.3", "libnccl.so.2"), efaEnv, map[string]string{"nccl": "fail no NCCL"}},
		{"a wheel's NCCL shadows the system's", append(efaBase(so), file{wheel, "Metadata-Version: 2.1\nName: nvidia-nccl-cu12\nVersion: 2.21.5\n\n"}, file{sp + "nvidia/nccl/lib/libnccl.so.2", so["nccl"]}), efaEnv, map[string]string{
			"nccl/shadow": "warn the framework loads the wheel's NCCL (nvidia-nccl-cu12 2.21.5), not the system NCCL 2.22.3", "nccl": "pass nvidia-nccl-cu12 2.21.5"}},
		{"NCCL_NET=Socket", efaBase(so), append([]string{"NCCL_NET=Socket"}, efaEnv...), map[string]string{
			"env": "fail NCCL_NET=Socket (image config ENV) turns it off"}},
		{"FI_PROVIDER=tcp in /etc/nccl.conf", append(efaBase(so), file{"etc/nccl.conf", "NCCL_DEBUG=INFO\n# FI_PROVIDER=efa\nFI_PROVIDER=tcp\n"}), efaEnv, map[string]string{
			"env": "fail FI_PROVIDER=tcp (/etc/nccl.conf) turns it off"}},
		{"the environment wins over /etc/nccl.conf", append(efaBase(so), file{"etc/nccl.conf", "NCCL_NET=Socket\n"}), append([]string{"NCCL_NET=AWS Libfabric"}, efaEnv...), map[string]string{
			"env": "pass no setting turns it off (NCCL_NET=AWS Libfabric"}},
		{"NCCL_NET_PLUGIN=none", efaBase(so), []string{"LD_LIBRARY_PATH=/opt/amazon/ofi-nccl/lib64", "NCCL_NET_PLUGIN=none"}, map[string]string{
			"env": "fail NCCL_NET_PLUGIN=none", "plugin": "fail NCCL loads no network plugin (NCCL_NET_PLUGIN=none, image config ENV): unset NCCL_NET_PLUGIN, or set it to ofi"}},
		{"NCCL_SOCKET_IFNAME=lo", efaBase(so), append([]string{"NCCL_SOCKET_IFNAME==lo"}, efaEnv...), map[string]string{
			"env": "fail only the loopback interface"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := fabricChecks(t, withEnv(t, image(t, layer(t, tt.files...)), tt.env...), "efa")
			for name, want := range tt.want {
				st, msg, _ := strings.Cut(want, " ")
				c, ok := got[name]
				if !ok {
					t.Errorf("no fabric:efa:%s check; have %v", name, got)
					continue
				}
				if string(c.Status) != st || !strings.Contains(c.Message, msg) {
					t.Errorf("fabric:efa:%s = %s %q, want %s containing %q", name, c.Status, c.Message, st, msg)
				}
			}
		})
	}
}

func TestFabricInfinibandAndHost(t *testing.T) {
	so := fabricLibs(t)
	ib := []file{
		{triplet64 + "libibverbs.so.1", so["ibverbs"]}, {triplet64 + "libmlx5.so.1", so["mlx5"]},
		{triplet64 + "librdmacm.so.1", so["rdmacm"]}, {triplet64 + "libc.so.6", so["plain"]},
		{triplet64 + "libnccl.so.2.22.3", so["nccl"]},
		{triplet64 + "libibverbs/libmlx5-rdmav34.so", "->../libmlx5.so.1"}, {"etc/libibverbs.d/mlx5.driver", "driver mlx5\n"},
	}
	got := fabricChecks(t, image(t, layer(t, ib...)), "infiniband")
	for name, want := range map[string]matrix.Status{"libs": matrix.Warn, "closure": matrix.Pass, "nccl": matrix.Pass, "env": matrix.Pass, "verbs": matrix.Pass} {
		if got[name].Status != want {
			t.Errorf("infiniband %s: %s %q, want %s", name, got[name].Status, got[name].Message, want)
		}
	}
	if _, ok := got["plugin"]; ok {
		t.Errorf("infiniband has no plugin to check: %v", got["plugin"])
	}
	got = fabricChecks(t, withEnv(t, image(t, layer(t, ib[2:5]...)), "NCCL_IB_DISABLE=1"), "infiniband")
	if c := got["verbs"]; c.Status != matrix.Fail {
		t.Errorf("infiniband without rdma-core's providers: verbs %s %q", c.Status, c.Message)
	}
	if c := got["libs"]; c.Status != matrix.Fail || !strings.Contains(c.Message, "libibverbs.so.1") || !strings.Contains(c.Message, "libmlx5.so.1") {
		t.Errorf("infiniband without rdma-core: %s %q", c.Status, c.Message)
	}
	if c := got["env"]; c.Status != matrix.Fail || !strings.Contains(c.Message, "NCCL_IB_DISABLE=1") {
		t.Errorf("NCCL_IB_DISABLE=1: %s %q", c.Status, c.Message)
	}

	wheel := []file{{sp + "nvidia_nccl_cu12-2.21.5.dist-info/METADATA", "Name: nvidia-nccl-cu12\nVersion: 2.21.5\n\n"}, {sp + "nvidia/nccl/lib/libnccl.so.2", so["nccl"]}}
	got = fabricChecks(t, image(t, layer(t, wheel...)), "tcpxo")
	if c := got["nccl/host"]; c.Status != matrix.Warn || !strings.Contains(c.Message, "nvidia-nccl-cu12 2.21.5") || !strings.Contains(c.Message, "/usr/local/nvidia/lib64") {
		t.Errorf("tcpxo with a wheel's NCCL: %s %q", c.Status, c.Message)
	}
	if c := got["host"]; c.Status != matrix.Warn || !strings.Contains(c.Message, "set LD_LIBRARY_PATH=/usr/local/nvidia/lib64 in the pod spec") {
		t.Errorf("tcpxo host: %s %q", c.Status, c.Message)
	}
	got = fabricChecks(t, withEnv(t, image(t, layer(t, file{"etc/os-release", "ID=debian\n"})), "LD_LIBRARY_PATH=/usr/local/nvidia/lib64"), "gib")
	for _, name := range []string{"nccl/host", "host", "env"} {
		if got[name].Status != matrix.Pass {
			t.Errorf("gib %s: %s %q", name, got[name].Status, got[name].Message)
		}
	}
}

func TestInspectTargetFabric(t *testing.T) {
	so := fabricLibs(t)
	d := db(t)
	img := withEnv(t, image(t, layer(t, efaBase(so)...)), append([]string{"NCCL_NET=Socket"}, efaEnv...)...)
	for _, tt := range []struct{ target, want string }{
		{"eks/p5", "fabric:efa:env"},
		{"sagemaker/p5", ""},
	} {
		tg, err := d.Target(tt.target)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Inspect(t.Context(), img, Options{DB: d, Targets: []matrix.Target{tg}})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]Check{}
		for _, c := range r.Checks {
			byName[c.Name] = c
		}
		tf := byName["target:"+tt.target+":fabric"]
		if tt.want == "" {
			if tf.Status != matrix.Warn || !strings.Contains(tf.Message, "names no fabric") {
				t.Errorf("%s: %s %q, want a warning that the row names no fabric", tt.target, tf.Status, tf.Message)
			}
			for n := range byName {
				if strings.HasPrefix(n, "fabric:") {
					t.Errorf("%s: fabric check %s ran without a fabric", tt.target, n)
				}
			}
			continue
		}
		if tf.Status != matrix.Pass || byName[tt.want].Status != matrix.Fail {
			t.Errorf("%s: %v; %s = %v", tt.target, tf, tt.want, byName[tt.want])
		}
		if fmt.Sprint(r.Verdict) != "fail" {
			t.Errorf("%s: verdict %s", tt.target, r.Verdict)
		}
	}
}

// TestInspectLabelFabric: an image whose dev.gpuimg.stack label says the
// build added a fabric (gpuimg build --fabric) is checked for it without
// --fabric.
func TestInspectLabelFabric(t *testing.T) {
	so := fabricLibs(t)
	img := withEnv(t, image(t, layer(t, efaBase(so)...)), append([]string{"NCCL_NET=Socket"}, efaEnv...)...)
	for _, tt := range []struct{ name, fabric, label string }{
		{"efa", "efa", `{"cuda":"12.2.2","python":"3.10","os":"ubuntu22.04","fabric":{"name":"efa","library_path":["/opt/amazon/ofi-nccl/lib64"]}}`},
		{"none", "", `{"cuda":"12.2.2","python":"3.10","os":"ubuntu22.04"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			cfg = cfg.DeepCopy()
			cfg.Config.Labels = map[string]string{matrix.StackLabel: tt.label}
			labeled, err := mutate.ConfigFile(img, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Inspect(t.Context(), labeled, Options{DB: db(t)})
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]Check{}
			for _, c := range r.Checks {
				byName[c.Name] = c
			}
			lf, ok := byName["stack-label/fabric"]
			if tt.fabric == "" {
				for n := range byName {
					if ok || strings.HasPrefix(n, "fabric:") {
						t.Errorf("check %s without a fabric in the label", n)
					}
				}
				return
			}
			if lf.Status != matrix.Pass || byName["fabric:efa:env"].Status != matrix.Fail {
				t.Errorf("stack-label/fabric %v; fabric:efa:env %v (NCCL_NET=Socket)", lf, byName["fabric:efa:env"])
			}
		})
	}
}

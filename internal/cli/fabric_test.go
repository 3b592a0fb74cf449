package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestValidateFabricFlag: --fabric and a target's fabric reach the
// fabric checks; a fabric the matrix lacks is a usage error.
func TestValidateFabricFlag(t *testing.T) {
	img := filesImage(t, [][2]string{{"etc/nccl.conf", "NCCL_NET=Socket\n"}}, func(c *v1.Config) { c.Env = []string{"NCCL_NET_PLUGIN=ofi"} })
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img))
	ref := "oci:" + dir

	checks := func(args ...string) (map[string]string, int) {
		t.Helper()
		out, errOut, code := run(t, append([]string{"validate", ref, "-o", "json"}, args...)...)
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, errOut)
		}
		m := map[string]string{}
		for _, c := range r.Checks {
			m[c.Name] = c.Status + " " + c.Message
		}
		return m, code
	}
	got, code := checks("--fabric", "efa")
	if code != 1 {
		t.Errorf("--fabric efa on an image without the stack: exit %d, want 1", code)
	}
	for name, want := range map[string]string{
		"fabric:efa:plugin": "fail efa: no aws-ofi-nccl plugin",
		"fabric:efa:libs":   "fail efa: the image lacks libfabric.so.1",
		"fabric:efa:env":    "fail efa: NCCL_NET=Socket (/etc/nccl.conf) turns it off",
	} {
		if !strings.HasPrefix(got[name], want) {
			t.Errorf("%s = %q, want %q…", name, got[name], want)
		}
	}
	got, _ = checks("--target", "eks/p5")
	if !strings.HasPrefix(got["target:eks/p5:fabric"], "pass eks/p5: the fleet's fabric is efa") || got["fabric:efa:plugin"] == "" {
		t.Errorf("--target eks/p5: fabric %q, plugin %q", got["target:eks/p5:fabric"], got["fabric:efa:plugin"])
	}
	got, _ = checks("--target", "sagemaker/p5")
	if !strings.HasPrefix(got["target:sagemaker/p5:fabric"], "warn sagemaker/p5: the target row names no fabric") {
		t.Errorf("--target sagemaker/p5: %q", got["target:sagemaker/p5:fabric"])
	}
	_, errOut, code := run(t, "validate", ref, "--fabric", "omnipath")
	if code != 2 || !strings.Contains(errOut, `unknown fabric "omnipath": want one of efa, gib, infiniband, tcpxo`) {
		t.Errorf("--fabric omnipath: exit %d, %q", code, errOut)
	}
	out, _, code := run(t, "matrix", "list", "fabrics")
	if code != 0 || !strings.Contains(out, "aws-ofi-nccl 1.21.1 (libnccl-net-ofi.so, libnccl-net.so)") || !strings.Contains(out, ">=2.17.1, tested to 2.31.2") {
		t.Errorf("matrix list fabrics: exit %d\n%s", code, out)
	}
}

// TestValidateNodesAndNCCLLog: --run kubernetes --nodes writes the
// multi-node all-reduce; --nccl-log judges a recorded log beside the
// static checks.
func TestValidateNodesAndNCCLLog(t *testing.T) {
	out, errOut, code := run(t, "validate", "registry.example.com/ml/train:efa", "--run", "kubernetes", "--nodes", "3", "--fabric", "efa")
	if code != 0 || !strings.Contains(out, "completionMode: Indexed") || !strings.Contains(out, "--nnodes=3") || !strings.Contains(out, "the efa fabric's") {
		t.Errorf("--nodes 3: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"--run", "kubernetes", "--nodes", "1"},
		{"--run", "docker", "--nodes", "2"},
		{"--nodes", "2"},
	} {
		if _, errOut, code := run(t, append([]string{"validate", "registry.example.com/ml/train:efa"}, args...)...); code != 2 || !strings.Contains(errOut, "--nodes") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}

	img := filesImage(t, [][2]string{{"etc/os-release", "ID=debian\n"}}, nil)
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img))
	log := filepath.Join("..", "..", "validate", "testdata", "nccllog", "socket-nccl-1410.log")
	out, _, code = run(t, "validate", "oci:"+dir, "--nccl-log", log, "--fabric", "efa", "-o", "json")
	var r report
	must(t, json.Unmarshal([]byte(out), &r))
	found := false
	for _, c := range r.Checks {
		if c.Name == "nccl/transport" {
			found = c.Status == "fail" && strings.Contains(c.Message, "fell back to TCP sockets")
		}
	}
	if code != 1 || !found {
		t.Errorf("--nccl-log of a socket fallback: exit %d\n%s", code, out)
	}
	if _, errOut, code := run(t, "validate", "oci:"+dir, "--nccl-log", filepath.Join(t.TempDir(), "none.log")); code != 2 || !strings.Contains(errOut, "--nccl-log") {
		t.Errorf("--nccl-log of a missing file: exit %d, %q", code, errOut)
	}
}

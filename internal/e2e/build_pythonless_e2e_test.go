package e2e

import (
	"archive/tar"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestBuildPythonlessReproducible builds one torch stack (CUDA 12.2,
// torch 2.3, torch.compile on by default) twice on a base without Python,
// as NVIDIA's Ubuntu bases are (testenv's PushBasePythonless), on two
// buildkitds that start from empty state, and pushes the results to two
// tags: the digests must be equal. The Python step's apt branch runs
// (from the Env's loopback apt repository): the image has python3.11,
// gcc and Python.h that the base lacks, and none of the logs and caches
// of the install that hold its time (builder's pkgRunFiles). This is the
// test that exercises torch.compile's packages end to end; the other
// builds of the package pass --torch-compile=false.
func TestBuildPythonlessReproducible(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	ctx := t.Context()
	env := ownEnv(t, "gy-")
	_, err := env.PushBasePythonless(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04")
	must(t, err)
	must(t, env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"))
	other, err := env.StartBuildKit(ctx, "bk2")
	must(t, err)
	t.Cleanup(func() { _ = other.Stop(ctx) })

	build := func(addr, tag string) (ref, digest string) {
		t.Helper()
		ref = env.Registry.Host + "/gpuimg/pyless:" + tag
		start := time.Now()
		out, errOut, code := run(t, "build", "--cuda", "12.2", "--torch", "2.3",
			"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL, "--builder", addr,
			"-t", ref, "--push", "--progress", "plain", "-o", "json")
		if code != 0 {
			t.Fatalf("gpuimg build exited %d:\n%s", code, lastLines(errOut, 40))
		}
		var res struct{ Digest string }
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
			t.Fatalf("result %q: %v", out, err)
		}
		t.Logf("build on a fresh buildkitd (%s): %s in %s", tag, res.Digest, time.Since(start).Round(100*time.Millisecond))
		// dpkg's own line (the RUN line names apt-get whether or not its
		// branch runs).
		if !strings.Contains(errOut, "Setting up python3.11-dev") {
			t.Errorf("the build's progress has no \"Setting up python3.11-dev\": the apt branch did not run\n%s", lastLines(errOut, 20))
		}
		return ref, res.Digest
	}
	refA, digestA := build(env.BuildKit.Address(), "a")
	refB, digestB := build(other.Address(), "b")

	imgA := remoteImage(t, refA)
	if digestA != digestB {
		t.Errorf("two builds on fresh buildkitds gave %s and %s", digestA, digestB)
		a, b := layerEntries(t, imgA), layerEntries(t, remoteImage(t, refB))
		for i := range min(len(a), len(b)) {
			var differ []string
			for n, e := range a[i] {
				if b[i][n] != e {
					differ = append(differ, n+": "+e+" | "+b[i][n])
				}
			}
			for n := range b[i] {
				if _, ok := a[i][n]; !ok {
					differ = append(differ, n+": only in the second")
				}
			}
			slices.Sort(differ)
			if len(differ) > 0 {
				t.Errorf("layer %d: %d entries differ:\n%s", i, len(differ), strings.Join(differ[:min(len(differ), 30)], "\n"))
			}
		}
	}

	// What the apt branch installed, above a base that has none of it.
	inBase, inImage := map[string]bool{}, map[string]bool{}
	layerOf := map[string]int{} // the last layer that has each path
	var status []byte           // dpkg's status, as the last layer has it
	layers := map[int][]string{}
	eachEntry(t, imgA, func(layer int, h *tar.Header, r io.Reader) {
		n := strings.TrimPrefix(h.Name, "./")
		if layer == 0 {
			inBase[n] = true
		} else {
			inImage[n] = true
		}
		layerOf[n] = layer
		layers[layer] = append(layers[layer], n)
		if n == "var/lib/dpkg/status" {
			b, err := io.ReadAll(r)
			must(t, err)
			status = b
		}
	})
	// On apt the packages that are not Python's are a layer of their own
	// below the venv's (builder's osSplit), which holds Python's
	// packages and dpkg's database, whose status lists every package.
	cc, hdr := layerOf["usr/bin/gcc"], layerOf["usr/include/python3.11/Python.h"]
	if cc == 0 || cc >= hdr {
		t.Errorf("gcc is in layer %d and Python.h in layer %d: want the compiler in a layer of its own below the Python headers'", cc, hdr)
	}
	for _, n := range layers[cc] {
		if strings.Contains(n, "python3.11") || strings.HasPrefix(n, "var/lib/dpkg/") || strings.HasPrefix(n, "opt/venv/") {
			t.Errorf("the compiler's layer %d has %s: want only the files of packages any Python shares", cc, n)
		}
	}
	for _, pkg := range []string{"gcc", "libc6-dev", "python3.11-dev", "python3.11-venv"} {
		if !strings.Contains(string(status), "\nPackage: "+pkg+"\n") && !strings.HasPrefix(string(status), "Package: "+pkg+"\n") {
			t.Errorf("the image's dpkg status (layer %d) does not list %s", layerOf["var/lib/dpkg/status"], pkg)
		}
	}
	for _, p := range []string{"usr/bin/python3.11", "usr/bin/gcc", "usr/include/python3.11/Python.h"} {
		if inBase[p] {
			t.Errorf("the Python-less base has %s", p)
		}
		if !inImage[p] {
			t.Errorf("the image lacks %s, which the apt branch installs", p)
		}
	}
	for n := range inImage {
		for _, f := range []string{"var/log/dpkg.log", "var/log/alternatives.log", "var/log/apt/", "var/cache/ldconfig/aux-cache"} {
			if strings.HasPrefix(n, f) && n != "var/log/apt/" {
				t.Errorf("the image keeps %s, which holds the install's time", n)
			}
		}
	}
}

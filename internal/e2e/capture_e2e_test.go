package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

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
	root := t.TempDir()
	must(t, testenv.HandBuiltRoot(ctx, root))
	_, err := env.PushBase(ctx, "nvidia/cuda:12.4.1-base-ubuntu22.04")
	must(t, err)
	must(t, testenv.LayeredStackWheels(ctx, env.WheelDir, "2.6.0", "0.21.0", "2.6.0", "12.4", []string{"3.11"}, layersScale))
	for _, d := range testenv.HandBuiltExtras() {
		_, err := testenv.Wheel(env.WheelDir, d.Name, d.Version, "py3-none-any", map[string]string{strings.ReplaceAll(d.Name, "-", "_") + "/__init__.py": ""})
		must(t, err)
	}
	// The user's pip install, as pip lays wheels out: every wheel the
	// index serves, unpacked into the venv over the fixture's records.
	must(t, testenv.UnpackWheels(env.WheelDir, filepath.Join(root, testenv.HandBuiltSite)))
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
	build := func(file, ctxDir, ref string) {
		t.Helper()
		gpuimg(0, "build", "-f", file, "--context", ctxDir, "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(), "-t", ref, "--push", "--progress", "plain")
	}
	gpuimg(0, "capture", "dir:"+root, "--matrix-file", env.MatrixFile, "--copy", "/opt/tools/run.sh", "--file", file)
	y, err := os.ReadFile(file)
	must(t, err)
	t.Logf("capture:\n%s", y)
	ref := env.Registry.Host + "/gpuimg/restored:1"
	build(file, work, ref)
	t.Logf("diff env.yaml REF:\n%s", gpuimg(0, "diff", file, ref, "--matrix-file", env.MatrixFile))
	t.Logf("diff dir:ROOT REF --files:\n%s", gpuimg(1, "diff", "dir:"+root, ref, "--files", "--matrix-file", env.MatrixFile))
	got := differences(t, gpuimg(1, "diff", "dir:"+root, ref, "--files", "--matrix-file", env.MatrixFile, "-o", "json"))
	// Exactly what capture.unreproducible lists: mylib from git; the
	// conda env (its two records, and numpy's dist-info in it); the
	// runfile toolkit (its tree, and its version.json's CUDA and cudart,
	// which the fixture base, having no toolkit, does not replace); the hand-copied
	// library left out of --copy. /opt/tools/run.sh, carried by --copy,
	// is the same on both sides.
	want := []string{"conda /opt/conda numpy", "conda /opt/conda python", "cuda cuda_cudart", "cuda runfile /usr/local/cuda-12.4", "files /usr/local/lib/libhandmade.so.1",
		"python mylib", "python numpy", "stack cuda"}
	if !slices.Equal(got, want) {
		t.Errorf("the source and its restore differ in\n %q\nwant exactly\n %q", got, want)
	}

	// --copy's file is a layer of its own: the only file of its layer.
	if files := layerWith(t, ref, "opt/tools/run.sh"); !slices.Equal(files, []string{"opt/tools/run.sh"}) {
		t.Errorf("the layer holding opt/tools/run.sh holds the files %q, want it alone", files)
	}

	// An image gpuimg built, captured and rebuilt: the same.
	file2 := filepath.Join(work, "image.yaml")
	gpuimg(0, "capture", ref, "--matrix-file", env.MatrixFile, "--file", file2)
	y2, err := os.ReadFile(file2)
	must(t, err)
	t.Logf("capture of the image:\n%s", y2)
	ref2 := env.Registry.Host + "/gpuimg/restored:2"
	build(file2, work, ref2)
	t.Logf("diff REF REF2:\n%s", gpuimg(0, "diff", ref, ref2, "--matrix-file", env.MatrixFile))

	// The key: in no output, capture, image config or layer.
	for _, s := range []string{testenv.FakeAWSSecret, testenv.FakeAWSKeyID} {
		if strings.Contains(outputs.String(), s) || strings.Contains(string(y), s) || strings.Contains(string(y2), s) {
			t.Errorf("the AWS key %s is in gpuimg's output or a capture", s)
		}
		for _, r := range []string{ref, ref2} {
			if imageHolds(t, r, s) {
				t.Errorf("the AWS key %s is in %s", s, r)
			}
		}
	}
}

// differences are diff -o json's changes as "KIND NAME", sorted.
func differences(t *testing.T, js string) []string {
	t.Helper()
	var d struct {
		Kinds []struct {
			Kind    string `json:"kind"`
			Changes []struct{ Name, A, B string }
		} `json:"differences"`
	}
	must(t, json.Unmarshal([]byte(js), &d))
	var got []string
	for _, k := range d.Kinds {
		for _, c := range k.Changes {
			got = append(got, k.Kind+" "+c.Name)
		}
	}
	slices.Sort(got)
	return got
}

// imageHolds says whether ref's config or any of its layers holds s.
func imageHolds(t *testing.T, ref, s string) bool {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	img, err := remote.Image(r, remote.WithContext(t.Context()))
	must(t, err)
	cfg, err := img.RawConfigFile()
	must(t, err)
	if strings.Contains(string(cfg), s) {
		return true
	}
	layers, err := img.Layers()
	must(t, err)
	for _, l := range layers {
		rc, err := l.Uncompressed()
		must(t, err)
		b, err := io.ReadAll(rc)
		rc.Close()
		must(t, err)
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// layerWith lists the regular files of the first layer of ref that holds
// the file p.
func layerWith(t *testing.T, ref, p string) []string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	img, err := remote.Image(r, remote.WithContext(t.Context()))
	must(t, err)
	layers, err := img.Layers()
	must(t, err)
	for _, l := range layers {
		rc, err := l.Uncompressed()
		must(t, err)
		var files []string
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			must(t, err)
			if h.Typeflag == tar.TypeReg {
				files = append(files, strings.TrimPrefix(h.Name, "./"))
			}
		}
		rc.Close()
		if slices.Contains(files, p) {
			return files
		}
	}
	return nil
}

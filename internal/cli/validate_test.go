package cli

import (
	"archive/tar"
	"encoding/json"
	"encoding/xml"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// smallImage is a CUDA-12.2-looking image: version.json, a venv with a
// torch cu121 version.py, and NVIDIA_REQUIRE_CUDA as given.
func smallImage(t *testing.T, requireCUDA string) v1.Image {
	t.Helper()
	return cudaTorchImage(t, "12.2.2", "12.1", requireCUDA)
}

// filesImage is testenv.FilesImage, failing t on an error.
func filesImage(t *testing.T, files [][2]string, edit func(*v1.Config)) v1.Image {
	t.Helper()
	img, err := testenv.FilesImage(files, edit)
	must(t, err)
	return img
}

type report struct {
	Image   string
	Digest  string
	Verdict string
	Found   struct {
		CUDA   string
		Python string
		Torch  struct{ Version, CUDA string }
	}
	Checks []struct{ Name, Status, Message string }
}

func TestValidateTransports(t *testing.T) {
	img := smallImage(t, "cuda>=12.2")
	digest, err := img.Digest()
	must(t, err)
	dir := t.TempDir()

	ociDir := filepath.Join(dir, "layout")
	p, err := layout.Write(ociDir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "torch"})))

	ociArchive := filepath.Join(dir, "image.oci.tar")
	must(t, tarDir(ociDir, ociArchive))

	dockerArchive := filepath.Join(dir, "image.docker.tar")
	tag, err := name.NewTag("example.com/ml/torch:2.3")
	must(t, err)
	must(t, tarball.WriteToFile(dockerArchive, tag, img))

	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := host + "/ml/torch:2.3"
	r, err := name.ParseReference(ref)
	must(t, err)
	must(t, remote.Write(r, img))

	for _, tt := range []struct {
		ref        string
		sameDigest bool
	}{
		{ref, true},
		{"docker://" + ref, true},
		{"oci:" + ociDir, true},
		{"oci:" + ociDir + ":torch", true},
		{"oci-archive:" + ociArchive, true},
		{"docker-archive:" + dockerArchive, false},
	} {
		t.Run(tt.ref, func(t *testing.T) {
			out, errOut, code := run(t, "validate", tt.ref, "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			var rep report
			must(t, json.Unmarshal([]byte(out), &rep))
			if tt.sameDigest && rep.Digest != digest.String() {
				t.Errorf("digest %s, want %s", rep.Digest, digest)
			}
			if rep.Found.CUDA != "12.2.2" || rep.Found.Python != "3.10" || rep.Found.Torch.CUDA != "12.1" || rep.Verdict != "pass" {
				t.Errorf("report: %+v", rep)
			}
		})
	}

	t.Run("a missing blob fails in one line", func(t *testing.T) {
		broken := filepath.Join(t.TempDir(), "layout")
		p, err := layout.Write(broken, empty.Index)
		must(t, err)
		must(t, p.AppendImage(img))
		layers, err := img.Layers()
		must(t, err)
		d, err := layers[0].Digest()
		must(t, err)
		must(t, os.Remove(filepath.Join(broken, "blobs", d.Algorithm, d.Hex)))
		_, errOut, code := run(t, "validate", "oci:"+broken)
		if code != 2 || !strings.Contains(errOut, "layer 0") || strings.Count(errOut, "gpuimg:") != 1 {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("exit codes", func(t *testing.T) {
		bad := smallImage(t, "cuda>=12.0")
		br, _ := name.ParseReference(host + "/ml/torch:weak")
		must(t, remote.Write(br, bad))
		tests := []struct {
			args   []string
			code   int
			errHas string
			outHas string
		}{
			{[]string{"validate", host + "/ml/torch:weak"}, 1, "validation failed", "FAIL  require-cuda"},
			{[]string{"validate", host + "/ml/torch:weak", "-o", "junit"}, 1, "", "<failure message="},
			{[]string{"validate", "oci:" + filepath.Join(dir, "nope")}, 2, "open OCI layout", ""},
			{[]string{"validate", "127.0.0.1:1/ml/torch:2.3"}, 2, "fetch 127.0.0.1:1/ml/torch:2.3", ""},
			{[]string{"validate", ref, "--bandwidth", "fast"}, 2, "bandwidth \"fast\"", ""},
			{[]string{"validate", ref, "--gpu", "voodoo5"}, 2, "unknown GPU", ""},
			{[]string{"validate", "ftp://x"}, 2, "unknown transport \"ftp\"", ""},
			{[]string{"validate", ref, "--driver", "535.104.05", "--gpu", "h100", "--bandwidth", "1Gbps"}, 0, "", "verdict: pass"},
		}
		for _, tt := range tests {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.errHas) || !strings.Contains(out, tt.outHas) {
				t.Errorf("%v: exit %d (want %d)\nstderr %q (want %q)\nstdout %q (want %q)", tt.args, code, tt.code, errOut, tt.errHas, lastLines(out, 5), tt.outHas)
			}
			if code == 2 && strings.Count(errOut, "gpuimg:") != 1 {
				t.Errorf("%v: error not printed once: %q", tt.args, errOut)
			}
		}
		out, _, _ := run(t, "validate", host+"/ml/torch:weak", "-o", "junit")
		var v struct{}
		if err := xml.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("junit is not XML: %v", err)
		}
	})
}

// tarDir archives a directory (an OCI layout) into file.
func tarDir(dir, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			_, err = io.Copy(tw, in)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// TestValidatePlatformJudged: validate judges --platform, else
// linux/amd64, for a single image as for an index; a single image of
// another platform is refused in one line (exit 2) saying how to judge
// it, and the report, text and JSON, names the platform it judged.
func TestValidatePlatformJudged(t *testing.T) {
	arm := smallImage(t, "cuda>=12.2")
	cfg, err := arm.ConfigFile()
	must(t, err)
	cfg = cfg.DeepCopy()
	cfg.Architecture = "arm64"
	arm, err = mutate.ConfigFile(arm, cfg)
	must(t, err)
	dir := t.TempDir()
	layouts := map[string]v1.Image{"amd": smallImage(t, "cuda>=12.2"), "arm": arm}
	for n, img := range layouts {
		p, err := layout.Write(filepath.Join(dir, n), empty.Index)
		must(t, err)
		must(t, p.AppendImage(img))
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/ml/torch:arm"
	r, err := name.ParseReference(ref)
	must(t, err)
	must(t, remote.Write(r, arm))
	amdDir, armDir := "oci:"+filepath.Join(dir, "amd"), "oci:"+filepath.Join(dir, "arm")

	for _, tt := range []struct {
		args []string
		code int
		has  string // in stdout for exit 0, else in the one line of stderr
	}{
		{[]string{"validate", amdDir}, 0, "\nplatform linux/amd64\n"},
		{[]string{"validate", amdDir, "-o", "json"}, 0, `"platform": "linux/amd64"`},
		{[]string{"validate", armDir, "--platform", "linux/arm64"}, 0, "\nplatform linux/arm64\n"},
		{[]string{"validate", armDir, "--platform", "linux/arm64", "-o", "json"}, 0, `"platform": "linux/arm64"`},
		{[]string{"validate", armDir}, 2, "is one linux/arm64 image, and validate reads linux/amd64 (--platform, default linux/amd64); add --platform linux/arm64 to validate it"},
		{[]string{"validate", armDir, "-o", "json"}, 2, "add --platform linux/arm64"},
		{[]string{"validate", ref}, 2, "is one linux/arm64 image, and validate reads linux/amd64"},
		{[]string{"validate", amdDir, "--platform", "linux/arm64"}, 2, "is one linux/amd64 image, and validate reads linux/arm64 (--platform, default linux/amd64); add --platform linux/amd64"},
		{[]string{"sbom", armDir}, 2, "and sbom reads linux/amd64"},
	} {
		out, errOut, code := run(t, tt.args...)
		got := out
		if tt.code != 0 {
			got = errOut
			if strings.Count(errOut, "gpuimg:") != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || strings.Contains(errOut, "docker login") {
				t.Errorf("%v: stderr is not one line with the fix: %q", tt.args, errOut)
			}
		}
		if code != tt.code || !strings.Contains(got, tt.has) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout %s\nstderr %s", tt.args, code, tt.code, tt.has, lastLines(out, 3), errOut)
		}
	}
}

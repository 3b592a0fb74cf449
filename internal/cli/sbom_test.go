package cli

import (
	"archive/tar"
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// sbomImage is a small image with a dpkg database, torch's dist-info and
// version.py, and a CUDA runtime library by name.
func sbomImage(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sp := "usr/local/lib/python3.11/dist-packages/"
	for _, f := range [][2]string{
		{"etc/os-release", "ID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"},
		{"var/lib/dpkg/status", "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nSource: glibc\nVersion: 2.36-9+deb12u7\n"},
		{sp + "torch-2.3.1+cu121.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.3.1+cu121\n"},
		{sp + "torch/version.py", "__version__ = '2.3.1+cu121'\ncuda: Optional[str] = '12.1'\n"},
		{"usr/lib/x86_64-linux-gnu/libcudart.so.12.1.105", "not an ELF"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(f[1]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// TestSBOMAttach writes the SBOM of an image in a registry, with and
// without the referrers API (the tag fallback), to a file in both
// formats and attaches it: the referrer has exactly the artifact type
// trivy's --sbom-sources oci looks for and one layer holding the file's
// bytes.
func TestSBOMAttach(t *testing.T) {
	layerTar := sbomImage(t).Bytes()
	for _, referrers := range []bool{true, false} {
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(referrers)))
		host := strings.TrimPrefix(srv.URL, "http://")
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(empty.Image, l)
		if err != nil {
			t.Fatal(err)
		}
		ref := host + "/ml/torch:1"
		r, _ := name.ParseReference(ref)
		if err := remote.Write(r, img); err != nil {
			t.Fatal(err)
		}
		digest, _ := img.Digest()
		for _, tc := range []struct{ format, artifactType, want string }{
			{"spdx-json", "application/spdx+json", `"spdxVersion": "SPDX-2.3"`},
			{"cyclonedx-json", "application/vnd.cyclonedx+json", `"specVersion": "1.6"`},
		} {
			file := filepath.Join(t.TempDir(), "sbom.json")
			_, stderr, code := run(t, "sbom", ref, "--insecure-registry", host, "-o", tc.format, "--file", file, "--attach")
			if code != 0 {
				t.Fatalf("referrers %v, %s: exit %d: %s", referrers, tc.format, code, stderr)
			}
			doc, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{tc.want, "pkg:pypi/torch@2.3.1", "pkg:deb/debian/libc6@2.36-9%2Bdeb12u7?arch=amd64&distro=debian-12", "pkg:generic/nvidia/cudart@12.1.105", "cu121"} {
				if !bytes.Contains(doc, []byte(want)) {
					t.Errorf("%s: the SBOM lacks %s", tc.format, want)
				}
			}
			idx, err := remote.Referrers(r.Context().Digest(digest.String()), remote.WithFilter("artifactType", tc.artifactType))
			if err != nil {
				t.Fatal(err)
			}
			im, _ := idx.IndexManifest()
			var found int
			for _, d := range im.Manifests {
				if d.ArtifactType != tc.artifactType {
					continue
				}
				found++
				art, err := remote.Image(r.Context().Digest(d.Digest.String()))
				if err != nil {
					t.Fatal(err)
				}
				layers, _ := art.Layers()
				if len(layers) != 1 {
					t.Fatalf("%s referrer has %d layers", tc.format, len(layers))
				}
				rc, _ := layers[0].Compressed()
				got, _ := io.ReadAll(rc)
				rc.Close()
				mt, _ := layers[0].MediaType()
				if !bytes.Equal(got, doc) || string(mt) != tc.artifactType {
					t.Errorf("%s referrer layer (%s) is not the written SBOM", tc.format, mt)
				}
			}
			if found != 1 {
				t.Errorf("referrers %v: %d %s referrers, want 1: %+v", referrers, found, tc.artifactType, im.Manifests)
			}
			if !strings.Contains(stderr, "attached the "+tc.format+" SBOM") {
				t.Errorf("no attach message: %s", stderr)
			}
		}
		srv.Close()
	}
}

func TestSBOMFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sbom", "oci:" + dir, "-o", "spdx"}, "use -o spdx-json, -o cyclonedx-json"},
		{[]string{"sbom", "oci:" + dir, "--attach"}, "--attach needs a registry image"},
	} {
		_, stderr, code := run(t, tt.args...)
		if code != ExitInvalid || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, %s", tt.args, code, stderr)
		}
	}
}

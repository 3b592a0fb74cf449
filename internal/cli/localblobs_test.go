package cli

import (
	"bytes"
	"encoding/json"
	"errors"
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
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// blobPath is where an OCI layout keeps a blob.
func blobPath(dir string, h v1.Hash) string { return filepath.Join(dir, "blobs", h.Algorithm, h.Hex) }

// rewriteLayout stores a changed manifest (and config) of dir's one image
// under their new digests and points index.json at them.
func rewriteLayout(t *testing.T, dir string, editManifest func(*v1.Manifest), editConfig func(*v1.ConfigFile)) {
	t.Helper()
	store := func(b []byte) v1.Descriptor {
		h, n, err := v1.SHA256(bytes.NewReader(b))
		must(t, err)
		must(t, os.WriteFile(blobPath(dir, h), b, 0o644))
		return v1.Descriptor{Digest: h, Size: n}
	}
	read := func(h v1.Hash) []byte {
		b, err := os.ReadFile(blobPath(dir, h))
		must(t, err)
		return b
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	must(t, err)
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	must(t, err)
	m, err := v1.ParseManifest(bytes.NewReader(read(idx.Manifests[0].Digest)))
	must(t, err)
	if editConfig != nil {
		cfg, err := v1.ParseConfigFile(bytes.NewReader(read(m.Config.Digest)))
		must(t, err)
		editConfig(cfg)
		b, err := json.Marshal(cfg)
		must(t, err)
		d := store(b)
		m.Config.Digest, m.Config.Size = d.Digest, d.Size
	}
	if editManifest != nil {
		editManifest(m)
	}
	b, err := json.Marshal(m)
	must(t, err)
	d := store(b)
	idx.Manifests[0].Digest, idx.Manifests[0].Size = d.Digest, d.Size
	ib, err := json.Marshal(idx)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "index.json"), ib, 0o644))
}

// TestValidateChecksLocalBlobs is issue 23.7 through the CLI: validate
// oci:DIR (and oci-archive:FILE) of a hand-corrupted layout is an error
// (exit 2, printed once) naming the blob, never a report of what it read.
func TestValidateChecksLocalBlobs(t *testing.T) {
	img := smallImage(t, "cuda>=12.2")
	m, err := img.Manifest()
	must(t, err)
	cfg, err := img.ConfigFile()
	must(t, err)
	layer := m.Layers[0].Digest
	tests := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		want    string // in stderr; "" passes
	}{
		{"intact", func(*testing.T, string) {}, ""},
		{"layer bytes do not match the digest", func(t *testing.T, dir string) {
			p := blobPath(dir, layer)
			b, err := os.ReadFile(p)
			must(t, err)
			b[4] ^= 1 // the gzip header's MTIME: it still decompresses
			must(t, os.WriteFile(p, b, 0o644))
		}, "layer 0 " + layer.String() + " of SRC does not match its digest"},
		{"config diff_ids do not match the layers", func(t *testing.T, dir string) {
			rewriteLayout(t, dir, nil, func(c *v1.ConfigFile) {
				c.RootFS.DiffIDs = []v1.Hash{{Algorithm: "sha256", Hex: strings.Repeat("d", 64)}}
			})
		}, "layer 0 (" + layer.String() + "): its content hashes to " + cfg.RootFS.DiffIDs[0].String() + ", but the config's diff_ids give sha256:dddd"},
		{"declared size 10^15", func(t *testing.T, dir string) {
			rewriteLayout(t, dir, func(m *v1.Manifest) { m.Layers[0].Size = 1_000_000_000_000_000 }, nil)
		}, "layer 0 " + layer.String() + " of SRC declares 1000000000000000 bytes, but its blob file has"},
		{"declared size -5", func(t *testing.T, dir string) {
			rewriteLayout(t, dir, func(m *v1.Manifest) { m.Layers[0].Size = -5 }, nil)
		}, "layer 0 " + layer.String() + " of SRC declares a size of -5 bytes"},
	}
	for _, tt := range tests {
		for _, transport := range []string{"oci", "oci-archive"} {
			t.Run(tt.name+"/"+transport, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "layout")
				p, err := layout.Write(dir, empty.Index)
				must(t, err)
				must(t, p.AppendImage(img))
				tt.corrupt(t, dir)
				src := "oci:" + dir
				if transport == "oci-archive" {
					file := filepath.Join(t.TempDir(), "image.oci.tar")
					must(t, tarDir(dir, file))
					src = "oci-archive:" + file
				}
				out, errOut, code := run(t, "validate", src)
				want := strings.ReplaceAll(tt.want, "SRC", src)
				switch {
				case want == "" && code != 0:
					t.Errorf("exit %d: %s%s", code, errOut, lastLines(out, 5))
				case want != "" && (code != ExitInvalid || !strings.Contains(errOut, want) || strings.Count(errOut, "gpuimg:") != 1):
					t.Errorf("exit %d, want %d with %q\nstderr %s\nstdout %s", code, ExitInvalid, want, errOut, lastLines(out, 5))
				case want != "" && (out != "" || strings.Contains(errOut, "docker login") || strings.Contains(errOut, "gpuimg-oci-")):
					t.Errorf("a report, the registry hint or the temporary directory: stdout %q stderr %q", out, errOut)
				}
			})
		}
	}
}

// TestLocalFileErrors covers the images-side errors of issue 23 "Errors a
// user can act on": local transports as copy and export sources, a bare
// file name, an archive given to the other transport, a missing export
// directory, --platform that is no platform, and --platform that a single
// image is not.
func TestLocalFileErrors(t *testing.T) {
	img := smallImage(t, "cuda>=12.2")
	want, err := img.Digest()
	must(t, err)
	dir := t.TempDir()
	ociDir := filepath.Join(dir, "layout")
	p, err := layout.Write(ociDir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img))
	tag, err := name.NewTag("example.com/ml/torch:2.3")
	must(t, err)
	must(t, tarball.WriteToFile(filepath.Join(dir, "ok.tar"), tag, img))
	must(t, tarDir(ociDir, filepath.Join(dir, "ok.oci.tar")))
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	t.Chdir(dir)

	// copy and export read the local transports.
	out, errOut, code := run(t, "images", "copy", "oci:"+ociDir, host+"/ml/torch:2.3", "-o", "json")
	if code != 0 || !strings.Contains(out, want.String()) {
		t.Errorf("copy oci:DIR: exit %d %s %s", code, out, errOut)
	}
	r, err := name.ParseReference(host + "/ml/torch:2.3")
	must(t, err)
	if d, err := remote.Head(r); err != nil || d.Digest != want {
		t.Errorf("copy oci:DIR pushed %v, %v; want %s", d, err, want)
	}
	if out, errOut, code := run(t, "images", "convert", "docker-archive:ok.tar", host+"/ml/torch:zstd", "--compression", "zstd"); code != 0 || !strings.Contains(out, "converted") {
		t.Errorf("convert docker-archive:FILE: exit %d %s %s", code, out, errOut)
	}
	for _, format := range []string{"docker-archive", "oci-archive", "oci"} {
		dest := filepath.Join(dir, "export."+format)
		if out, errOut, code := run(t, "images", "export", "oci-archive:ok.oci.tar", dest, "--format", format); code != 0 || !strings.Contains(out, "digests verified") {
			t.Errorf("export oci-archive: as %s: exit %d %s %s", format, code, out, errOut)
		}
	}

	for _, tt := range []struct {
		args []string
		want string // in stderr
		not  string // never in stderr
	}{
		{[]string{"validate", "ok.tar"}, "use docker-archive:ok.tar", "index.docker.io"},
		{[]string{"validate", "ok.oci.tar"}, "use oci-archive:ok.oci.tar", "index.docker.io"},
		{[]string{"validate", "layout"}, "use oci:layout", "index.docker.io"},
		{[]string{"validate", "oci-archive:ok.tar"}, "ok.tar is a docker-archive (docker save), not an OCI archive: use docker-archive:ok.tar", "gpuimg-oci-"},
		{[]string{"validate", "docker-archive:ok.oci.tar"}, "ok.oci.tar is an OCI archive, not a docker-archive: use oci-archive:ok.oci.tar", "docker login"},
		{[]string{"validate", "oci:nope"}, "check the path", "docker login"},
		{[]string{"images", "import", "oci:nope", "--target", "runpod", "--to", host + "/ml/x:1"}, "check the path", "docker login"},
		{[]string{"images", "copy", "oci:" + ociDir, "oci:" + filepath.Join(dir, "copy")}, "gpuimg images export", "index.docker.io"},
		{[]string{"images", "ls", "oci:" + ociDir}, "names a local image (oci:)", "index.docker.io"},
		{[]string{"images", "rm", "docker-archive:ok.tar"}, "names a local image (docker-archive:)", "index.docker.io"},
		{[]string{"images", "export", host + "/ml/torch:2.3", "/nonexistdir/ex.tar", "--format", "docker-archive"}, `directory "/nonexistdir" does not exist`, ""},
		{[]string{"images", "export", "oci:" + ociDir, filepath.Join(dir, "missing", "ex.tar")}, "does not exist", ""},
		{[]string{"validate", "oci:" + ociDir, "--platform", "foo"}, `--platform: platform "foo" is not os/arch[/variant]`, ""},
		{[]string{"images", "copy", "oci:" + ociDir, host + "/ml/x:1", "--platform", "linux"}, "is not os/arch[/variant]", ""},
		{[]string{"images", "export", "oci:" + ociDir, filepath.Join(dir, "p.tar"), "--platform", "linux/amd64/v1/x"}, "is not os/arch[/variant]", ""},
		{[]string{"validate", "oci:" + ociDir, "--platform", "linux/arm64"}, "is one linux/amd64 image, and validate reads linux/arm64", ""},
		{[]string{"validate", host + "/ml/torch:2.3", "--platform", "linux/arm64"}, "is one linux/amd64 image", "docker login"},
		{[]string{"images", "copy", "oci:" + ociDir, host + "/ml/x:arm", "--platform", "linux/arm64"}, "is one linux/amd64 image", ""},
		{[]string{"images", "export", "oci:" + ociDir, filepath.Join(dir, "arm.tar"), "--format", "docker-archive", "--platform", "linux/arm64"}, "is one linux/amd64 image", ""},
	} {
		out, errOut, code := run(t, tt.args...)
		if code != ExitInvalid || !strings.Contains(errOut, tt.want) || strings.Count(errOut, "gpuimg:") != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, want %d and one line with %q\nstderr %s\nstdout %s", tt.args, code, ExitInvalid, tt.want, errOut, lastLines(out, 3))
		}
		if tt.not != "" && strings.Contains(errOut, tt.not) {
			t.Errorf("%v: stderr has %q: %s", tt.args, tt.not, errOut)
		}
	}
	if _, err := os.Stat("/nonexistdir"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("export created /nonexistdir: %v", err)
	}
	for _, f := range []string{"missing", "p.tar", "arm.tar", "copy"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed command left %s", f)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*gpuimg-tmp*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if out, errOut, code := run(t, "validate", "oci:"+ociDir, "--platform", "linux/amd64"); code != 0 {
		t.Errorf("validate --platform linux/amd64 of an amd64 image: exit %d %s %s", code, errOut, lastLines(out, 3))
	}
}

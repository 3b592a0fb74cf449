package images_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// localImage is a linux/amd64 image of two layers, gzip unless opts say
// otherwise.
func localImage(t *testing.T, opts ...tarball.LayerOption) v1.Image {
	t.Helper()
	var layers []v1.Layer
	for _, files := range []map[string]string{{"etc/os-release": "ID=debian\n"}, {"app/serve": "#!/bin/sh\necho hi\n"}} {
		b := tarOf(t, files)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, opts...)
		must(t, err)
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	must(t, err)
	cfg, err := img.ConfigFile()
	must(t, err)
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	return img
}

func writeLayout(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img))
	return dir
}

func blobFile(dir string, h v1.Hash) string { return filepath.Join(dir, "blobs", h.Algorithm, h.Hex) }

// layoutManifest is the manifest index.json points at.
func layoutManifest(t *testing.T, dir string) *v1.Manifest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	must(t, err)
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	must(t, err)
	b, err := os.ReadFile(blobFile(dir, idx.Manifests[0].Digest))
	must(t, err)
	m, err := v1.ParseManifest(bytes.NewReader(b))
	must(t, err)
	return m
}

// writeBlob stores b in the layout and returns its descriptor.
func writeBlob(t *testing.T, dir string, b []byte) v1.Descriptor {
	t.Helper()
	h, n, err := v1.SHA256(bytes.NewReader(b))
	must(t, err)
	must(t, os.WriteFile(blobFile(dir, h), b, 0o644))
	return v1.Descriptor{Digest: h, Size: n}
}

// editManifest rewrites the manifest as edit says, stores it under its
// new digest, and points index.json at it: a well-formed layout whose
// manifest says something else.
func editManifest(t *testing.T, dir string, edit func(*v1.Manifest)) {
	t.Helper()
	m := layoutManifest(t, dir)
	edit(m)
	b, err := json.Marshal(m)
	must(t, err)
	d := writeBlob(t, dir, b)
	d.MediaType = m.MediaType
	ib, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json", Manifests: []v1.Descriptor{d}})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "index.json"), ib, 0o644))
}

// changeByte changes the byte at off of a file in place (same size).
func changeByte(t *testing.T, file string, off int) {
	t.Helper()
	b, err := os.ReadFile(file)
	must(t, err)
	b[off] ^= 0x01
	must(t, os.WriteFile(file, b, 0o644))
}

// readLayers reads every layer to its end, uncompressed (as validate
// does), then compressed (as copy does), and joins the first error of
// each pass.
func readLayers(img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var errs []error
	for _, uncompressed := range []bool{true, false} {
		for _, l := range layers {
			open := l.Compressed
			if uncompressed {
				open = l.Uncompressed
			}
			rc, err := open()
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errors.Join(errs...)
}

// TestLocalBlobsChecked corrupts OCI layouts by hand (issue 23.7): every
// blob read from oci: and oci-archive: is checked against its descriptor,
// declared sizes are checked against the files, and the error names the
// blob and the source as the user wrote it (never an oci-archive's
// temporary directory).
func TestLocalBlobsChecked(t *testing.T) {
	img := localImage(t)
	m, err := img.Manifest()
	must(t, err)
	layer0, cfgDigest := m.Layers[0].Digest, m.Config.Digest
	tests := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		open    string // in the error of opening; "" opens
		read    string // in the error of reading every layer; "" reads
	}{
		{name: "intact", corrupt: func(*testing.T, string) {}},
		{name: "layer bytes changed, same size", corrupt: func(t *testing.T, dir string) {
			changeByte(t, blobFile(dir, layer0), 4) // the gzip header's MTIME: still decompresses
		}, read: "layer 0 " + layer0.String() + " of SRC does not match its digest"},
		{name: "layer truncated", corrupt: func(t *testing.T, dir string) {
			must(t, os.Truncate(blobFile(dir, layer0), m.Layers[0].Size-10))
		}, open: "layer 0 " + layer0.String() + " of SRC declares"},
		{name: "layer blob missing", corrupt: func(t *testing.T, dir string) {
			must(t, os.Remove(blobFile(dir, layer0)))
		}, open: "layer 0 " + layer0.String() + " of SRC is missing"},
		{name: "declared size -5", corrupt: func(t *testing.T, dir string) {
			editManifest(t, dir, func(m *v1.Manifest) { m.Layers[0].Size = -5 })
		}, open: "declares a size of -5 bytes"},
		{name: "declared size 10^15", corrupt: func(t *testing.T, dir string) {
			editManifest(t, dir, func(m *v1.Manifest) { m.Layers[1].Size = 1_000_000_000_000_000 })
		}, open: "layer 1 " + m.Layers[1].Digest.String() + " of SRC declares 1000000000000000 bytes, but its blob file has"},
		{name: "config bytes changed", corrupt: func(t *testing.T, dir string) {
			changeByte(t, blobFile(dir, cfgDigest), 1)
		}, open: "config " + cfgDigest.String() + " of SRC does not match its digest"},
		{name: "manifest bytes changed", corrupt: func(t *testing.T, dir string) {
			raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
			must(t, err)
			idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
			must(t, err)
			f := blobFile(dir, idx.Manifests[0].Digest)
			b, err := os.ReadFile(f)
			must(t, err)
			must(t, os.WriteFile(f, bytes.Replace(b, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`), 1), 0o644))
		}, open: "does not match its digest"},
	}
	// A zstd decoder stops at the end of the last frame it needs; bytes
	// after it (a skippable frame here, the manifest's size updated) are
	// still read and checked.
	zimg := localImage(t, tarball.WithMediaType(types.OCILayerZStd), tarball.WithCompression(compression.ZStd))
	zm, err := zimg.Manifest()
	must(t, err)
	zlayer := zm.Layers[0].Digest
	tests = append(tests, struct {
		name    string
		corrupt func(t *testing.T, dir string)
		open    string
		read    string
	}{name: "zstd layer with trailing bytes", corrupt: func(t *testing.T, dir string) {
		f, err := os.OpenFile(blobFile(dir, zlayer), os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		_, err = f.Write([]byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 'g', 'a', 'r', 'b'})
		must(t, err)
		must(t, f.Close())
		editManifest(t, dir, func(m *v1.Manifest) { m.Layers[0].Size += 12 })
	}, read: "layer 0 " + zlayer.String() + " of SRC does not match its digest"})
	for _, tt := range tests {
		for _, transport := range []string{"oci", "oci-archive"} {
			t.Run(tt.name+"/"+transport, func(t *testing.T) {
				img := img
				if strings.HasPrefix(tt.name, "zstd") {
					img = zimg
				}
				dir := writeLayout(t, img)
				tt.corrupt(t, dir)
				src := transport + ":" + dir
				if transport == "oci-archive" {
					file := filepath.Join(t.TempDir(), "image.oci.tar")
					must(t, tarLayout(dir, file))
					src = transport + ":" + file
				}
				ref, err := images.ParseRef(src)
				must(t, err)
				open := strings.ReplaceAll(tt.open, "SRC", src)
				read := strings.ReplaceAll(tt.read, "SRC", src)
				tmp := t.TempDir()
				for name, get := range map[string]func() (v1.Image, func() error, error){
					"Open": func() (v1.Image, func() error, error) {
						o, err := images.Open(t.Context(), ref, images.WithTempDir(tmp))
						if err != nil {
							return nil, nil, err
						}
						return o.Image, o.Close, nil
					},
					"OpenSource": func() (v1.Image, func() error, error) {
						s, err := images.OpenSource(t.Context(), ref, images.WithTempDir(tmp))
						if err != nil {
							return nil, nil, err
						}
						img, err := s.Image("")
						return img, s.Close, err
					},
				} {
					got, closeFn, err := get()
					if err == nil {
						err = readLayers(got)
						must(t, closeFn())
						if open != "" {
							t.Errorf("%s opened it, want an error with %q", name, open)
							continue
						}
					} else if open == "" {
						t.Errorf("%s: %v", name, err)
						continue
					}
					want := open + read
					switch {
					case want == "" && err != nil:
						t.Errorf("%s read: %v", name, err)
					case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
						t.Errorf("%s: %v, want an error with %q", name, err, want)
					case read != "" && strings.Count(err.Error(), read) != 2:
						t.Errorf("%s: %v, want %q from the uncompressed read and from the compressed one", name, err, read)
					case err != nil && strings.Contains(err.Error(), "gpuimg-oci-"):
						t.Errorf("%s: the error names the temporary directory: %v", name, err)
					}
				}
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Errorf("temporary files left: %v", left)
				}
			})
		}
	}
}

// tarLayout archives a layout directory as an oci-archive.
func tarLayout(dir, file string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}

// editTar rewrites the entry of a tar file that pick chooses.
func editTar(t *testing.T, file string, pick func(name string) bool, edit func([]byte) []byte) {
	t.Helper()
	f, err := os.Open(file)
	must(t, err)
	var out bytes.Buffer
	tr, tw := tar.NewReader(f), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		b, err := io.ReadAll(tr)
		must(t, err)
		if pick(h.Name) {
			b = edit(b)
			h.Size = int64(len(b))
		}
		must(t, tw.WriteHeader(h))
		_, err = tw.Write(b)
		must(t, err)
	}
	f.Close()
	must(t, tw.Close())
	must(t, os.WriteFile(file, out.Bytes(), 0o644))
}

// TestLocalArchives: a docker-archive's config is checked against the
// digest it is named by; an archive given to the other transport, a bare
// file name and a --platform a single image is not are errors that say
// what to write instead.
func TestLocalArchives(t *testing.T) {
	img := localImage(t)
	dir := t.TempDir()
	docker := filepath.Join(dir, "image.docker.tar")
	tag, err := name.NewTag("example.com/ml/model:v1")
	must(t, err)
	must(t, tarball.WriteToFile(docker, tag, img))
	oci := filepath.Join(dir, "image.oci.tar")
	must(t, tarLayout(writeLayout(t, img), oci))
	badConfig := filepath.Join(dir, "bad-config.docker.tar")
	must(t, tarball.WriteToFile(badConfig, tag, img))
	cfgName, err := img.ConfigName()
	must(t, err)
	editTar(t, badConfig, func(n string) bool { return strings.HasPrefix(n, cfgName.Hex) || strings.HasSuffix(n, cfgName.Hex) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"amd64"`), []byte(`"arm64"`), 1) })
	layoutDir := writeLayout(t, img)

	for _, tt := range []struct {
		ref  string
		opts []images.Option
		want string // in the error; "" opens
	}{
		{"docker-archive:" + docker, nil, ""},
		{"docker-archive:" + docker + ":example.com/ml/model:v1", nil, ""},
		{"oci-archive:" + oci, nil, ""},
		{"docker-archive:" + badConfig, nil, "does not match its digest"},
		{"oci-archive:" + docker, nil, docker + " is a docker-archive (docker save), not an OCI archive: use docker-archive:" + docker},
		{"docker-archive:" + oci, nil, oci + " is an OCI archive, not a docker-archive: use oci-archive:" + oci},
		{"oci:" + docker, nil, "is a file, not an OCI layout directory: use docker-archive:" + docker},
		{"oci:" + layoutDir, []images.Option{images.WithPlatform(&v1.Platform{OS: "linux", Architecture: "amd64"})}, ""},
		{"oci:" + layoutDir, []images.Option{images.WithPlatform(&v1.Platform{OS: "linux", Architecture: "arm64"})}, "is one linux/amd64 image, not an index with a linux/arm64 image"},
		{"docker-archive:" + docker, []images.Option{images.WithPlatform(&v1.Platform{OS: "linux", Architecture: "arm64"})}, "is one linux/amd64 image"},
	} {
		t.Run(tt.ref, func(t *testing.T) {
			ref, err := images.ParseRef(tt.ref)
			must(t, err)
			tmp := t.TempDir()
			o, err := images.Open(t.Context(), ref, append(tt.opts, images.WithTempDir(tmp))...)
			if err == nil {
				err = readLayers(o.Image)
				must(t, o.Close())
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("open: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("open: %v, want an error with %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "gpuimg-oci-"):
				t.Errorf("the error names the temporary directory: %v", err)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}

	// A bare name that is a file or a layout here needs its transport.
	for _, tt := range []struct{ ref, want string }{
		{docker, "use docker-archive:" + docker},
		{oci, "use oci-archive:" + oci},
		{layoutDir, "use oci:" + layoutDir},
	} {
		if _, err := images.ParseRef(tt.ref); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseRef(%s): %v, want an error with %q", tt.ref, err, tt.want)
		}
	}
	if r, err := images.ParseRef("docker://example.com/ml/model:v1"); err != nil || r.Transport != images.Registry {
		t.Errorf("ParseRef(docker://…) = %v, %v", r, err)
	}
}

// TestCopyAndExportLocal: copy, export and convert take the local
// transports as sources (copy and export byte for byte); a corrupt blob stops them with nothing written;
// export does not create missing directories.
func TestCopyAndExportLocal(t *testing.T) {
	reg := newRegistry(t, nil)
	img := localImage(t)
	want, err := img.Digest()
	must(t, err)
	dir := writeLayout(t, img)

	res, err := images.Copy(t.Context(), "oci:"+dir, []string{reg + "/ml/model:v1"})
	must(t, err)
	if res.Digest != want.String() || res.Source != "oci:"+dir {
		t.Errorf("copy: %+v, want digest %s", res, want)
	}
	out := filepath.Join(t.TempDir(), "model.docker.tar")
	er, err := images.Export(t.Context(), "oci:"+dir, out, images.FormatDockerArchive)
	must(t, err)
	if er.Digest != want.String() {
		t.Errorf("export: %+v, want digest %s", er, want)
	}
	if cr, err := images.Convert(t.Context(), "oci:"+dir, reg+"/ml/model:zstd", matrix.CompressionZstd); err != nil || cr.Layers != 2 {
		t.Errorf("convert oci:DIR: %+v, %v", cr, err)
	}
	if _, err := images.Copy(t.Context(), "oci:"+dir, []string{"oci:" + t.TempDir()}); err == nil || !strings.Contains(err.Error(), "images export") {
		t.Errorf("copy to oci: %v, want the export hint", err)
	}

	m, err := img.Manifest()
	must(t, err)
	changeByte(t, blobFile(dir, m.Layers[1].Digest), 4)
	fresh := newRegistry(t, nil) // reg has the blob, so a push there would not read it
	if _, err := images.Copy(t.Context(), "oci:"+dir, []string{fresh + "/ml/model:corrupt"}); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("copy of a corrupt layout: %v", err)
	}
	r, err := name.ParseReference(fresh + "/ml/model:corrupt")
	must(t, err)
	var te *transport.Error
	if _, err := remote.Head(r); !errors.As(err, &te) || te.StatusCode != 404 {
		t.Errorf("a failed copy left a tag: %v", err)
	}
	exportDir := t.TempDir()
	for _, f := range []images.Format{images.FormatOCI, images.FormatOCIArchive, images.FormatDockerArchive} {
		dest := filepath.Join(exportDir, "corrupt."+string(f))
		if _, err := images.Export(t.Context(), "oci:"+dir, dest, f); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
			t.Errorf("export %s of a corrupt layout: %v", f, err)
		}
	}
	if left, _ := os.ReadDir(exportDir); len(left) > 0 {
		t.Errorf("a failed export left %v", left)
	}

	missing := filepath.Join(t.TempDir(), "nonexistdir")
	if _, err := images.Export(t.Context(), reg+"/ml/model:v1", filepath.Join(missing, "ex.tar"), images.FormatDockerArchive); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("export into a missing directory: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("export created %s", missing)
	}
}

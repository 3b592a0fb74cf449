package images_test

import (
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestExportAttested exports an index as BuildKit pushes it with
// compression=zstd and provenance (two platforms, two attestation
// manifests whose layer is an in-toto statement, not a tar): the OCI
// formats keep the whole index, attestations included, byte for byte;
// docker-archive takes the platform's image.
func TestExportAttested(t *testing.T) {
	reg := newRegistry(t, nil)
	tars := [][]byte{tarOf(t, map[string]string{"etc/os-release": "ID=debian\n"}), tarOf(t, map[string]string{"app/serve": "#!/bin/sh\n"})}
	idx, err := testenv.AttestedIndex(tars, []string{"amd64", "arm64"}, nil)
	must(t, err)
	want := push(t, reg+"/ml/model:oci", idx)
	im, err := idx.IndexManifest()
	must(t, err)
	amd, err := idx.Image(im.Manifests[0].Digest)
	must(t, err)

	for _, format := range []images.Format{images.FormatOCI, images.FormatOCIArchive, images.FormatDockerArchive} {
		t.Run(string(format), func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "out")
			res, err := images.Export(t.Context(), reg+"/ml/model:oci", dest, format, images.WithPlatform(&v1.Platform{OS: "linux", Architecture: "amd64"}))
			must(t, err)
			ref, err := images.ParseRef(string(format) + ":" + dest)
			must(t, err)
			s, err := images.OpenSource(t.Context(), ref, images.WithTempDir(t.TempDir()))
			must(t, err)
			defer s.Close()
			got, err := s.Image("linux/amd64")
			must(t, err)
			if g, w := digestOf(t, got), digestOf(t, amd); format != images.FormatDockerArchive && g != w {
				t.Errorf("amd64 image %s, want %s", g, w)
			}
			if g, w := diffIDs(t, got), diffIDs(t, amd); len(g) != 2 || g[0] != w[0] || g[1] != w[1] {
				t.Errorf("diff IDs %v, want %v", g, w)
			}
			if format == images.FormatDockerArchive {
				if res.Attestations != 0 {
					t.Errorf("docker-archive result %+v", res)
				}
				return
			}
			if res.Digest != want || s.Digest != want || res.Attestations != 2 {
				t.Errorf("result %+v, read back %s, want digest %s and 2 attestations", res, s.Digest, want)
			}
		})
	}
}

// TestExportVerifiesLayout: a layout whose blob does not match its
// digest is refused, whatever its media type.
func TestExportVerifiesLayout(t *testing.T) {
	tars := [][]byte{tarOf(t, map[string]string{"etc/os-release": "ID=debian\n"})}
	idx, err := testenv.AttestedIndex(tars, []string{"amd64"}, nil)
	must(t, err)
	im, err := idx.IndexManifest()
	must(t, err)
	att, err := idx.Image(im.Manifests[1].Digest) // the attestation manifest
	must(t, err)
	am, err := att.Manifest()
	must(t, err)
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendIndex(idx))
	want := digestOf(t, idx)
	d, err := v1.NewHash(want)
	must(t, err)
	if n, err := images.VerifyLayout(dir, d); err != nil || n != 1 {
		t.Fatalf("intact layout: %d attestations, %v", n, err)
	}
	stmt := filepath.Join(dir, "blobs", "sha256", am.Layers[0].Digest.Hex)
	b, err := os.ReadFile(stmt)
	must(t, err)
	b[len(b)-2] ^= 1
	must(t, os.WriteFile(stmt, b, 0o644))
	if _, err := images.VerifyLayout(dir, d); err == nil {
		t.Fatal("a changed in-toto statement verifies")
	}
}

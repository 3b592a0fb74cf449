package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// tarOf is a layer tar holding the files given (path → content).
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		must(t, tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[p]))
		must(t, err)
	}
	must(t, tw.Close())
	return buf.Bytes()
}

// dockerTarget takes one linux/amd64 Docker schema 2 image with gzip
// layers: SageMaker's shape.
var dockerTarget = matrix.Target{Name: "test/docker", Platforms: []string{"linux/amd64"},
	MediaTypes: []matrix.ManifestFormat{matrix.FormatDocker}, Compressions: []matrix.Compression{matrix.CompressionGzip}}

// catalog lists the repositories a registry holds.
func catalog(t *testing.T, reg string) []string {
	t.Helper()
	r, err := name.NewRegistry(reg, name.Insecure)
	must(t, err)
	repos, err := remote.Catalog(t.Context(), r)
	must(t, err)
	return repos
}

// TestImportConverts imports a BuildKit-style OCI index (zstd layers,
// provenance attestations) for a Docker-schema2/gzip target on the
// in-process registry: every change recorded, the result what the target
// takes, the layers' content unchanged, the source digest in a label.
func TestImportConverts(t *testing.T) {
	reg := newRegistry(t, nil)
	tars := [][]byte{tarOf(t, map[string]string{"etc/os-release": "ID=debian\n"}), tarOf(t, map[string]string{"app/serve": "#!/bin/sh\necho hi\n"})}
	idx, err := testenv.AttestedIndex(tars, []string{"amd64", "arm64"}, func(c *v1.ConfigFile) { c.Config.Entrypoint = []string{"/app/serve"} })
	must(t, err)
	srcDigest := push(t, reg+"/ml/model:oci", idx)
	im, err := idx.IndexManifest()
	must(t, err)
	srcAMD, err := idx.Image(im.Manifests[0].Digest)
	must(t, err)

	dry, err := images.Import(t.Context(), reg+"/ml/model:oci", dockerTarget, reg+"/sm/model:v1", nil, images.WithDryRun(true))
	must(t, err)
	if !dry.DryRun || !dry.DigestChanged || dry.Digest != "" || len(dry.Changes) != 3 {
		t.Errorf("dry run %+v", dry)
	}
	if got := catalog(t, reg); slices.Contains(got, "sm/model") {
		t.Fatalf("the dry run pushed: %v", got)
	}

	res, err := images.Import(t.Context(), reg+"/ml/model:oci", dockerTarget, reg+"/sm/model:v1", nil, images.WithTempDir(t.TempDir()))
	must(t, err)
	var whats []string
	for _, c := range res.Changes {
		whats = append(whats, c.What)
	}
	if strings.Join(whats, ",") != "platform,media-type,compression" {
		t.Errorf("changes %+v", res.Changes)
	}
	if res.SourceDigest != srcDigest || !res.DigestChanged || res.Digest == srcDigest || res.Digest != headDigest(t, reg+"/sm/model:v1") {
		t.Errorf("digests: source %s, result %+v", srcDigest, res)
	}
	if res.Ref != reg+"/sm/model@"+res.Digest {
		t.Errorf("reference to paste %q", res.Ref)
	}
	r, _ := name.ParseReference(reg+"/sm/model:v1", name.Insecure)
	out, err := remote.Image(r)
	must(t, err)
	m, err := out.Manifest()
	must(t, err)
	if m.MediaType != types.DockerManifestSchema2 || m.Config.MediaType != types.DockerConfigJSON {
		t.Errorf("manifest %s, config %s", m.MediaType, m.Config.MediaType)
	}
	for _, l := range m.Layers {
		if l.MediaType != types.DockerLayer {
			t.Errorf("layer %s", l.MediaType)
		}
	}
	if got, want := diffIDs(t, out), diffIDs(t, srcAMD); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("diff IDs %v, source %v", got, want)
	}
	cfg, err := out.ConfigFile()
	must(t, err)
	if cfg.Config.Labels[images.SourceDigestLabel] != srcDigest || cfg.Architecture != "amd64" || cfg.Config.Entrypoint[0] != "/app/serve" {
		t.Errorf("config: labels %v, arch %s, entrypoint %v", cfg.Config.Labels, cfg.Architecture, cfg.Config.Entrypoint)
	}

	// The same index from an OCI layout converts the same way, to the
	// same image.
	dir := t.TempDir()
	lp, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, lp.AppendIndex(idx))
	fromFile, err := images.Import(t.Context(), "oci:"+dir, dockerTarget, reg+"/sm/model:file", nil, images.WithTempDir(t.TempDir()))
	must(t, err)
	if fromFile.SourceDigest != srcDigest || fromFile.Digest != res.Digest {
		t.Errorf("from the OCI layout: %+v, want digest %s", fromFile, res.Digest)
	}

	// Importing the converted image again changes nothing: byte for byte.
	again, err := images.Import(t.Context(), reg+"/sm/model:v1", dockerTarget, reg+"/sm/model:v2", nil)
	must(t, err)
	if len(again.Changes) != 0 || again.DigestChanged || again.Digest != res.Digest || headDigest(t, reg+"/sm/model:v2") != res.Digest {
		t.Errorf("no-change import %+v", again)
	}

	// A target that takes an OCI index but no attestations keeps both
	// platforms and drops only the attestation manifests.
	ociIndex := matrix.Target{Name: "test/oci-index", Platforms: []string{"linux/amd64", "linux/arm64"}, MediaTypes: []matrix.ManifestFormat{matrix.FormatOCI}, Index: true}
	kept, err := images.Import(t.Context(), reg+"/ml/model:oci", ociIndex, reg+"/k8s/model:v1", nil, images.WithTempDir(t.TempDir()))
	must(t, err)
	ri, _ := name.ParseReference(reg+"/k8s/model:v1", name.Insecure)
	oi, err := remote.Index(ri)
	must(t, err)
	om, err := oi.IndexManifest()
	must(t, err)
	if len(kept.Changes) != 1 || kept.Changes[0].What != "attestations" || len(om.Manifests) != 2 || om.MediaType != types.OCIImageIndex {
		t.Errorf("kept index: changes %+v, %d manifests (%s)", kept.Changes, len(om.Manifests), om.MediaType)
	}
	for _, d := range om.Manifests {
		if images.IsAttestation(d) || d.Platform == nil || d.Platform.OS != "linux" {
			t.Errorf("index entry %+v", d)
		}
	}
}

// TestImportRefuses: what no conversion fixes is refused with every
// reason, and nothing reaches the registry.
func TestImportRefuses(t *testing.T) {
	reg := newRegistry(t, nil)
	tars := [][]byte{tarOf(t, map[string]string{"etc/os-release": "ID=debian\n", "big": strings.Repeat("x", 64<<10)})}
	arm, err := testenv.AttestedIndex(tars, []string{"arm64"}, nil)
	must(t, err)
	push(t, reg+"/ml/model:arm64", arm)
	small := dockerTarget
	small.Name, small.MaxSize, small.SizeOf = "test/small", 100, "compressed"
	amd, err := testenv.AttestedIndex(tars, []string{"amd64"}, nil)
	must(t, err)
	push(t, reg+"/ml/model:amd64", amd)
	for _, tt := range []struct {
		name, src string
		target    matrix.Target
		reasons   []string
	}{
		{"arm64 only", "ml/model:arm64", dockerTarget, []string{"target:test/docker:platform"}},
		{"arm64 only and over the size", "ml/model:arm64", small, []string{"target:test/small:platform", "target:test/small:size"}},
		{"over the size once gzipped", "ml/model:amd64", small, []string{"target:test/small:size"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := images.Import(t.Context(), reg+"/"+tt.src, tt.target, reg+"/sm/refused:v1", nil, images.WithTempDir(t.TempDir()))
			var re *images.RefusedError
			if !errors.As(err, &re) || !errors.Is(err, images.ErrRefused) {
				t.Fatalf("err %v, want a refusal", err)
			}
			var got []string
			for _, r := range re.Reasons {
				got = append(got, r.Name)
			}
			if !slices.Equal(got, tt.reasons) || res == nil || res.Verdict != matrix.Fail {
				t.Errorf("reasons %v, want %v (%v)", got, tt.reasons, err)
			}
			if repos := catalog(t, reg); slices.Contains(repos, "sm/refused") {
				t.Errorf("a refused import pushed: %v", repos)
			}
		})
	}
}

func TestLoginHint(t *testing.T) {
	for host, want := range map[string]string{
		"123456789012.dkr.ecr.us-east-1.amazonaws.com": "aws ecr get-login-password --region us-east-1 | docker login --username AWS --password-stdin 123456789012.dkr.ecr.us-east-1.amazonaws.com",
		"europe-west4-docker.pkg.dev":                  "gcloud auth configure-docker europe-west4-docker.pkg.dev",
		"myreg.azurecr.io":                             "az acr login --name myreg",
		"registry.example.com:5000":                    "docker login registry.example.com:5000",
	} {
		if got := images.LoginHint(host); !strings.Contains(got, want) {
			t.Errorf("LoginHint(%s) = %s", host, got)
		}
	}
}

// readAll is an ImportCheck that reads every layer of the image to its
// end, as validate.Inspect does.
func readAll(_ context.Context, img v1.Image, _ matrix.Packaging) ([]matrix.Finding, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// TestImportReadsTheSourceOnce: validation and the push (or the
// recompression) read each layer blob of a registry source once, whether
// the image is pushed as it is or converted; the blobs of the other
// platform, which validation does not read, are read once by the push.
func TestImportReadsTheSourceOnce(t *testing.T) {
	rec := &recorder{}
	src := newRegistry(t, rec.wrap)
	dst := newRegistry(t, nil)
	tars := [][]byte{tarOf(t, map[string]string{"etc/os-release": "ID=debian\n"}), tarOf(t, map[string]string{"app/serve": strings.Repeat("x", 4096)})}
	idx, err := testenv.AttestedIndex(tars, []string{"amd64", "arm64"}, nil)
	must(t, err)
	push(t, src+"/ml/model:oci", idx)
	ociIndex := matrix.Target{Name: "test/oci-any", Platforms: []string{"linux/amd64", "linux/arm64"}, Index: true, Attestations: true}
	for _, tt := range []struct {
		name   string
		target matrix.Target
	}{
		{"pushed as it is", ociIndex},
		{"converted", dockerTarget},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(rec.requests())
			_, err := images.Import(t.Context(), src+"/ml/model:oci", tt.target, dst+"/sm/"+strings.ReplaceAll(tt.name, " ", "-")+":v1", readAll, images.WithTempDir(t.TempDir()))
			must(t, err)
			gets := map[string]int{}
			for _, r := range rec.requests()[before:] {
				if r.Method == http.MethodGet && strings.Contains(r.Path, "/blobs/") {
					gets[r.Path[strings.LastIndex(r.Path, "/")+1:]]++
				}
			}
			im, err := idx.IndexManifest()
			must(t, err)
			img, err := idx.Image(im.Manifests[0].Digest) // linux/amd64, which validation reads
			must(t, err)
			m, err := img.Manifest()
			must(t, err)
			for _, l := range m.Layers {
				if gets[l.Digest.String()] != 1 {
					t.Errorf("layer %s read %d times, want once (%v)", l.Digest, gets[l.Digest.String()], gets)
				}
			}
			for d, n := range gets {
				if n > 1 && d != m.Config.Digest.String() {
					t.Errorf("blob %s read %d times", d, n)
				}
			}
		})
	}
}

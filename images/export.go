package images

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Format is a file format Export writes.
type Format string

// Formats Export writes.
const (
	FormatOCI           Format = "oci"            // an OCI image layout directory
	FormatOCIArchive    Format = "oci-archive"    // that layout as a tar file
	FormatDockerArchive Format = "docker-archive" // `docker save` format, for docker load and cloud image import
)

// ExportResult describes an export.
type ExportResult struct {
	Source string `json:"source"`
	Format Format `json:"format"`
	Path   string `json:"path"`
	// Digest is the source manifest (or index) digest, verified in the
	// written copy. For docker-archive, which has no manifest digest, the
	// config digest is checked instead and Digest is the image's.
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	// Attestations counts the attestation manifests (BuildKit's
	// provenance and SBOM, platform unknown/unknown) an OCI export kept
	// in the index; docker-archive holds one image and none.
	Attestations int `json:"attestations"`
}

// Export writes a registry image (a whole index for the OCI formats) to
// a file or directory, then reads the result back and checks every blob
// against its digest. The result appears only when complete: it is written
// under a temporary name and renamed. WithPlatform picks the image of an
// index for docker-archive (default linux/amd64).
func Export(ctx context.Context, src, dest string, format Format, opts ...Option) (*ExportResult, error) {
	r, ref, err := prepare(src, opts)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dest); err == nil {
		return nil, fmt.Errorf("export %s: %s exists; remove it or choose another path", src, dest)
	}
	desc, err := remote.Get(ref, r.remote(ctx)...)
	if err != nil {
		return nil, explain("read", ref, err)
	}
	res := &ExportResult{Source: ref.String(), Format: format, Path: dest, Digest: desc.Digest.String()}
	tmp := filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".gpuimg-tmp")
	_ = os.RemoveAll(tmp)
	defer os.RemoveAll(tmp)
	switch format {
	case FormatOCI, FormatOCIArchive:
		dir := tmp
		if format == FormatOCIArchive {
			dir = tmp + ".d"
			defer os.RemoveAll(dir)
		}
		if err := writeLayout(dir, ref, desc); err != nil {
			return nil, fmt.Errorf("export %s to %s: %w", src, dest, err)
		}
		if res.Attestations, err = verifyLayout(dir, desc.Digest); err != nil {
			return nil, fmt.Errorf("export %s: the layout does not verify: %w", dest, err)
		}
		if format == FormatOCIArchive {
			if err := tarDir(dir, tmp); err != nil {
				return nil, fmt.Errorf("archive %s: %w", dest, err)
			}
		}
	case FormatDockerArchive:
		img, err := desc.Image()
		if err != nil {
			return nil, explain("read", ref, err)
		}
		d, _ := img.Digest()
		res.Digest = d.String()
		tag, ok := ref.(name.Tag)
		if !ok {
			tag = ref.Context().Tag("latest")
		}
		if err := tarball.WriteToFile(tmp, tag, img); err != nil {
			return nil, fmt.Errorf("write %s: %w", dest, err)
		}
		back, err := tarball.ImageFromPath(tmp, &tag)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", dest, err)
		}
		if err := verifyArchive(back, img); err != nil {
			return nil, fmt.Errorf("export %s: the archive does not verify: %w", dest, err)
		}
	default:
		return nil, fmt.Errorf("unknown format %q: use oci, oci-archive or docker-archive", format)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return nil, err
	}
	res.Size = duSize(dest)
	return res, nil
}

func writeLayout(dir string, ref name.Reference, desc *remote.Descriptor) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ann := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.Identifier()})
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return err
		}
		return p.AppendIndex(idx, ann)
	}
	img, err := desc.Image()
	if err != nil {
		return err
	}
	return p.AppendImage(img, ann)
}

// verifyLayout reopens a layout and checks that index.json points at want
// alone, then every blob below it (child manifests, configs, layers,
// attestation manifests and their in-toto statements) against its
// descriptor's digest and size. It reads bytes, not media types:
// go-containerregistry's validate.Image gunzips every layer and counts
// a config's diff IDs against the layers it knows, so it refuses zstd
// layers ("gzip: invalid header") and BuildKit's attestation manifests.
// It returns the number of attestation manifests the layout holds.
func verifyLayout(dir string, want v1.Hash) (attestations int, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return 0, err
	}
	top, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return 0, fmt.Errorf("read index.json: %w", err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Digest != want {
		return 0, fmt.Errorf("the written layout does not point at %s", want)
	}
	v := layoutVerifier{dir: dir, seen: map[v1.Hash]bool{}}
	err = v.verify(top.Manifests[0])
	return v.attestations, err
}

type layoutVerifier struct {
	dir          string
	seen         map[v1.Hash]bool
	attestations int
}

// verify checks the blob d names and, for a manifest or an index, the
// blobs it names.
func (v *layoutVerifier) verify(d v1.Descriptor) error {
	if v.seen[d.Digest] {
		return nil
	}
	v.seen[d.Digest] = true
	path := filepath.Join(v.dir, "blobs", d.Digest.Algorithm, d.Digest.Hex)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("blob %s (%s): %w", d.Digest, d.MediaType, err)
	}
	var buf bytes.Buffer
	var r io.Reader = f
	if d.MediaType.IsIndex() || d.MediaType.IsImage() {
		r = io.TeeReader(f, &buf) // small: parsed below
	}
	got, n, err := v1.SHA256(r)
	f.Close()
	if err != nil {
		return fmt.Errorf("read blob %s: %w", d.Digest, err)
	}
	if got != d.Digest || n != d.Size {
		return fmt.Errorf("blob %s (%s) does not verify: %d bytes with digest %s, want %d bytes", d.Digest, d.MediaType, n, got, d.Size)
	}
	switch {
	case d.MediaType.IsIndex():
		m, err := v1.ParseIndexManifest(&buf)
		if err != nil {
			return fmt.Errorf("parse index %s: %w", d.Digest, err)
		}
		for _, c := range m.Manifests {
			if IsAttestation(c) {
				v.attestations++
			}
			if err := v.verify(c); err != nil {
				return err
			}
		}
	case d.MediaType.IsImage():
		m, err := v1.ParseManifest(&buf)
		if err != nil {
			return fmt.Errorf("parse manifest %s: %w", d.Digest, err)
		}
		for _, c := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			if err := v.verify(c); err != nil {
				return fmt.Errorf("manifest %s: %w", d.Digest, err)
			}
		}
	}
	return nil
}

// verifyArchive checks a docker-archive read back against the image it
// was written from: the config's digest, and each layer's uncompressed
// content against the config's diff ID, whatever the layer's compression
// (gzip, zstd or none, detected from its bytes). The archive's
// manifest.json has no media types, so go-containerregistry reads any
// compressed layer as gzip and its validate.Image refuses zstd ones.
func verifyArchive(back, img v1.Image) error {
	want, err := img.ConfigFile()
	if err != nil {
		return err
	}
	wantName, err := img.ConfigName()
	if err != nil {
		return err
	}
	got, err := back.ConfigName()
	if err != nil {
		return err
	}
	if got != wantName {
		return fmt.Errorf("the config is %s, the image's %s", got, wantName)
	}
	layers, err := back.Layers()
	if err != nil {
		return err
	}
	if len(layers) != len(want.RootFS.DiffIDs) {
		return fmt.Errorf("%d layers, the image has %d", len(layers), len(want.RootFS.DiffIDs))
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
		d, _, err := v1.SHA256(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("read layer %d: %w", i, err)
		}
		if d != want.RootFS.DiffIDs[i] {
			return fmt.Errorf("layer %d has diff ID %s, the image's is %s", i, d, want.RootFS.DiffIDs[i])
		}
	}
	return nil
}

func duSize(p string) int64 {
	var n int64
	_ = filepath.Walk(p, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

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

	"github.com/gpuimg/gpuimg/internal/bound"
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

// Export writes an image (a whole index for the OCI formats) to a file or
// directory, then reads the result back and checks every blob against its
// digest. The source is a registry reference or any local transport
// (oci:, oci-archive:, docker-archive:, docker-daemon:), whose blobs are
// checked as they are read. The result appears only when complete: it is
// written under a temporary name in dest's directory, which must exist
// (as for docker save -o), and renamed. The layer check (WithLayerCheck)
// judges that written copy before the rename, so each blob of a registry
// is fetched once; a refusal removes it. WithPlatform picks the image of an
// index for docker-archive (default linux/amd64).
func Export(ctx context.Context, src, dest string, format Format, opts ...Option) (*ExportResult, error) {
	switch format {
	case FormatOCI, FormatOCIArchive, FormatDockerArchive:
	default:
		return nil, fmt.Errorf("unknown format %q: use oci, oci-archive or docker-archive", format)
	}
	opt, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(dest); err == nil {
		return nil, fmt.Errorf("export %s: %s exists; remove it or choose another path", src, dest)
	}
	if parent := filepath.Dir(dest); parent != "" {
		if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("export %s: invalid output path: directory %q does not exist; create it first", src, parent)
		}
	}
	es, err := openExportSource(ctx, opt, src, opts)
	if err != nil {
		return nil, err
	}
	defer func() { _ = es.close() }() // removes what opening an archive unpacked; nothing to report
	res := &ExportResult{Source: es.name, Format: format, Path: dest, Digest: es.digest}
	img := es.image
	if format == FormatDockerArchive {
		if img, err = es.platformImage(opt); err != nil {
			return nil, err
		}
	}
	tmp := filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".gpuimg-tmp")
	_ = os.RemoveAll(tmp)
	defer os.RemoveAll(tmp)
	switch format {
	case FormatOCI, FormatOCIArchive:
		dir := tmp
		if format == FormatOCIArchive {
			dir = tmp + ".d"
			_ = os.RemoveAll(dir)
			defer os.RemoveAll(dir)
		}
		idx, img, err := es.counted(opt)
		if err != nil {
			return nil, err
		}
		if err := writeLayout(dir, es.refName, idx, img); err != nil {
			return nil, fmt.Errorf("export %s to %s: %w", src, dest, err)
		}
		want, err := v1.NewHash(es.digest)
		if err != nil {
			return nil, err
		}
		if res.Attestations, err = verifyLayout(dir, want); err != nil {
			return nil, fmt.Errorf("export %s: the layout does not verify: %w", dest, err)
		}
		if err := checkWrittenLayout(ctx, opt, "export "+es.name, dir, want, es.index != nil); err != nil {
			return nil, err
		}
		if format == FormatOCIArchive {
			if err := tarDir(dir, tmp); err != nil {
				return nil, fmt.Errorf("archive %s: %w", dest, err)
			}
		}
	case FormatDockerArchive:
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", es.name, err)
		}
		res.Digest = d.String()
		var ref name.Reference
		if es.tag != nil {
			ref = *es.tag
		} else {
			// No name to give it: docker load keeps it untagged.
			if ref, err = name.NewDigest("gpuimg.invalid/export@" + d.String()); err != nil {
				return nil, err
			}
		}
		if es.index != nil || es.r.Transport == Registry { // not counted by OpenSource
			img = withReadProgress(img, opt.progress)
		}
		if err := tarball.MultiRefWriteToFile(tmp, map[name.Reference]v1.Image{ref: img}); err != nil {
			return nil, fmt.Errorf("write %s: %w", dest, err)
		}
		back, err := tarball.ImageFromPath(tmp, es.tag)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", dest, err)
		}
		// Judged before verifyArchive expands every layer: the check
		// bounds a bomb.
		if err := opt.checkLayers(ctx, "export "+es.name, nil, back, v1.Hash{}); err != nil {
			return nil, err
		}
		if err := verifyArchive(back, img); err != nil {
			return nil, fmt.Errorf("export %s: the archive does not verify: %w", dest, err)
		}
	}
	if err := os.Rename(tmp, dest); err != nil {
		return nil, err
	}
	res.Size = duSize(dest)
	return res, nil
}

// exportSource is what Export writes: an index or one image, with the name
// the written copy carries.
type exportSource struct {
	name    string
	r       Ref
	digest  string
	index   v1.ImageIndex
	image   v1.Image
	refName string    // org.opencontainers.image.ref.name in an OCI layout
	tag     *name.Tag // RepoTags of a docker-archive; nil: none
	close   func() error
}

func openExportSource(ctx context.Context, opt *options, src string, opts []Option) (*exportSource, error) {
	r, err := ParseRef(src)
	if err != nil {
		return nil, err
	}
	es := &exportSource{name: r.String(), r: r, close: func() error { return nil }}
	if r.Transport != Registry {
		s, err := OpenSource(ctx, r, opts...)
		if err != nil {
			return nil, err
		}
		es.close, es.digest, es.index, es.image = s.Close, s.Digest, s.index, s.image
		es.refName = r.Select
		if r.Transport == DockerDaemon {
			es.refName = r.Name
		}
		if es.refName == "" {
			es.refName = "latest"
		}
		if t, err := name.NewTag(r.Select); err == nil && r.Select != "" {
			es.tag = &t
		} else if t, err := name.NewTag(r.Name); err == nil && r.Transport == DockerDaemon {
			es.tag = &t
		}
		return es, nil
	}
	ref, err := opt.parse(r.Name)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(ref, opt.remote(ctx)...)
	if err != nil {
		return nil, explain("read", ref, err)
	}
	es.name, es.digest, es.refName = ref.String(), desc.Digest.String(), ref.Identifier()
	tag, ok := ref.(name.Tag)
	if !ok {
		tag = ref.Context().Tag("latest")
	}
	es.tag = &tag
	if desc.MediaType.IsIndex() {
		es.index, err = desc.ImageIndex()
	} else {
		es.image, err = desc.Image()
	}
	if err != nil {
		return nil, explain("read", ref, err)
	}
	return es, nil
}

// counted is what an OCI export writes, its layer reads counted in
// opt's progress: the whole index (every platform's layers), or the one
// image (a local source's is counted by OpenSource already).
func (es *exportSource) counted(opt *options) (v1.ImageIndex, v1.Image, error) {
	switch {
	case es.index != nil:
		idx, err := withIndexReadProgress(es.index, opt.progress)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", es.name, err)
		}
		return idx, nil, nil
	case es.r.Transport == Registry:
		return nil, withReadProgress(es.image, opt.progress), nil
	}
	return nil, es.image, nil
}

// platformImage is the image docker-archive writes: an index's image for
// WithPlatform's platform (default linux/amd64), or the one image if it is
// that platform (or none was asked for).
func (es *exportSource) platformImage(opt *options) (v1.Image, error) {
	if es.index == nil {
		return es.image, checkPlatform(es.r, es.image, opt.platform)
	}
	pl := opt.platformOr(linuxAMD64)
	return platformImage(es.r, es.index, &pl)
}

func writeLayout(dir, refName string, idx v1.ImageIndex, img v1.Image) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ann := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": refName})
	if idx != nil {
		return p.AppendIndex(idx, ann)
	}
	return p.AppendImage(img, ann)
}

// checkWrittenLayout runs the layer check (WithLayerCheck) on what a
// layout written under a temporary name holds: the image or index want
// (index says which). The check reads the written copy, so a registry's
// layers are fetched once, for the output; a refusal returns before the
// rename, and Export removes the temporary copy: nothing is written.
func checkWrittenLayout(ctx context.Context, opt *options, what, dir string, want v1.Hash, index bool) error {
	if opt.layerCheck == nil {
		return nil
	}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return fmt.Errorf("reopen the written layout: %w", err)
	}
	if index {
		idx, err := root.ImageIndex(want)
		if err != nil {
			return fmt.Errorf("reopen the written layout: %w", err)
		}
		return opt.checkLayers(ctx, what, idx, nil, v1.Hash{})
	}
	img, err := root.Image(want)
	if err != nil {
		return fmt.Errorf("reopen the written layout: %w", err)
	}
	return opt.checkLayers(ctx, what, nil, img, v1.Hash{})
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
	raw, err := bound.ReadFile(filepath.Join(dir, "index.json"), "", bound.MaxManifest)
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

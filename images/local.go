package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Images read from files (oci:, oci-archive:, docker-archive:) are checked
// as they are read, as docker and containerd check what they load: a
// registry checks a blob against its digest when it takes it and
// go-containerregistry's remote layers check again on EOF, but a file can
// hold anything. Manifests and configs (small) are checked against their
// descriptor's digest and size when the image is opened, every declared
// layer size against its blob file (never negative, never other than the
// file's), and each layer's bytes against its digest and size as they
// stream (verifier). The layers' uncompressed content against the
// config's diff IDs is validate.Walk's check, made while it reads them.

// openLocal opens what a local reference names: an index (the layout's
// entry, when that is an index) or one image. cleanup removes an unpacked
// oci-archive.
func openLocal(ctx context.Context, r Ref, opt *options) (idx v1.ImageIndex, img v1.Image, cleanup func() error, err error) {
	switch r.Transport {
	case OCI:
		if fi, err := os.Stat(r.Name); err == nil && !fi.IsDir() {
			return nil, nil, nil, fmt.Errorf("%s: %s is a file, not an OCI layout directory: %s", r, r.Name, useFor(r.Name))
		}
		idx, img, err = openLayoutEntry(r.Name, r.Select, r.String())
		return idx, img, nil, err
	case OCIArchive:
		if kinds, err := sniff(r.Name); err == nil && slices.Equal(kinds, []Transport{DockerArchive}) {
			// Said before unpacking gigabytes.
			return nil, nil, nil, fmt.Errorf("%s is a docker-archive (docker save), not an OCI archive: use docker-archive:%s", r.Name, r.Name)
		}
		dir, err := os.MkdirTemp(opt.tempDir, "gpuimg-oci-")
		if err != nil {
			return nil, nil, nil, err
		}
		cleanup = func() error { return os.RemoveAll(dir) }
		if err := untar(ctx, r.Name, dir); err != nil {
			return nil, nil, nil, errors.Join(fmt.Errorf("unpack %s: %w", r, err), cleanup())
		}
		if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
			err = fmt.Errorf("%s holds no index.json, so it is not an OCI archive", r.Name)
			if _, derr := os.Stat(filepath.Join(dir, "manifest.json")); derr == nil {
				err = fmt.Errorf("%s is a docker-archive (docker save), not an OCI archive: use docker-archive:%s", r.Name, r.Name)
			}
			return nil, nil, nil, errors.Join(err, cleanup())
		}
		if idx, img, err = openLayoutEntry(dir, r.Select, r.String()); err != nil {
			return nil, nil, nil, errors.Join(err, cleanup())
		}
		return idx, img, cleanup, nil
	case DockerArchive:
		img, err := openDockerArchive(ctx, r)
		return nil, img, nil, err
	}
	return nil, nil, nil, fmt.Errorf("%s is not a local transport", r.Transport)
}

// openDockerArchive reads a docker save archive. Its manifest.json declares
// no digests or sizes (go-containerregistry computes them from the bytes),
// but names the config by its digest, which is checked here; the layers'
// content is checked against the config's diff IDs as it streams.
func openDockerArchive(ctx context.Context, r Ref) (v1.Image, error) {
	var tag *name.Tag
	if r.Select != "" {
		t, err := name.NewTag(r.Select)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", r, err)
		}
		tag = &t
	}
	if fi, err := os.Stat(r.Name); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: %s is a directory, not a docker save archive: %s", r, r.Name, useFor(r.Name))
	}
	if err := checkDockerArchive(ctx, r.Name); err != nil {
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	img, err := tarball.ImageFromPath(r.Name, tag)
	if err != nil {
		if kinds, serr := sniff(r.Name); serr == nil && !slices.Contains(kinds, DockerArchive) && slices.Contains(kinds, OCIArchive) {
			return nil, fmt.Errorf("%s is an OCI archive, not a docker-archive: use oci-archive:%s", r.Name, r.Name)
		}
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(r.Name) })
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r, err)
	}
	for _, d := range m {
		if tag != nil && !slices.ContainsFunc(d.RepoTags, func(s string) bool {
			t, err := name.NewTag(s)
			return err == nil && t.Name() == tag.Name()
		}) {
			continue
		}
		// docker save names it HEX.json or blobs/sha256/HEX,
		// go-containerregistry sha256:HEX.
		want := strings.TrimPrefix(strings.TrimSuffix(path.Base(d.Config), ".json"), "sha256:")
		if _, err := hex.DecodeString(want); err != nil || len(want) != 64 {
			break // a config not named by its digest
		}
		got, err := img.ConfigName()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r, err)
		}
		if got.Hex != want {
			return nil, fmt.Errorf("%s: the config %s does not match its digest (its bytes hash to %s): the archive is corrupt; save or export it again", r, d.Config, got)
		}
		break
	}
	return img, nil
}

// localLayout is an OCI image layout directory; where names it in errors
// as the user wrote it (an oci-archive, not its temporary directory).
type localLayout struct{ dir, where string }

func (l localLayout) blobPath(h v1.Hash) string {
	return filepath.Join(l.dir, "blobs", h.Algorithm, h.Hex)
}

// read reads a small blob (a manifest, an index, a config) and checks it
// against its descriptor.
func (l localLayout) read(d v1.Descriptor, what string) ([]byte, error) {
	if err := l.checkSize(d, what); err != nil {
		return nil, err
	}
	if d.Size > bound.MaxManifest {
		return nil, fmt.Errorf("%s %s of %s: %w: it declares %d bytes, over the limit of %d MiB for manifests, indexes and configs (containers/image's too; the limit is fixed)",
			what, d.Digest, l.where, bound.ErrBound, d.Size, bound.MaxManifest>>20)
	}
	b, err := bound.ReadFile(l.blobPath(d.Digest), fmt.Sprintf("%s %s of %s,", what, d.Digest, l.where), bound.MaxManifest)
	if err != nil {
		return nil, err
	}
	if got := sha256.Sum256(b); d.Digest.Algorithm != "sha256" || hex.EncodeToString(got[:]) != d.Digest.Hex {
		return nil, fmt.Errorf("%s %s of %s does not match its digest (its %d bytes hash to sha256:%x): the file is corrupt; export or pull the image again", what, d.Digest, l.where, len(b), got)
	}
	return b, nil
}

// checkSize refuses a declared size that cannot be the blob's: negative,
// or other than its file's. A missing file is an error too, except for a
// non-distributable (foreign) layer, which a layout need not hold.
func (l localLayout) checkSize(d v1.Descriptor, what string) error {
	if d.Size < 0 {
		return fmt.Errorf("%s %s of %s declares a size of %d bytes, which no blob has: the manifest is corrupt", what, d.Digest, l.where, d.Size)
	}
	if d.Digest.Algorithm != "sha256" {
		return fmt.Errorf("%s %s of %s: unsupported digest algorithm %q", what, d.Digest, l.where, d.Digest.Algorithm)
	}
	fi, err := os.Stat(l.blobPath(d.Digest))
	switch {
	case errors.Is(err, os.ErrNotExist) && !d.MediaType.IsDistributable():
		return nil
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s %s of %s is missing (no blobs/%s/%s): the layout is incomplete; export or pull the image again", what, d.Digest, l.where, d.Digest.Algorithm, d.Digest.Hex)
	case err != nil:
		return fmt.Errorf("%s %s of %s: %w", what, d.Digest, l.where, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s %s of %s: blobs/%s/%s is %w; a layout holds regular files only", what, d.Digest, l.where, d.Digest.Algorithm, d.Digest.Hex, bound.ErrNotRegular)
	case fi.Size() != d.Size:
		return fmt.Errorf("%s %s of %s declares %d bytes, but its blob file has %d: the manifest or the file is corrupt; export or pull the image again", what, d.Digest, l.where, d.Size, fi.Size())
	}
	return nil
}

// openLayoutEntry opens the entry of dir's index.json that sel names (or
// the only one), every blob checked.
func openLayoutEntry(dir, sel, where string) (v1.ImageIndex, v1.Image, error) {
	l := localLayout{dir: dir, where: where}
	raw, err := bound.ReadFile(filepath.Join(dir, "index.json"), "", bound.MaxManifest)
	if err != nil {
		return nil, nil, fmt.Errorf("open OCI layout %s: %w", bound.Cut(where), bound.Short(err))
	}
	top, err := newLocalIndex(l, raw, types.OCIImageIndex)
	if err != nil {
		return nil, nil, err
	}
	var chosen []v1.Descriptor
	for _, d := range top.m.Manifests {
		if sel == "" || d.Annotations["org.opencontainers.image.ref.name"] == sel || d.Annotations["io.containerd.image.name"] == sel {
			chosen = append(chosen, d)
		}
	}
	if len(chosen) != 1 {
		return nil, nil, fmt.Errorf("OCI layout %s holds %d images matching %q; name one as oci:DIR:NAME", where, len(chosen), sel)
	}
	if chosen[0].MediaType.IsIndex() {
		idx, err := top.ImageIndex(chosen[0].Digest)
		return idx, nil, err
	}
	img, err := top.Image(chosen[0].Digest)
	return nil, img, err
}

// localIndex is an index of a layout: index.json, or a checked index blob.
type localIndex struct {
	l   localLayout
	raw []byte
	mt  types.MediaType
	m   *v1.IndexManifest
}

func newLocalIndex(l localLayout, raw []byte, mt types.MediaType) (*localIndex, error) {
	m, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("read OCI layout %s: %w", l.where, err)
	}
	if mt == "" {
		mt = m.MediaType
	}
	return &localIndex{l: l, raw: raw, mt: mt, m: m}, nil
}

func (x *localIndex) MediaType() (types.MediaType, error) { return x.mt, nil }
func (x *localIndex) Digest() (v1.Hash, error)            { return partial.Digest(x) }
func (x *localIndex) Size() (int64, error)                { return int64(len(x.raw)), nil }
func (x *localIndex) RawManifest() ([]byte, error)        { return x.raw, nil }
func (x *localIndex) IndexManifest() (*v1.IndexManifest, error) {
	return x.m.DeepCopy(), nil
}

func (x *localIndex) find(h v1.Hash) (v1.Descriptor, error) {
	for _, d := range x.m.Manifests {
		if d.Digest == h {
			return d, nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("the index of %s has no manifest %s", x.l.where, h)
}

// Image opens the image manifest h names, checked.
func (x *localIndex) Image(h v1.Hash) (v1.Image, error) {
	d, err := x.find(h)
	if err != nil {
		return nil, err
	}
	return newLocalImage(x.l, d)
}

// ImageIndex opens the child index h names, checked.
func (x *localIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	d, err := x.find(h)
	if err != nil {
		return nil, err
	}
	raw, err := x.l.read(d, "index")
	if err != nil {
		return nil, err
	}
	return newLocalIndex(x.l, raw, d.MediaType)
}

// localImageCore is what partial.CompressedToImage needs: the checked
// manifest and config, and the layers as checked blobs.
type localImageCore struct {
	l           localLayout
	desc        v1.Descriptor
	raw, config []byte
	m           *v1.Manifest
}

// newLocalImage reads and checks the manifest d names, its config, and the
// declared size of every layer against its file.
func newLocalImage(l localLayout, d v1.Descriptor) (v1.Image, error) {
	raw, err := l.read(d, "manifest")
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("manifest %s of %s: %w", d.Digest, l.where, err)
	}
	cfg, err := l.read(m.Config, "config")
	if err != nil {
		return nil, err
	}
	for i, ld := range m.Layers {
		if err := l.checkSize(ld, fmt.Sprintf("layer %d", i)); err != nil {
			return nil, err
		}
	}
	if d.MediaType == "" {
		d.MediaType = m.MediaType
	}
	img, err := partial.CompressedToImage(&localImageCore{l: l, desc: d, raw: raw, config: cfg, m: m})
	if err != nil {
		return nil, err
	}
	return localImage{Image: img}, nil
}

func (c *localImageCore) MediaType() (types.MediaType, error) { return c.desc.MediaType, nil }
func (c *localImageCore) RawManifest() ([]byte, error)        { return c.raw, nil }
func (c *localImageCore) RawConfigFile() ([]byte, error)      { return c.config, nil }

func (c *localImageCore) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if h == c.m.Config.Digest {
		return &localBlob{l: c.l, desc: c.m.Config, what: "config"}, nil
	}
	for i, d := range c.m.Layers {
		if d.Digest == h {
			return &localBlob{l: c.l, desc: d, what: fmt.Sprintf("layer %d", i)}, nil
		}
	}
	return nil, fmt.Errorf("%s: the manifest %s has no layer %s", c.l.where, c.desc.Digest, h)
}

// localBlob is a layer (or the config) in a layout; its bytes are checked
// against its descriptor as they are read.
type localBlob struct {
	l    localLayout
	desc v1.Descriptor
	what string
}

func (b *localBlob) Digest() (v1.Hash, error)            { return b.desc.Digest, nil }
func (b *localBlob) Size() (int64, error)                { return b.desc.Size, nil }
func (b *localBlob) MediaType() (types.MediaType, error) { return b.desc.MediaType, nil }
func (b *localBlob) Descriptor() (*v1.Descriptor, error) { return &b.desc, nil }
func (b *localBlob) blobName() string {
	return b.what + " " + b.desc.Digest.String() + " of " + b.l.where
}

func (b *localBlob) Compressed() (io.ReadCloser, error) {
	v, err := b.open()
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (b *localBlob) open() (*verifier, error) {
	if err := b.l.checkSize(b.desc, b.what); err != nil {
		return nil, err
	}
	f, err := bound.Open(b.l.blobPath(b.desc.Digest), b.blobName())
	if err != nil {
		return nil, err
	}
	return &verifier{rc: f, h: sha256.New(), size: b.desc.Size, want: b.desc.Digest, what: b.blobName()}, nil
}

// localImage hands out layers whose uncompressed stream, at its end,
// finishes reading (and so checking) the compressed bytes, whatever the
// decompressor left unread.
type localImage struct{ v1.Image }

func (i localImage) Layers() ([]v1.Layer, error) {
	ls, err := i.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for j, l := range ls {
		out[j] = i.wrap(l)
	}
	return out, nil
}

func (i localImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	return i.wrap(l), nil
}

func (i localImage) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDiffID(h)
	if err != nil {
		return nil, err
	}
	return i.wrap(l), nil
}

func (i localImage) wrap(l v1.Layer) v1.Layer { return localLayer{Layer: l} }

// localLayer is a layer of a localImage.
type localLayer struct{ v1.Layer }

// Uncompressed decompresses the checked compressed stream and, at the
// end of the uncompressed one, reads what the decompressor left, so the
// digest and size are always checked.
func (l localLayer) Uncompressed() (io.ReadCloser, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	v, ok := rc.(*verifier)
	if !ok {
		rc.Close()
		return l.Layer.Uncompressed()
	}
	ul, err := partial.CompressedToLayer(openedBlob{l: l.Layer, rc: v})
	if err != nil {
		v.Close()
		return nil, err
	}
	u, err := ul.Uncompressed()
	if err != nil {
		v.Close()
		return nil, err
	}
	return &drainAtEOF{ReadCloser: u, v: v}, nil
}

// openedBlob is a compressed layer whose one stream is already open.
type openedBlob struct {
	l  v1.Layer
	rc io.ReadCloser
}

func (o openedBlob) Digest() (v1.Hash, error)            { return o.l.Digest() }
func (o openedBlob) Compressed() (io.ReadCloser, error)  { return o.rc, nil }
func (o openedBlob) Size() (int64, error)                { return o.l.Size() }
func (o openedBlob) MediaType() (types.MediaType, error) { return o.l.MediaType() }

// drainAtEOF is an uncompressed stream that, at its EOF, reads the rest
// of the compressed one and reports its check.
type drainAtEOF struct {
	io.ReadCloser
	v *verifier
}

func (d *drainAtEOF) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		if _, derr := io.Copy(io.Discard, d.v); derr != nil {
			return n, derr
		}
	}
	return n, err
}

// verifier checks a blob's bytes against its digest and declared size as
// they stream: more bytes than declared fail at once, a wrong digest or a
// short blob at EOF, naming the blob.
type verifier struct {
	rc   io.ReadCloser
	h    hash.Hash
	n    int64
	size int64
	want v1.Hash
	what string
	err  error
	done bool
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.done {
		return 0, io.EOF
	}
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	switch {
	case v.n > v.size:
		v.err = fmt.Errorf("%s holds more than the %d bytes its descriptor declares: the file is corrupt; export or pull the image again", v.what, v.size)
	case errors.Is(err, io.EOF) && v.n < v.size:
		v.err = fmt.Errorf("%s ends after %d of the %d bytes its descriptor declares: the file is corrupt; export or pull the image again", v.what, v.n, v.size)
	case errors.Is(err, io.EOF):
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want.Hex {
			v.err = fmt.Errorf("%s does not match its digest (its bytes hash to sha256:%s): the file is corrupt; export or pull the image again", v.what, got)
		}
		v.done = true
	}
	if v.err != nil {
		return n, v.err
	}
	return n, err
}

func (v *verifier) Close() error { return v.rc.Close() }

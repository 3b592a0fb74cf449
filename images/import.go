package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/matrix"
)

// SourceDigestLabel is the image label in which Import keeps the digest
// of the source (the top-level manifest SRC named) when a conversion
// gives the image a new digest. A label rather than an annotation,
// because Docker schema 2 manifests carry no annotations.
const SourceDigestLabel = "dev.gpuimg.source.digest"

// ImportCheck judges the image Import is about to push, before a byte is
// pushed: img is the source's image for the target's platform, and after
// how it will be wrapped once converted. Failed findings refuse the
// import. gpuimg passes validate.Inspect with the target.
type ImportCheck func(ctx context.Context, img v1.Image, after matrix.Packaging) ([]matrix.Finding, error)

// ImportResult is what Import did, or would do with WithDryRun.
type ImportResult struct {
	Source       string           `json:"source"`
	SourceDigest string           `json:"source_digest"`
	Target       string           `json:"target"`
	Before       matrix.Packaging `json:"before"`
	After        matrix.Packaging `json:"after"`
	Changes      []matrix.Change  `json:"changes"`
	// DigestChanged says the pushed manifest's digest differs from the
	// source's: any change does that; the source's is then kept in the
	// SourceDigestLabel label (SourceLabel).
	DigestChanged bool             `json:"digest_changed"`
	SourceLabel   string           `json:"source_label,omitempty"`
	Checks        []matrix.Finding `json:"checks"`
	Verdict       matrix.Status    `json:"verdict"`
	DryRun        bool             `json:"dry_run"`
	// Tag is the destination as given; Ref (REPO@DIGEST) is what to
	// paste into the provider; Digest and MediaType are the pushed
	// manifest's (empty on a dry run).
	Tag       string  `json:"tag"`
	Ref       string  `json:"ref,omitempty"`
	Digest    string  `json:"digest,omitempty"`
	MediaType string  `json:"media_type,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"`
	Duration  float64 `json:"seconds"`
}

// ErrRefused is wrapped by the error of an import the target cannot
// accept; nothing was pushed.
var ErrRefused = errors.New("import refused")

// RefusedError lists every reason the target cannot take the image.
type RefusedError struct {
	Target  string
	Reasons []matrix.Finding
}

func (e *RefusedError) Error() string {
	msgs := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		msgs[i] = r.Message
	}
	reasons := "reasons"
	if len(e.Reasons) == 1 {
		reasons = "reason"
	}
	return fmt.Sprintf("%s for %s, nothing pushed (%d %s): %s", ErrRefused, e.Target, len(e.Reasons), reasons, strings.Join(msgs, "; "))
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// Import pushes src (any transport gpuimg reads) to dst (a tag) in the
// form target t accepts. It describes how src is wrapped, plans the
// conversion (matrix.Target.Convert), and judges the result with check
// (t.CheckPackaging when nil); any failed finding refuses the import
// with every reason (*RefusedError) before a byte is pushed; without check
// the size is judged on the source's compressed layers. Then it
// converts: the target's platform out of an index, attestation manifests
// dropped, OCI and Docker schema 2 media types switched, layers in a
// compression the target rejects recompressed (staged one at a time under
// WithTempDir's directory; the uncompressed content, and so the diff IDs,
// are unchanged, which Import verifies). A converted image has a new
// digest, and keeps the source's in the SourceDigestLabel label. The push
// writes the tag last, with the copy's retries; an image that needs no
// change is pushed byte for byte. WithDryRun stops after the check.
func Import(ctx context.Context, src string, t matrix.Target, dst string, check ImportCheck, opts ...Option) (*ImportResult, error) {
	start := time.Now()
	opt, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	dstRef, err := opt.parse(dst)
	if err != nil {
		return nil, err
	}
	if _, ok := dstRef.(name.Tag); !ok {
		return nil, fmt.Errorf("import to %s: give a tag (REPO:TAG), which is written last", dst)
	}
	r, err := ParseRef(src)
	if err != nil {
		return nil, err
	}
	s, err := OpenSource(ctx, r, opts...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	p, err := s.Packaging(t)
	if err != nil {
		return nil, err
	}
	conv := t.Convert(p)
	res := &ImportResult{Source: r.String(), SourceDigest: s.Digest, Target: t.Name, Before: p, After: conv.After,
		Changes: append([]matrix.Change{}, conv.Changes...), Checks: []matrix.Finding{}, DryRun: opt.dryRun, Tag: dstRef.String(), DigestChanged: len(conv.Changes) > 0}
	if res.DigestChanged {
		res.SourceLabel = SourceDigestLabel
	}
	// Validation reads every layer of the image and the push (or the
	// recompression) reads them again: a registry source is spooled, so
	// each blob crosses the network once. A destination on the source's
	// registry that takes the image as it is mounts the blobs instead.
	if r.Transport == Registry && check != nil && !opt.dryRun && (res.DigestChanged || !sameRegistry(opt, r, dstRef)) {
		dir, err := os.MkdirTemp(opt.tempDir, "gpuimg-import-src-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		s.spoolTo(newSpool(dir))
	}
	img, err := s.Image(p.Platform)
	if err != nil {
		return nil, err
	}
	if check == nil {
		res.Checks = t.CheckPackaging(conv.After)
		if f, ok := t.CheckSize(p.Compressed, 0); ok && t.SizeOf == "compressed" {
			res.Checks = append(res.Checks, f)
		}
	} else if res.Checks, err = check(ctx, img, conv.After); err != nil {
		return nil, err
	}
	if err := res.refuse(t); err != nil {
		return res, err
	}
	if err := checkImportLayers(ctx, opt, s, img, check != nil, res.DigestChanged && conv.Platform != ""); err != nil {
		return nil, err
	}
	if opt.dryRun {
		res.Duration = time.Since(start).Seconds()
		return res, nil
	}

	var out remote.Taggable
	switch {
	case !res.DigestChanged && s.index != nil:
		out = s.index
	case !res.DigestChanged:
		out = img
	default:
		work, err := os.MkdirTemp(opt.tempDir, "gpuimg-import-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
		if s.index != nil && conv.Platform == "" {
			out, err = convertIndex(s, conv, work)
		} else {
			out, err = convertImage(img, conv, work, s.Digest)
		}
		if err != nil {
			return nil, fmt.Errorf("convert %s for %s: %w", r, t.Name, err)
		}
	}
	if res.Bytes, err = pushedBytes(out); err != nil {
		return nil, err
	}
	if t.SizeOf == "compressed" && res.DigestChanged {
		// Recompressed layers have a new size: judge what will be pushed.
		if f, ok := t.CheckSize(res.Bytes, 0); ok {
			res.Checks = slices.DeleteFunc(res.Checks, func(c matrix.Finding) bool { return c.Name == f.Name })
			res.Checks = append(res.Checks, f)
			if err := res.refuse(t); err != nil {
				return res, err
			}
		}
	}
	d, err := out.(interface{ Digest() (v1.Hash, error) }).Digest()
	if err != nil {
		return nil, err
	}
	mt, err := out.(interface {
		MediaType() (types.MediaType, error)
	}).MediaType()
	if err != nil {
		return nil, err
	}
	res.Digest, res.MediaType = d.String(), string(mt)
	if err := push(ctx, opt, dstRef, out, opt.progress); err != nil {
		return nil, err
	}
	res.Ref = dstRef.Context().Digest(res.Digest).String()
	res.Duration = time.Since(start).Seconds()
	return res, nil
}

// checkImportLayers runs the layer check (WithLayerCheck) on what Import
// pushes: the whole index unless the conversion picks one platform's
// image, and img unless checked (the ImportCheck judged it already).
func checkImportLayers(ctx context.Context, opt *options, s *Source, img v1.Image, checked, onePlatform bool) error {
	what := "import " + s.Ref.String()
	if s.index == nil || onePlatform {
		if checked {
			return nil
		}
		return opt.checkLayers(ctx, what, nil, img, v1.Hash{})
	}
	var skip v1.Hash
	if checked {
		d, err := img.Digest()
		if err != nil {
			return fmt.Errorf("read %s: %w", s.Ref, err)
		}
		skip = d
	}
	return opt.checkLayers(ctx, what, s.index, nil, skip)
}

// sameRegistry says whether a registry source is on dst's registry.
func sameRegistry(opt *options, r Ref, dst name.Reference) bool {
	src, err := opt.parse(r.Name)
	return err == nil && src.Context().RegistryStr() == dst.Context().RegistryStr()
}

// refuse sets the verdict and returns a *RefusedError when a check failed.
func (res *ImportResult) refuse(t matrix.Target) error {
	if res.Checks == nil {
		res.Checks = []matrix.Finding{} // a list is never null in the JSON
	}
	res.Verdict = matrix.Verdict(res.Checks)
	if res.Verdict != matrix.Fail {
		return nil
	}
	e := &RefusedError{Target: t.Name}
	for _, c := range res.Checks {
		if c.Status == matrix.Fail {
			e.Reasons = append(e.Reasons, c)
		}
	}
	return e
}

// convertImage rewrites one image as conv says: manifest and config media
// types of its format, layers in a rejected compression recompressed, the
// configuration kept (plus the source digest label).
func convertImage(img v1.Image, conv matrix.Conversion, dir, sourceDigest string) (v1.Image, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	manifestMT, configMT := types.DockerManifestSchema2, types.DockerConfigJSON
	if conv.Format == matrix.FormatOCI {
		manifestMT, configMT = types.OCIManifestSchema1, types.OCIConfigJSON
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, manifestMT), configMT)
	adds := make([]mutate.Addendum, 0, len(layers))
	for i, l := range layers {
		lmt, err := l.MediaType()
		if err != nil {
			return nil, err
		}
		c := matrix.CompressionOf(string(lmt))
		nl := l
		if slices.Contains(conv.Recompress, c) {
			if conv.Compression != matrix.CompressionGzip && conv.Compression != matrix.CompressionZstd {
				return nil, fmt.Errorf("layer %d: cannot recompress to %s (gzip or zstd only)", i, conv.Compression)
			}
			if nl, _, err = recompress(l, 0, conv.Compression, dir, i, nil); err != nil { // validated before: bombs were refused
				return nil, fmt.Errorf("recompress layer %d: %w", i, err)
			}
			c = conv.Compression
		}
		mt, err := layerMediaType(conv.Format, c, lmt)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		adds = append(adds, mutate.Addendum{Layer: nl, MediaType: mt})
	}
	out, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	newCfg, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	if !slices.Equal(newCfg.RootFS.DiffIDs, cfg.RootFS.DiffIDs) {
		return nil, fmt.Errorf("the converted layers' diff IDs differ from the source's (%d vs %d layers): refusing to push a different filesystem", len(newCfg.RootFS.DiffIDs), len(cfg.RootFS.DiffIDs))
	}
	keep := cfg.DeepCopy()
	if keep.Config.Labels == nil {
		keep.Config.Labels = map[string]string{}
	}
	keep.Config.Labels[SourceDigestLabel] = sourceDigest
	return mutate.ConfigFile(out, keep)
}

// convertIndex keeps the source index (the target takes one), dropping
// attestation manifests if conv says so and converting each image.
func convertIndex(s *Source, conv matrix.Conversion, dir string) (v1.ImageIndex, error) {
	m, err := s.index.IndexManifest()
	if err != nil {
		return nil, err
	}
	mt := types.DockerManifestList
	if conv.Format == matrix.FormatOCI {
		mt = types.OCIImageIndex
	}
	var adds []mutate.IndexAddendum
	for i, d := range m.Manifests {
		if IsAttestation(d) {
			if conv.DropAttestations {
				continue
			}
			return nil, fmt.Errorf("index entry %d is an attestation manifest, which gpuimg cannot carry across a conversion of the images it describes; the target must drop them", i)
		}
		if !d.MediaType.IsImage() {
			return nil, fmt.Errorf("index entry %d is a %s, not an image", i, d.MediaType)
		}
		child, err := s.index.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		conv.Platform = platformString(d.Platform)
		img, err := convertImage(child, conv, dir, s.Digest)
		if err != nil {
			return nil, fmt.Errorf("%s image: %w", conv.Platform, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: d.Platform}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, mt), adds...), nil
}

// layerMediaType is the media type of a layer in compression c for
// manifest format f; foreign and non-distributable layers keep theirs.
func layerMediaType(f matrix.ManifestFormat, c matrix.Compression, old types.MediaType) (types.MediaType, error) {
	if !old.IsDistributable() {
		return old, nil
	}
	switch {
	case f == matrix.FormatDocker && c == matrix.CompressionGzip:
		return types.DockerLayer, nil
	case f == matrix.FormatDocker && c == matrix.CompressionUncompressed:
		return types.DockerUncompressedLayer, nil
	case f == matrix.FormatOCI && c == matrix.CompressionGzip:
		return types.OCILayer, nil
	case f == matrix.FormatOCI && c == matrix.CompressionZstd:
		return types.OCILayerZStd, nil
	case f == matrix.FormatOCI && c == matrix.CompressionUncompressed:
		return types.OCIUncompressedLayer, nil
	}
	return "", fmt.Errorf("no %s media type for a %s layer (%s)", f, c, old)
}

// pushedBytes is the compressed size of the layers of an image, or of the
// largest image of an index.
func pushedBytes(t remote.Taggable) (int64, error) {
	size := func(img v1.Image) (int64, error) {
		m, err := img.Manifest()
		if err != nil {
			return 0, err
		}
		var n int64
		for _, l := range m.Layers {
			n += l.Size
		}
		return n, nil
	}
	switch x := t.(type) {
	case v1.Image:
		return size(x)
	case v1.ImageIndex:
		m, err := x.IndexManifest()
		if err != nil {
			return 0, err
		}
		var most int64
		for _, d := range m.Manifests {
			if !d.MediaType.IsImage() {
				continue
			}
			img, err := x.Image(d.Digest)
			if err != nil {
				return 0, err
			}
			n, err := size(img)
			if err != nil {
				return 0, err
			}
			most = max(most, n)
		}
		return most, nil
	}
	return 0, fmt.Errorf("unknown image type %T", t)
}

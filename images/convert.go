package images

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/gpuimg/gpuimg/matrix"
)

// ConvertResult compares the image before and after.
type ConvertResult struct {
	Source      string             `json:"source"`
	Destination string             `json:"destination"`
	Compression matrix.Compression `json:"compression"`
	Digest      string             `json:"digest"`
	SizeBefore  int64              `json:"size_before"` // compressed bytes of all layers
	SizeAfter   int64              `json:"size_after"`
	Layers      int                `json:"layers"`
}

// Convert recompresses every layer of src (one platform of an index, by
// WithPlatform or linux/amd64) and pushes the result to dst as an OCI
// image. The files are unchanged; the layer digests change, and for
// eStargz the diff IDs too (it rewrites each tar with a table of
// contents; WithPrioritizedFiles puts files first, before the prefetch
// landmark). Layers are staged one at a time in a directory under
// WithTempDir's. comp is one of matrix.WrittenCompressions: zstd
// (faster to decompress; containerd 1.5+, Docker 23+), gzip (every
// runtime) or estargz (gzip-compatible, lazily pullable with the stargz
// snapshotter); there is no default.
func Convert(ctx context.Context, src, dst string, comp matrix.Compression, opts ...Option) (*ConvertResult, error) {
	if !comp.Written() {
		return nil, fmt.Errorf("unknown compression %q: use zstd, estargz or gzip", comp)
	}
	r, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	dstRef, err := r.parse(dst)
	if err != nil {
		return nil, err
	}
	srcRef, err := ParseRef(src)
	if err != nil {
		return nil, err
	}
	var img v1.Image
	if srcRef.Transport == Registry {
		ref, err := r.parse(srcRef.Name)
		if err != nil {
			return nil, err
		}
		if img, err = remote.Image(ref, r.remote(ctx)...); err != nil {
			return nil, explain("read", ref, err)
		}
		img = countedImage{Image: img}
		if err := checkPlatform(srcRef, img, r.platform); err != nil {
			return nil, err
		}
		srcRef.Name = ref.String()
	} else {
		// A local source: Open checks its blobs and picks the platform.
		o, err := Open(ctx, srcRef, opts...)
		if err != nil {
			return nil, err
		}
		defer o.Close()
		img = o.Image
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(r.tempDir, "gpuimg-convert-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	res := &ConvertResult{Source: srcRef.String(), Destination: dstRef.String(), Compression: comp, Layers: len(layers)}

	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	var adds []mutate.Addendum
	for i, l := range layers {
		size, err := l.Size()
		if err != nil {
			return nil, err
		}
		res.SizeBefore += size
		nl, ann, err := recompress(l, size, comp, work, i, r.prioritized)
		if err != nil {
			return nil, fmt.Errorf("recompress layer %d: %w", i, err)
		}
		ns, err := nl.Size()
		if err != nil {
			return nil, err
		}
		res.SizeAfter += ns
		adds = append(adds, mutate.Addendum{Layer: nl, Annotations: ann, History: v1.History{Comment: "gpuimg convert"}})
	}
	out, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	// Keep the original configuration and history; only the layers' wrapping changed.
	newCfg, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	keep := cfg.DeepCopy()
	keep.RootFS = newCfg.RootFS
	if out, err = mutate.ConfigFile(out, keep); err != nil {
		return nil, err
	}
	// The layer check judges the staged layers, what would be pushed: the
	// source's blobs are read once, and a refusal pushes nothing.
	if err := r.checkLayers(ctx, "convert "+srcRef.String(), nil, out, v1.Hash{}); err != nil {
		return nil, err
	}
	if err := push(ctx, r, dstRef, out, r.progress); err != nil {
		return nil, err
	}
	d, err := out.Digest()
	if err != nil {
		return nil, err
	}
	res.Digest = d.String()
	return res, nil
}

// recompress stages one layer's tar in dir and returns it compressed anew.
// Its expansion is bounded as validate bounds it (bombReader), so a bomb
// is refused before it fills dir.
func recompress(l v1.Layer, size int64, comp matrix.Compression, dir string, i int, prioritized []string) (v1.Layer, map[string]string, error) {
	urc, err := l.Uncompressed()
	if err != nil {
		return nil, nil, err
	}
	rc := newBombReader(urc, l, size, fmt.Sprintf("layer %d", i))
	defer rc.Close()
	out := fmt.Sprintf("%s/layer%d.%s", dir, i, comp)
	switch comp {
	case matrix.CompressionZstd, matrix.CompressionGzip:
		f, err := os.Create(out)
		if err != nil {
			return nil, nil, err
		}
		var w io.WriteCloser
		if comp == matrix.CompressionZstd {
			w, err = zstd.NewWriter(f)
		} else {
			w, err = newGzipWriter(f)
		}
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		if _, err := io.Copy(w, rc); err != nil {
			f.Close()
			return nil, nil, err
		}
		if err := w.Close(); err != nil {
			f.Close()
			return nil, nil, err
		}
		if err := f.Close(); err != nil {
			return nil, nil, err
		}
		mt := types.OCILayer
		c := compression.GZip
		if comp == matrix.CompressionZstd {
			mt, c = types.OCILayerZStd, compression.ZStd
		}
		nl, err := tarball.LayerFromFile(out, tarball.WithMediaType(mt), tarball.WithCompression(c))
		return nl, nil, err
	}
	// eStargz needs random access to the tar: stage it uncompressed.
	tarPath := out + ".tar"
	f, err := os.Create(tarPath)
	if err != nil {
		return nil, nil, err
	}
	n, err := io.Copy(f, rc)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	var missed []string // files of other layers
	blob, err := estargz.Build(io.NewSectionReader(f, 0, n),
		estargz.WithPrioritizedFiles(prioritized), estargz.WithAllowPrioritizeNotFound(&missed))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	g, err := os.Create(out)
	if err != nil {
		blob.Close()
		f.Close()
		return nil, nil, err
	}
	_, err = io.Copy(g, blob)
	blob.Close()
	f.Close()
	os.Remove(tarPath)
	if cerr := g.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	nl, err := tarball.LayerFromFile(out, tarball.WithMediaType(types.OCILayer))
	return nl, map[string]string{estargz.TOCJSONDigestAnnotation: blob.TOCDigest().String()}, err
}

func newGzipWriter(w io.Writer) (io.WriteCloser, error) {
	return kgzip.NewWriterLevel(w, kgzip.DefaultCompression)
}

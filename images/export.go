package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
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
		if err := verifyLayout(dir, desc.Digest); err != nil {
			return nil, err
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
		want, _ := img.ConfigName()
		got, err := back.ConfigName()
		if err != nil || got != want {
			return nil, fmt.Errorf("export %s: the archive's config is %s, the image's %s", dest, got, want)
		}
		if err := validate.Image(back); err != nil {
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

// verifyLayout reopens a layout and checks the top manifest's digest and
// every blob below it.
func verifyLayout(dir string, want v1.Hash) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		return err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Digest != want {
		return fmt.Errorf("the written layout does not point at %s", want)
	}
	d := m.Manifests[0]
	if d.MediaType.IsIndex() {
		child, err := idx.ImageIndex(d.Digest)
		if err != nil {
			return err
		}
		return validate.Index(child)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return err
	}
	return validate.Image(img)
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

package images

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Bounds on a docker-archive's links (docs/faults.md). go-containerregistry
// follows each symbolic or hard link by reading the archive again from
// its start, so a layer reached through 20,000 links reads the archive
// 20,000 times.
const (
	// maxArchiveLinks is how many links one name may pass through,
	// Linux's own limit on symbolic links in a path (ELOOP).
	maxArchiveLinks = 40
	// maxArchiveManifest caps manifest.json, as containers/image's
	// iolimits.MaxTarFileManifestSize does.
	maxArchiveManifest = 1 << 20
)

// checkDockerArchive reads the archive's headers once and refuses it if
// manifest.json, or a config or layer it names, is reached through more
// than maxArchiveLinks links, manifest.json is over 1 MiB, or a layer
// member is a bomb (checkLayerMember).
func checkDockerArchive(ctx context.Context, file string) error {
	a, err := scanDockerArchive(ctx, file)
	if err != nil || a == nil {
		return err
	}
	if _, err := resolveLinks(a.links, "manifest.json", file); err != nil {
		return err
	}
	var m []struct {
		Config string
		Layers []string
	}
	if a.manifest == nil || json.Unmarshal(a.manifest, &m) != nil {
		return nil // go-containerregistry says what is wrong
	}
	stored, err := storedBytes(file)
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	for _, d := range m {
		if _, err := resolveLinks(a.links, path.Clean(filepath.ToSlash(d.Config)), file); err != nil {
			return err
		}
		for _, p := range d.Layers {
			name, err := resolveLinks(a.links, path.Clean(filepath.ToSlash(p)), file)
			if err != nil {
				return err
			}
			if err := checkLayerMember(p, a.sizes[name], stored); err != nil {
				return err
			}
		}
	}
	return nil
}

// archiveHeaders is what one read of a docker-archive's headers finds:
// its links (name to target, cleaned), the sizes of its regular members
// (as they expand: a sparse member's logical size) and manifest.json.
type archiveHeaders struct {
	links    map[string]string
	sizes    map[string]int64
	manifest []byte
}

// scanDockerArchive reads the archive's headers (members are skipped by
// seeking) and manifest.json; nil, nil when it is not a tar or is cut
// short: go-containerregistry says so.
func scanDockerArchive(ctx context.Context, file string) (*archiveHeaders, error) {
	f, err := openCtx(ctx, file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a := &archiveHeaders{links: map[string]string{}, sizes: map[string]int64{}}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return a, nil
		}
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		if err != nil {
			return nil, nil
		}
		name := path.Clean(h.Name)
		switch h.Typeflag {
		case tar.TypeSymlink, tar.TypeLink:
			a.links[name] = path.Join(path.Dir(name), path.Clean(h.Linkname))
		case tar.TypeReg:
			a.sizes[name] = h.Size
		}
		if name == "manifest.json" && h.Typeflag == tar.TypeReg {
			if h.Size > maxArchiveManifest {
				return nil, bound.TooBig(file+": manifest.json", h.Size, maxArchiveManifest)
			}
			if a.manifest, err = io.ReadAll(io.LimitReader(tr, maxArchiveManifest)); err != nil {
				return nil, fmt.Errorf("read manifest.json of %s: %w", file, err)
			}
		}
	}
}

// checkLayerMember judges a layer member of size bytes (as it expands)
// against the bytes the archive file stores, before go-containerregistry
// gzips an uncompressed layer whole to learn its digest: with the bound
// every layer has (bound.MaxRatio past bound.MinBombBytes), a 64 GiB
// layer.tar made of holes, or a PAX sparse member of a few KiB, is a bomb.
// Its error names the layer; the caller names the archive.
func checkLayerMember(layer string, size, stored int64) error {
	if size <= bound.MinBombBytes || size/max(stored, 1) <= bound.MaxRatio {
		return nil
	}
	return fmt.Errorf("layer %s: %w: it expands to %d bytes from the %d bytes the archive stores on disk (a sparse member, or a file with holes): more than %d times, past %d MiB, the decompression-bomb bound of every layer (fixed); if the archive is genuine, save it again (docker save) or copy it without holes (cp --sparse=never)",
		bound.Quote(layer), bound.ErrBound, size, stored, bound.MaxRatio, bound.MinBombBytes>>20)
}

// storedBytes is how many bytes file takes on disk: its size, or fewer
// blocks where it has holes.
func storedBytes(file string) (int64, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return 0, err
	}
	n := fi.Size()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		n = min(n, st.Blocks*512)
	}
	return n, nil
}

// resolveLinks follows name through links, at most maxArchiveLinks of
// them, and returns the member it ends at.
func resolveLinks(links map[string]string, name, file string) (string, error) {
	for hops := 0; ; hops++ {
		next, ok := links[name]
		if !ok {
			return name, nil
		}
		if hops == maxArchiveLinks {
			return "", fmt.Errorf("%s: %w: %s is reached through more than %d links (a loop, or a chain no docker save writes)", file, bound.ErrBound, bound.Quote(name), maxArchiveLinks)
		}
		name = next
	}
}

// openCtx opens a local archive (a regular file; a FIFO is refused)
// whose reads end once ctx is done: a signal stops a slow archive between
// two reads.
func openCtx(ctx context.Context, file string) (io.ReadCloser, error) {
	f, err := bound.Open(file, "")
	if err != nil {
		return nil, err
	}
	return &ctxFile{File: f, ctx: ctx}, nil
}

// ctxFile is a file whose Read fails once ctx is done; it keeps Seek, so
// tar readers skip members without reading them.
type ctxFile struct {
	*os.File
	ctx context.Context
}

func (c *ctxFile) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	return c.File.Read(p)
}

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
// than maxArchiveLinks links, or manifest.json is over 1 MiB.
func checkDockerArchive(ctx context.Context, file string) error {
	f, err := openCtx(ctx, file)
	if err != nil {
		return err
	}
	defer f.Close()
	links := map[string]string{}
	var manifest []byte
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err := context.Cause(ctx); err != nil {
			return err
		}
		if err != nil {
			return nil // not a tar, or cut short: go-containerregistry says so
		}
		name := path.Clean(h.Name)
		switch {
		case h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink:
			links[name] = path.Join(path.Dir(name), path.Clean(h.Linkname))
		case name == "manifest.json" && h.Typeflag == tar.TypeReg:
			if h.Size > maxArchiveManifest {
				return bound.TooBig(file+": manifest.json", h.Size, maxArchiveManifest)
			}
			if manifest, err = io.ReadAll(io.LimitReader(tr, maxArchiveManifest)); err != nil {
				return fmt.Errorf("read manifest.json of %s: %w", file, err)
			}
		}
	}
	if err := resolveLinks(links, "manifest.json", file); err != nil {
		return err
	}
	var m []struct {
		Config string
		Layers []string
	}
	if manifest == nil || json.Unmarshal(manifest, &m) != nil {
		return nil // go-containerregistry says what is wrong
	}
	for _, d := range m {
		for _, p := range append([]string{d.Config}, d.Layers...) {
			if err := resolveLinks(links, path.Clean(filepath.ToSlash(p)), file); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveLinks follows name through links, at most maxArchiveLinks of
// them.
func resolveLinks(links map[string]string, name, file string) error {
	for hops := 0; ; hops++ {
		next, ok := links[name]
		if !ok {
			return nil
		}
		if hops == maxArchiveLinks {
			return fmt.Errorf("%s: %w: %s is reached through more than %d links (a loop, or a chain no docker save writes)", file, bound.ErrBound, bound.Quote(name), maxArchiveLinks)
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

package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sniff says which archive formats a tar file holds: oci-archive (an
// index.json or oci-layout), docker-archive (a manifest.json); Docker 25's
// docker save writes both. It reads the headers only.
func sniff(file string) ([]Transport, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var kinds []Transport
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if len(kinds) > 0 {
				break
			}
			return nil, fmt.Errorf("%s is not a tar archive: %w", file, err)
		}
		switch strings.TrimPrefix(h.Name, "./") {
		case "index.json", "oci-layout":
			if !slices.Contains(kinds, OCIArchive) {
				kinds = append(kinds, OCIArchive)
			}
		case "manifest.json":
			if !slices.Contains(kinds, DockerArchive) {
				kinds = append(kinds, DockerArchive)
			}
		}
	}
	slices.Sort(kinds)
	return kinds, nil
}

// useFor says which transport reads a local path: oci:DIR for a layout
// directory, docker-archive: or oci-archive: for a tar file, as its
// contents say.
func useFor(p string) string {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "give an existing path"
	case fi.IsDir():
		if _, err := os.Stat(filepath.Join(p, "index.json")); err == nil {
			return "use oci:" + p
		}
		return "an OCI layout directory holds index.json; use oci:DIR for one"
	}
	kinds, err := sniff(p)
	switch {
	case err != nil:
		return "give an OCI layout directory (oci:DIR), or a tar file written by docker save (docker-archive:FILE) or as an OCI archive (oci-archive:FILE)"
	case slices.Equal(kinds, []Transport{DockerArchive, OCIArchive}):
		return fmt.Sprintf("use docker-archive:%s (docker save; oci-archive:%s reads it too)", p, p)
	case len(kinds) == 1:
		return fmt.Sprintf("use %s:%s", kinds[0], p)
	}
	return "it holds neither manifest.json (docker save) nor index.json (an OCI archive), so no transport reads it"
}

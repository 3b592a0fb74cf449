package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// maxIndexDepth is how deep indexes of an OCI archive may nest (an index
// of indexes of images is 2).
const maxIndexDepth = 8

// archiveMembers says which members of an oci-archive to unpack: index.json,
// oci-layout, and the blobs its index.json reaches (manifests, indexes,
// configs, layers), each with the size its descriptor declares. A member
// nothing reaches (an 8 GiB sparse file) is never written; a reached one
// larger than declared is refused before it is. Manifests
// and indexes (at most 4 MiB each) are read in one pass of the headers
// per level of nesting.
func archiveMembers(open func() (io.ReadCloser, error)) (map[string]int64, error) {
	want := map[string]int64{"index.json": -1, "oci-layout": -1}
	small, err := readMembers(open, map[string]int64{"index.json": -1})
	if err != nil {
		return nil, err
	}
	raw, ok := small["index.json"]
	if !ok {
		return want, nil // openLocal says what is missing
	}
	frontier, err := children(raw)
	if err != nil {
		return want, nil //nolint:nilerr // the layout reader says what is wrong
	}
	for depth := 0; len(frontier) > 0; depth++ {
		if depth == maxIndexDepth {
			return nil, fmt.Errorf("%w: indexes nest more than %d deep", bound.ErrBound, maxIndexDepth)
		}
		manifests := map[string]int64{}
		for _, d := range frontier {
			name := path.Join("blobs", d.Digest.Algorithm, d.Digest.Hex)
			want[name] = d.Size
			if (d.MediaType.IsIndex() || d.MediaType.IsImage()) && d.Size <= bound.MaxManifest {
				manifests[name] = d.Size
			}
		}
		small, err := readMembers(open, manifests)
		if err != nil {
			return nil, err
		}
		frontier = nil
		for _, b := range small {
			if c, err := children(b); err == nil {
				frontier = append(frontier, c...)
			}
		}
	}
	return want, nil
}

// children are the descriptors an index or manifest names.
func children(raw []byte) ([]v1.Descriptor, error) {
	var m struct {
		Manifests []v1.Descriptor `json:"manifests"`
		Config    *v1.Descriptor  `json:"config"`
		Layers    []v1.Descriptor `json:"layers"`
	}
	if err := jsonDecode(raw, &m); err != nil {
		return nil, err
	}
	out := slices.Concat(m.Manifests, m.Layers)
	if m.Config != nil {
		out = append(out, *m.Config)
	}
	return out, nil
}

// readMembers reads the named members (size -1: any up to 4 MiB) in one
// pass.
func readMembers(open func() (io.ReadCloser, error), names map[string]int64) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(names) == 0 {
		return out, nil
	}
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name := path.Clean("/" + h.Name)[1:]
		size, ok := names[name]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > bound.MaxManifest || (size >= 0 && h.Size != size) {
			continue // the layout reader refuses it
		}
		b, err := io.ReadAll(io.LimitReader(tr, bound.MaxManifest))
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
}

func jsonDecode(b []byte, v any) error {
	return json.Unmarshal(bytes.TrimSpace(b), v)
}

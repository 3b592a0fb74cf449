package images_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// tarOf makes a tar of the named files, in order; names ending in / are
// directories.
func tarOfNames(t *testing.T, names ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, n := range names {
		if strings.HasSuffix(n, "/") {
			must(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Typeflag: tar.TypeDir}))
			continue
		}
		must(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(n)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(n))
		must(t, err)
	}
	must(t, tw.Close())
	return b.Bytes()
}

// entryNames lists the tar entries of an eStargz blob in order.
func entryNames(t *testing.T, blob io.Reader) []string {
	t.Helper()
	zr, err := gzip.NewReader(blob) // eStargz is a gzip stream (many members)
	must(t, err)
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		must(t, err)
		names = append(names, h.Name)
	}
}

func TestConvertPrioritizedFiles(t *testing.T) {
	reg := newRegistry(t, nil)
	layer := func(names ...string) v1.Layer {
		b := tarOfNames(t, names...)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		must(t, err)
		return l
	}
	l1 := layer("etc/", "etc/passwd", "usr/", "usr/bin/", "usr/bin/python3.13", "usr/lib/", "usr/lib/os.py")
	l2 := layer("opt/", "opt/venv/", "opt/venv/a.py", "opt/venv/lib/", "opt/venv/lib/libtorch_cuda.so")
	img, err := mutate.AppendLayers(empty.Image, l1, l2)
	must(t, err)
	push(t, reg+"/ml/app:1", img)
	for _, tt := range []struct {
		name        string
		prioritized []string
		want        [][]string // first entries of each layer
	}{
		{"none", nil, [][]string{{".no.prefetch.landmark"}, {".no.prefetch.landmark"}}},
		{"trace", []string{"opt/venv/lib/libtorch_cuda.so", "usr/bin/python3.13", "not/in/any/layer"},
			[][]string{{"usr/", "usr/bin/", "usr/bin/python3.13", ".prefetch.landmark"}, {"opt/", "opt/venv/", "opt/venv/lib/", "opt/venv/lib/libtorch_cuda.so", ".prefetch.landmark"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := reg + "/ml/app:1-" + tt.name
			_, err := images.Convert(t.Context(), reg+"/ml/app:1", dst, matrix.CompressionEstargz,
				images.WithTempDir(t.TempDir()), images.WithPrioritizedFiles(tt.prioritized...))
			must(t, err)
			r, _ := name.ParseReference(dst, name.Insecure)
			out, err := remote.Image(r)
			must(t, err)
			layers, err := out.Layers()
			must(t, err)
			for i, l := range layers {
				rc, err := l.Compressed()
				must(t, err)
				names := entryNames(t, rc)
				rc.Close()
				if got := names[:min(len(names), len(tt.want[i]))]; !slices.Equal(got, tt.want[i]) {
					t.Errorf("layer %d starts with %q, want %q (all: %q)", i, got, tt.want[i], names)
				}
			}
		})
	}
}

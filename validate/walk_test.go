package validate

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is one tar entry for a test layer: a name ending in / is a
// directory, content after "->" makes a symlink.
type file struct{ name, content string }

func layer(t testing.TB, files ...file) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f.content))}
		switch {
		case strings.HasSuffix(f.name, "/"):
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case strings.HasPrefix(f.content, "->"):
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, strings.TrimPrefix(f.content, "->")
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(f.content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func image(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func walkAll(t testing.TB, img v1.Image, lim Limits) (map[string]string, *WalkResult, error) {
	t.Helper()
	type key struct {
		layer int
		path  string
	}
	var mu sync.Mutex
	all := map[key]string{}
	res, err := Walk(t.Context(), img, lim, func(e Entry, r io.Reader) error {
		b, err := io.ReadAll(r)
		mu.Lock()
		all[key{e.Layer, e.Path}] = string(b)
		mu.Unlock()
		return err
	})
	files := map[string]string{}
	if err != nil {
		return files, res, err
	}
	for k, v := range all {
		if res.Visible(k.layer, k.path) {
			files[k.path] = v
		}
	}
	return files, res, err
}

func TestWalkAppliesWhiteouts(t *testing.T) {
	img := image(t,
		layer(t, file{"etc/", ""}, file{"etc/os-release", "ID=debian\n"}, file{"opt/app/", ""}, file{"opt/app/a.py", "a"}, file{"opt/app/b.py", "b"},
			file{"usr/lib/libold.so", "old"}, file{"var/cache/", ""}, file{"var/cache/x", "x"}, file{"data/", ""}, file{"data/sub/", ""}, file{"data/sub/f", "f"}),
		layer(t, file{"opt/app/.wh.a.py", ""}, file{"usr/lib/libold.so", "new"}, file{"var/cache/.wh..wh..opq", ""}, file{"var/cache/y", "y"},
			file{".wh.data", ""}),
		layer(t, file{"data", "now a file"}),
	)
	files, res, err := walkAll(t, img, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"etc": "", "etc/os-release": "ID=debian\n", "opt/app": "", "opt/app/b.py": "b",
		"usr/lib/libold.so": "new", "var/cache": "", "var/cache/y": "y", "data": "now a file",
		"opt": "", "usr": "", "usr/lib": "", "var": "",
	}
	for k := range files {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s (deleted or hidden by an upper layer)", k)
		}
	}
	for k, v := range want {
		got, ok := files[k]
		if !ok && !slices.Contains([]string{"opt", "usr", "usr/lib", "var"}, k) {
			t.Errorf("missing %s", k)
		}
		if ok && got != v {
			t.Errorf("%s = %q, want %q (the newest layer wins)", k, got, v)
		}
	}
	if len(res.Layers) != 3 || res.Layers[0].Uncompressed == 0 {
		t.Errorf("layer stats: %+v", res.Layers)
	}
}

func TestWalkUnsafeAndLimits(t *testing.T) {
	img := image(t, layer(t, file{"../../etc/passwd", "x"}, file{"ok", "y"}, file{"a/../../b", "z"}))
	files, res, err := walkAll(t, img, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["ok"]; !ok || len(res.Unsafe) != 2 {
		t.Errorf("files %v unsafe %v", files, res.Unsafe)
	}

	var many []file
	for i := range 100_000 {
		many = append(many, file{fmt.Sprintf("d%d/f%d", i%100, i), ""})
	}
	big := image(t, layer(t, many...))
	files, _, err = walkAll(t, big, Limits{})
	if err != nil || len(files) < 100_000 {
		t.Fatalf("100,000 files: %d seen, %v", len(files), err)
	}
	if _, _, err := walkAll(t, big, Limits{MaxEntries: 50_000}); err == nil || !strings.Contains(err.Error(), "more than 50000 files") {
		t.Errorf("entry limit: %v", err)
	}
}

func TestWalkCompressionBomb(t *testing.T) {
	zeros := strings.Repeat("\x00", 16<<20)
	img := image(t, layer(t, file{"bomb", zeros}))
	_, _, err := walkAll(t, img, Limits{MinBombBytes: 1 << 20, MaxRatio: 100})
	if !errors.Is(err, ErrBomb) {
		t.Fatalf("err = %v, want ErrBomb", err)
	}
}

// gzLayer is a layer whose compressed bytes are given.
type gzLayer struct{ b []byte }

func (l gzLayer) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}, nil
}
func (l gzLayer) DiffID() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("b", 64)}, nil
}
func (l gzLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.b)), nil
}
func (l gzLayer) Uncompressed() (io.ReadCloser, error) {
	zr, err := gzip.NewReader(bytes.NewReader(l.b))
	if err != nil {
		return nil, err
	}
	return zr, nil
}
func (l gzLayer) Size() (int64, error)                { return int64(len(l.b)), nil }
func (l gzLayer) MediaType() (types.MediaType, error) { return types.DockerLayer, nil }

func TestWalkCorruptLayer(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	content := strings.Repeat("x", 1<<20)
	_ = tw.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	_ = zw.Close()
	truncated := buf.Bytes()[:buf.Len()/2]
	img := image(t, gzLayer{truncated})
	_, _, err := walkAll(t, img, Limits{})
	if err == nil || !strings.Contains(err.Error(), "layer 0") {
		t.Fatalf("truncated gzip: err = %v, want an error naming the layer", err)
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{"./usr/bin/x": "usr/bin/x", "/etc/": "etc", "usr//lib/./a": "usr/lib/a", ".": ""} {
		got, ok := cleanPath(in)
		if !ok || got != want {
			t.Errorf("cleanPath(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"../x", "a/../../x", "a/.."} {
		if _, ok := cleanPath(in); ok {
			t.Errorf("cleanPath(%q) accepted", in)
		}
	}
}

func TestWalkSymlinkLoopIsNotFollowed(t *testing.T) {
	img := image(t, layer(t, file{"a", "->b"}, file{"b", "->a"}, file{"usr/lib/libcuda.so", "->libcuda.so"}, file{"etc/os-release", "ID=debian\n"}))
	files, _, err := walkAll(t, img, Limits{})
	if err != nil || len(files) != 4 || files["etc/os-release"] != "ID=debian\n" {
		t.Fatalf("files %v err %v", files, err)
	}
}

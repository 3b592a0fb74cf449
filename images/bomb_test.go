package images_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// TestBombAgainstBytesRead serves a layer of 32 MiB of zeros (about 32
// KiB of gzip) whose manifest declares 1 TiB, chunked: the bomb ratio,
// judged against the declared size, would let it expand 30 million
// times; judged against the bytes read, it is a bomb.
func TestBombAgainstBytesRead(t *testing.T) {
	bad, err := testenv.StartBadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Close() })
	zeros := tarOf(t, map[string]string{"zeros": string(make([]byte, 32<<20))})
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(zeros)), nil })
	must(t, err)
	img, err := mutate.AppendLayers(empty.Image, l)
	must(t, err)
	tag, err := name.NewTag(bad.Host+"/bomb/img:honest", name.Insecure)
	must(t, err)
	must(t, remote.Write(tag, img))
	m, err := img.Manifest()
	must(t, err)
	m = m.DeepCopy()
	m.Layers[0].Size = 1 << 40
	raw, err := json.Marshal(m)
	must(t, err)
	must(t, remote.Put(tag.Context().Tag("lying"), rawManifest(raw)))
	bad.Set(testenv.ChunkedBlobs)

	ref, err := images.ParseRef(bad.Host + "/bomb/img:lying")
	must(t, err)
	o, err := images.Open(t.Context(), ref)
	must(t, err)
	defer o.Close()
	start := time.Now()
	_, err = validate.Walk(t.Context(), o.Image, validate.Limits{MinBombBytes: 4 << 20, MaxRatio: 200},
		func(validate.Entry, io.Reader) error { return nil })
	if !errors.Is(err, validate.ErrBomb) {
		t.Fatalf("got %v, want a bomb", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
}

// gzipZeros is a gzip layer of one file of size zeros, made as a stream.
func gzipZeros(t *testing.T, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	must(t, err)
	tw := tar.NewWriter(zw)
	must(t, tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}))
	_, err = io.Copy(tw, io.LimitReader(zeroReader{}, size))
	must(t, err)
	must(t, tw.Close())
	must(t, zw.Close())
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestConvertRefusesBomb converts a layer of 300 MiB of zeros (about 300
// KiB of gzip, 1,000 times): convert refuses it as validate does, at
// 256 MiB, and leaves nothing in its temporary directory.
func TestConvertRefusesBomb(t *testing.T) {
	host := newRegistry(t, nil)
	gz := gzipZeros(t, 300<<20)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(gz)), nil })
	must(t, err)
	img, err := mutate.AppendLayers(empty.Image, l)
	must(t, err)
	tag, err := name.NewTag(host+"/bomb/img:v1", name.Insecure)
	must(t, err)
	must(t, remote.Write(tag, img))
	tmp := t.TempDir()
	_, err = images.Convert(t.Context(), host+"/bomb/img:v1", host+"/bomb/img:zstd", matrix.CompressionZstd,
		images.WithTempDir(tmp), images.WithPlatform(nil))
	if !errors.Is(err, images.ErrBound) || !strings.Contains(err.Error(), "decompression bomb") {
		t.Fatalf("got %v, want the bomb bound", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left %d files in the temporary directory", len(left))
	}
}

package images_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/testenv"
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

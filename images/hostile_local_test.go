package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestHostileLayout opens oci: layouts whose index.json, config or layer
// is a device, a FIFO or too big (sparse files, nothing large written):
// each is refused at once with an error naming the bound, and nothing
// blocks.
func TestHostileLayout(t *testing.T) {
	fifo := func(p string) error {
		if err := os.Remove(p); err != nil {
			return err
		}
		return syscall.Mkfifo(p, 0o644)
	}
	devZero := func(p string) error {
		if err := os.Remove(p); err != nil {
			return err
		}
		return os.Symlink("/dev/zero", p)
	}
	sparse := func(size int64) func(string) error {
		return func(p string) error { return os.Truncate(p, size) }
	}
	index := func(dir string, _ *v1.Manifest) string { return filepath.Join(dir, "index.json") }
	config := func(dir string, m *v1.Manifest) string { return blobFile(dir, m.Config.Digest) }
	layer := func(dir string, m *v1.Manifest) string { return blobFile(dir, m.Layers[0].Digest) }
	for _, tc := range []struct {
		name   string
		file   func(string, *v1.Manifest) string
		spoil  func(string) error
		config int64 // declared config size; 0 keeps it
		want   error
	}{
		{"index.json is /dev/zero", index, devZero, 0, bound.ErrNotRegular},
		{"index.json is a FIFO", index, fifo, 0, bound.ErrNotRegular},
		{"index.json of 5 MiB", index, sparse(5 << 20), 0, bound.ErrBound},
		{"config is /dev/zero", config, devZero, 0, bound.ErrNotRegular},
		{"config is a FIFO", config, fifo, 0, bound.ErrNotRegular},
		{"config of 5 MiB", config, sparse(5 << 20), 5 << 20, bound.ErrBound},
		{"layer is a FIFO", layer, fifo, 0, bound.ErrNotRegular},
		{"layer is /dev/zero", layer, devZero, 0, bound.ErrNotRegular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeLayout(t, localImage(t))
			if tc.config != 0 {
				editManifest(t, dir, func(m *v1.Manifest) { m.Config.Size = tc.config })
			}
			must(t, tc.spoil(tc.file(dir, layoutManifest(t, dir))))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				ref, err := images.ParseRef("oci:" + dir)
				if err != nil {
					done <- err
					return
				}
				o, err := images.Open(ctx, ref)
				if err == nil {
					err = readLayers(o.Image)
					o.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want an error wrapping %v", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still reading after 10 s")
			}
		})
	}
}

// TestDockerArchiveLinkChain opens a docker-archive whose layer is
// reached through 20,000 symbolic links (go-containerregistry reads the
// archive again for each): refused at once, naming the bound.
func TestDockerArchiveLinkChain(t *testing.T) {
	file, err := testenv.LinkChainDockerArchive(t.TempDir(), 20_000)
	must(t, err)
	ref, err := images.ParseRef("docker-archive:" + file)
	must(t, err)
	done := make(chan error, 1)
	go func() {
		o, err := images.Open(t.Context(), ref)
		if err == nil {
			err = readLayers(o.Image)
			o.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, bound.ErrBound) || !strings.Contains(err.Error(), "more than 40 links") {
			t.Fatalf("got %v, want the bound on links", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still reading after 10 s")
	}
}

// TestOCIArchiveUnusedMember opens an oci-archive holding, besides its
// image, an 8 GiB member that nothing references (sparse: the archive
// takes a few KiB on disk): it is not unpacked.
func TestOCIArchiveUnusedMember(t *testing.T) {
	dir := writeLayout(t, localImage(t))
	file := filepath.Join(t.TempDir(), "image.oci.tar")
	must(t, tarLayout(dir, file))
	b, err := os.ReadFile(file)
	must(t, err)
	b = b[:len(b)-1024] // the end-of-archive blocks
	var hdr bytes.Buffer
	const big = 8 << 30
	must(t, tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "blobs/sha256/" + strings.Repeat("ab", 32), Mode: 0o644, Size: big, Typeflag: tar.TypeReg}))
	f, err := os.Create(file)
	must(t, err)
	_, err = f.Write(append(b, hdr.Bytes()...))
	must(t, err)
	_, err = f.Seek(big, io.SeekCurrent)
	must(t, err)
	_, err = f.Write(make([]byte, 1024))
	must(t, err)
	must(t, f.Close())

	tmp := t.TempDir()
	ref, err := images.ParseRef("oci-archive:" + file)
	must(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	o, err := images.Open(ctx, ref, images.WithTempDir(tmp))
	must(t, err)
	defer o.Close()
	must(t, readLayers(o.Image))
	var unpacked int64
	must(t, filepath.Walk(tmp, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			unpacked += fi.Size()
		}
		return err
	}))
	if unpacked > 1<<20 {
		t.Errorf("%d bytes unpacked", unpacked)
	}
}

// TestArchiveReadsEndOnCancel opens archives under a context a signal
// cancelled: the reads end with the signal as the cause, and nothing is
// left unpacked.
func TestArchiveReadsEndOnCancel(t *testing.T) {
	dir := writeLayout(t, localImage(t))
	oci := filepath.Join(t.TempDir(), "image.oci.tar")
	must(t, tarLayout(dir, oci))
	errSignal := errors.New("interrupted by SIGTERM")
	for _, src := range []string{"oci-archive:" + oci} {
		transport, _, _ := strings.Cut(src, ":")
		t.Run(transport, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			cancel(errSignal)
			tmp := t.TempDir()
			ref, err := images.ParseRef(src)
			must(t, err)
			_, err = images.Open(ctx, ref, images.WithTempDir(tmp))
			if !errors.Is(err, errSignal) {
				t.Fatalf("got %v, want the signal", err)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left %d files", len(left))
			}
		})
	}
}

// TestDockerArchiveSparseLayer opens docker-archives whose layer.tar
// expands to 64 GiB from a few KiB on disk (a file with holes, or a PAX
// sparse member): go-containerregistry gzips an uncompressed layer whole
// to learn its digest, before any check could see its content, so the
// layer is judged first, on the bytes the archive stores, against the
// bomb bound every layer has (bound.MaxRatio past bound.MinBombBytes).
func TestDockerArchiveSparseLayer(t *testing.T) {
	for _, tc := range []struct {
		name string
		pax  bool
	}{
		{"layer.tar with holes", false},
		{"layer.tar a PAX sparse member", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, err := testenv.SparseDockerArchive(t.TempDir(), 64<<30, tc.pax)
			must(t, err)
			ref, err := images.ParseRef("docker-archive:" + file)
			must(t, err)
			done := make(chan error, 1)
			go func() {
				o, err := images.Open(t.Context(), ref)
				if err == nil {
					_, err = func() (v1.Hash, error) {
						defer o.Close()
						layers, err := o.Image.Layers()
						if err != nil {
							return v1.Hash{}, err
						}
						return layers[0].Digest() // gzips the layer whole
					}()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, bound.ErrBound) || !strings.Contains(err.Error(), "layer.tar") || !strings.Contains(err.Error(), "200 times") {
					t.Fatalf("got %v, want the bomb bound naming layer.tar", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still reading after 10 s")
			}
		})
	}
}

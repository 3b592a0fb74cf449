package images_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
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
	file := filepath.Join(t.TempDir(), "chain.tar")
	f, err := os.Create(file)
	must(t, err)
	tw := tar.NewWriter(f)
	put := func(name string, b []byte) {
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(b)
		must(t, err)
	}
	put("manifest.json", []byte(`[{"Config":"config.json","RepoTags":["x:y"],"Layers":["l0"]}]`))
	put("config.json", []byte(`{"rootfs":{"type":"layers","diff_ids":["sha256:0000000000000000000000000000000000000000000000000000000000000000"]}}`))
	const n = 20_000
	for i := range n {
		must(t, tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("l%d", i), Linkname: fmt.Sprintf("l%d", i+1), Typeflag: tar.TypeSymlink, Mode: 0o777}))
	}
	put(fmt.Sprintf("l%d", n), []byte("not a tar"))
	must(t, tw.Close())
	must(t, f.Close())

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

// sparseDockerArchive writes a docker-archive whose layer.tar member
// declares size bytes, stored as a hole (os.Truncate): nothing large is
// written. pax makes layer.tar a PAX sparse member (GNU 1.0) instead: a
// few KiB of archive that a tar reader expands to size bytes of zeros.
func sparseDockerArchive(t *testing.T, size int64, pax bool) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sparse.tar")
	f, err := os.Create(file)
	must(t, err)
	tw := tar.NewWriter(f)
	put := func(name string, b []byte) {
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(b)
		must(t, err)
	}
	put("manifest.json", []byte(`[{"Config":"config.json","RepoTags":["x:y"],"Layers":["layer.tar"]}]`))
	put("config.json", []byte(`{"rootfs":{"type":"layers","diff_ids":["sha256:0000000000000000000000000000000000000000000000000000000000000000"]}}`))
	must(t, tw.Flush()) // no Close: the members below are written by hand
	if pax {
		writeSparseMember(t, f, "layer.tar", size)
		must(t, f.Close())
		return file
	}
	var hdr bytes.Buffer
	must(t, tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "layer.tar", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}))
	_, err = f.Write(hdr.Bytes())
	must(t, err)
	end, err := f.Seek(0, io.SeekCurrent)
	must(t, err)
	must(t, f.Close())
	must(t, os.Truncate(file, end+size+1024)) // the member's holes, then the end-of-archive blocks
	return file
}

// writeSparseMember writes name as a PAX sparse member (GNU format 1.0)
// of size bytes, all a hole, and the end-of-archive blocks: a PAX header
// (written by hand: tar.Writer writes no sparse files), then a member
// holding only the sparse map.
func writeSparseMember(t *testing.T, f *os.File, name string, size int64) {
	t.Helper()
	var recs bytes.Buffer
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"}, {"GNU.sparse.name", name}, {"GNU.sparse.realsize", fmt.Sprint(size)}} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec) + 2
		if len(fmt.Sprint(n)+rec) != n {
			n++
		}
		fmt.Fprintf(&recs, "%d%s", n, rec)
	}
	pad := func(b []byte) []byte { return append(b, make([]byte, (512-len(b)%512)%512)...) }
	header := func(name string, size int64, flag byte) []byte {
		var b bytes.Buffer
		must(t, tar.NewWriter(&b).WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}))
		h := b.Bytes()[:512]
		h[156] = flag // tar.Writer refuses to write a TypeXHeader itself
		copy(h[148:156], "        ")
		sum := 0
		for _, c := range h {
			sum += int(c)
		}
		copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
		return h
	}
	sparseMap := pad([]byte(fmt.Sprintf("1\n%d\n0\n", size)))
	var out bytes.Buffer
	out.Write(header("PaxHeaders/"+name, int64(recs.Len()), tar.TypeXHeader))
	out.Write(pad(recs.Bytes()))
	out.Write(header("GNUSparseFile.0/"+name, int64(len(sparseMap)), tar.TypeReg))
	out.Write(sparseMap)
	out.Write(make([]byte, 1024))
	_, err := f.Write(out.Bytes())
	must(t, err)
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
			file := sparseDockerArchive(t, 64<<30, tc.pax)
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

package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// hostileLib is where the hostile images put their CUDA library: a name
// validate scans for device code.
const hostileLib = "usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublasLt.so.12.4.5.8"

// fatbinContainer is a fat-binary container (magic, version 1, header 16,
// declared: the size of what follows) holding one SASS entry header for
// arch whose payload size is payload, then body.
func fatbinContainer(declared uint64, arch uint32, payload uint64, body []byte) []byte {
	e := make([]byte, 64)
	binary.LittleEndian.PutUint16(e[0:], 2) // ELF (SASS)
	binary.LittleEndian.PutUint16(e[2:], 0x0101)
	binary.LittleEndian.PutUint32(e[4:], 64)
	binary.LittleEndian.PutUint64(e[8:], payload)
	binary.LittleEndian.PutUint32(e[28:], arch)
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h[0:], 0xBA55ED50)
	binary.LittleEndian.PutUint16(h[4:], 1)
	binary.LittleEndian.PutUint16(h[6:], 16)
	binary.LittleEndian.PutUint64(h[8:], declared)
	return append(append(h, e...), body...)
}

// elfWith is an ELF64 header claiming section headers up to shEnd, 64 KiB
// of padding, then body.
func elfWith(shEnd uint64, body ...[]byte) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1
	binary.LittleEndian.PutUint64(h[0x28:], shEnd-640)
	binary.LittleEndian.PutUint16(h[0x3A:], 64)
	binary.LittleEndian.PutUint16(h[0x3C:], 10)
	out := slices.Concat(h, make([]byte, 64<<10))
	for _, b := range body {
		out = append(out, b...)
	}
	return out
}

// pax is one PAX record.
func pax(k, v string) string {
	s := " " + k + "=" + v + "\n"
	n := len(s) + 1
	for len(strconv.Itoa(n))+len(s) != n {
		n++
	}
	return strconv.Itoa(n) + s
}

// retar rewrites each header checksum of a hand-edited tar stream.
func retar(b []byte, headers ...int) []byte {
	for _, off := range headers {
		h := b[off : off+512]
		copy(h[148:156], "        ")
		sum := 0
		for _, c := range h {
			sum += int(c)
		}
		copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	}
	return b
}

// TestValidateHostileImages runs the real gpuimg validate on images made
// to break it: damaged fat binaries, an ELF cut short, a sparse library
// of a terabyte of holes, a tar header declaring 8 GiB, a zstd layer, and
// a 128 MiB library. Each run must exit 0, 1 or 2 without a panic, and
// its peak memory (the kernel's max RSS of the process, measured through
// testenv.Measure, not from this test binary's own rusage of its child)
// must stay bounded whatever the layer's size. TestSparseDeviceLibIsABomb and the fuzz
// targets cover the same inputs in process; this is the whole binary.
func TestValidateHostileImages(t *testing.T) {
	testenv.Require(t, "builds the gpuimg binary and a 128 MiB image", testenv.Slow)
	// Parallel: its images and files are its own, and it sets no process
	// environment.
	t.Parallel()
	bin := gpuimgBinary(t)
	dir := t.TempDir()
	osRelease := tarEntry("etc/os-release", []byte("ID=ubuntu\nVERSION_ID=\"22.04\"\n"))

	good := fatbinContainer(64+24, 80, 24, make([]byte, 24))
	sparse := func(realsize int64) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		recs := pax("GNU.sparse.major", "1") + pax("GNU.sparse.minor", "0") + pax("GNU.sparse.name", hostileLib) + pax("GNU.sparse.realsize", strconv.FormatInt(realsize, 10))
		_ = tw.WriteHeader(&tar.Header{Name: "PaxHeaders/0", Typeflag: tar.TypeReg, Size: int64(len(recs)), Format: tar.FormatUSTAR})
		_, _ = tw.Write([]byte(recs))
		data := append([]byte("1\n0\n0\n"), make([]byte, 506)...)
		_ = tw.WriteHeader(&tar.Header{Name: "GNUSparseFile.0/0", Typeflag: tar.TypeReg, Size: int64(len(data)), Format: tar.FormatUSTAR})
		_, _ = tw.Write(data)
		_ = tw.Close()
		b := buf.Bytes()
		b[156] = tar.TypeXHeader
		return retar(b, 0)
	}
	declared8G := func() []byte {
		b := tarEntry(hostileLib, elfWith(704, good))
		b = b[:len(b)-1024]                                                  // the stream ends inside the file
		copy(b[124:136], "\x80\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00") // base-256: 8 GiB
		return retar(b, 0)
	}
	manyMagics := bytes.Repeat(fatbinContainer(1<<62, 90, 1<<62, nil), (4<<20)/80)

	type hostile struct {
		name  string
		layer []byte // an uncompressed tar stream
		zstd  bool
		want  string // in the report or the error
	}
	const unreadable = "could not be read, so their GPU architectures are unknown"
	cases := []hostile{
		{"fat binary entry overrunning its container", tarEntry(hostileLib, elfWith(704, good, fatbinContainer(64, 90, 1<<40, nil))), false, "1099511627776-byte payload"},
		{"fat binary container declaring 2^63 bytes", tarEntry(hostileLib, elfWith(704, fatbinContainer(1<<63, 90, 24, make([]byte, 24)))), false, "size 9223372036854775808"},
		{"4 MiB of fat binary headers", tarEntry(hostileLib, elfWith(704, manyMagics)), false, unreadable},
		{"ELF cut short", tarEntry(hostileLib, elfWith(1<<40, good)), false, "truncated ELF"},
		{"sparse library of 1 TiB of holes", sparse(1 << 40), false, "(sparse files)"},
		{"tar header declaring 8 GiB", declared8G(), false, "unexpected EOF"},
		{"zstd layer with a damaged fat binary", tarEntry(hostileLib, elfWith(704, good, fatbinContainer(1<<62, 90, 7, nil))), true, unreadable},
	}
	rss := func(name, want string, layers ...v1.Layer) (maxRSS int64) {
		t.Helper()
		img, err := mutate.AppendLayers(empty.Image, layers...)
		must(t, err)
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		lp, err := layout.Write(p, empty.Index)
		must(t, err)
		must(t, lp.AppendImage(img))
		cmd, err := testenv.Measure(t.Context(), dir, bin, "validate", "oci:"+p, "--gpu", "h100", "-o", "json")
		must(t, err)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
			t.Fatalf("%s: %v", name, err)
		}
		code := cmd.ProcessState.ExitCode()
		if code < 0 || code > 2 || strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "goroutine ") {
			t.Errorf("%s: exit %d:\n%s", name, code, lastLines(stderr.String(), 20))
		}
		maxRSS, err = cmd.MaxRSS()
		must(t, err)
		if !strings.Contains(stdout.String()+stderr.String(), want) {
			t.Errorf("%s: neither the report nor the error says %q:\n%s%s", name, want, stdout.String(), stderr.String())
		}
		t.Logf("%s: exit %d, max RSS %d MiB %s", name, code, maxRSS>>20, strings.TrimSpace(lastLines(stderr.String(), 1)))
		return maxRSS
	}
	layerOf := func(b []byte, zstd bool) v1.Layer {
		var opts []tarball.LayerOption
		if zstd {
			opts = append(opts, tarball.WithCompression(compression.ZStd))
		}
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, opts...)
		must(t, err)
		return l
	}
	const limit = 256 << 20
	small := rss("small", `"sm_80"`, layerOf(osRelease, false), layerOf(tarEntry(hostileLib, elfWith(704, good)), false))
	for _, tc := range cases {
		if m := rss(tc.name, tc.want, layerOf(osRelease, false), layerOf(tc.layer, tc.zstd)); m > limit {
			t.Errorf("%s: max RSS %d MiB, over %d MiB", tc.name, m>>20, limit>>20)
		}
	}

	// 128 MiB of library: a random 1 MiB block (with a fat binary in it)
	// over and over; gzip cannot shrink it, so it is no bomb.
	block := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range block {
		block[i] = byte(r.Uint32())
	}
	copy(block[4096:], good)
	big := filepath.Join(dir, "big.tar")
	f, err := os.Create(big)
	must(t, err)
	tw := tar.NewWriter(f)
	must(t, tw.WriteHeader(&tar.Header{Name: hostileLib, Typeflag: tar.TypeReg, Mode: 0o644, Size: 128 << 20}))
	for range 128 {
		_, err := tw.Write(block)
		must(t, err)
	}
	must(t, tw.Close())
	must(t, f.Close())
	bigLayer, err := tarball.LayerFromFile(big)
	must(t, err)
	large := rss("128 MiB library", `"sm_80"`, layerOf(osRelease, false), bigLayer)
	if large > small+64<<20 || large > limit {
		t.Errorf("max RSS %d MiB for a 128 MiB layer, %d MiB for a small one: memory grows with the layer", large>>20, small>>20)
	}
}

// tarEntry is a tar stream of one regular file.
func tarEntry(name string, content []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))})
	_, _ = tw.Write(content)
	_ = tw.Close()
	return buf.Bytes()
}

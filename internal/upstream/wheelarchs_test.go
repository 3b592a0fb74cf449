package upstream

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// scanArchs is validate's fat-binary scanner, as the CLI passes it.
func scanArchs(r io.Reader) ([]string, []string, error) {
	k, err := validate.ScanFatbin(r)
	return k.SASS, k.PTX, err
}

// fatbin is a fat binary container in the layout validate/fatbin.go
// documents: a 16-byte header, then per entry a 64-byte header (kind 2
// ELF or 1 PTX, header size, payload size, arch at 28) and its payload.
func fatbin(entries ...[2]int) []byte {
	var body bytes.Buffer
	for _, e := range entries {
		payload := bytes.Repeat([]byte("\x7fELF cubin "), 40)
		h := make([]byte, 64)
		binary.LittleEndian.PutUint16(h[0:], uint16(e[0]))
		binary.LittleEndian.PutUint16(h[2:], 0x0101)
		binary.LittleEndian.PutUint32(h[4:], 64)
		binary.LittleEndian.PutUint64(h[8:], uint64(len(payload)))
		binary.LittleEndian.PutUint32(h[28:], uint32(e[1]))
		body.Write(h)
		body.Write(payload)
	}
	for body.Len()%8 != 0 {
		body.WriteByte(0)
	}
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h[0:], 0xBA55ED50)
	binary.LittleEndian.PutUint16(h[4:], 1)
	binary.LittleEndian.PutUint16(h[6:], 16)
	binary.LittleEndian.PutUint64(h[8:], uint64(body.Len()))
	return append(h, body.Bytes()...)
}

type wheelZip struct {
	b        []byte
	dirStart int64 // where the central directory starts
	member   int64 // libtorch_cuda.so's compressed size
}

// torchWheel builds a wheel in torch's layout: many small files (headers,
// Python sources) whose entries make the central directory large, a big
// stored libtorch_cpu.so, torch/lib/libtorch_cuda.so (an ELF-ish file with
// fat binaries for sm_80, sm_90 + PTX, sm_100 between random bytes) with
// method, and the dist-info files, RECORD last.
func torchWheel(t *testing.T, small int, method uint16) wheelZip {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return b
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, m uint16, data []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: m})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	for i := range small {
		add(fmt.Sprintf("torch/include/ATen/ops/op_%05d_native.h", i), zip.Deflate, []byte("#pragma once\n"))
	}
	add("torch/lib/libtorch_cpu.so", zip.Store, random(12<<20))
	var so bytes.Buffer
	so.Write([]byte("\x7fELF\x02\x01\x01"))
	so.Write(random(1<<20 - 7))
	so.Write(fatbin([2]int{2, 80}, [2]int{2, 90}, [2]int{1, 90}))
	for so.Len()%8 != 0 {
		so.WriteByte(0)
	}
	so.Write(random(512 << 10))
	so.Write(fatbin([2]int{2, 100}))
	so.Write(make([]byte, 4096))
	add(libtorchCUDA, method, so.Bytes())
	add("torch-2.15.0+cu126.dist-info/METADATA", zip.Deflate, []byte("Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0+cu126\n"))
	add("torch-2.15.0+cu126.dist-info/WHEEL", zip.Deflate, []byte("Wheel-Version: 1.0\nGenerator: bdist_wheel\nRoot-Is-Purelib: false\nTag: cp313-cp313-manylinux_2_28_x86_64\n"))
	record := []byte("torch/__init__.py,sha256=x,1\n")
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "torch-2.15.0+cu126.dist-info/RECORD", Method: zip.Store,
		CRC32: crc32.ChecksumIEEE(record), CompressedSize64: uint64(len(record)), UncompressedSize64: uint64(len(record))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(record); err != nil {
		t.Fatal(err)
	}
	if err := zw.Flush(); err != nil {
		t.Fatal(err)
	}
	dirStart := int64(buf.Len()) // a raw entry has no data descriptor: the directory comes next
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(zr.File, func(f *zip.File) bool { return f.Name == libtorchCUDA })
	return wheelZip{b: buf.Bytes(), dirStart: dirStart, member: int64(zr.File[i].CompressedSize64)}
}

// TestWheelArchsByRange reads libtorch_cuda.so's architectures from a
// wheel served by a loopback server that honours Range, and counts the
// bytes: exactly the tail (or the whole directory, if longer), the
// member's 30-byte local header and its compressed data.
func TestWheelArchsByRange(t *testing.T) {
	tests := []struct {
		name   string
		small  int
		method uint16
	}{
		{"deflated member, directory longer than the tail", 3000, zip.Deflate},
		{"stored member, small directory", 10, zip.Store},
		{"zip64 (more than 65,535 entries)", 66000, zip.Deflate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.small > 10000 {
				testenv.Require(t, "builds a 66,000-entry zip", testenv.Slow)
			}
			wz := torchWheel(t, tt.small, tt.method)
			f := newFakeUpstream(t)
			path := "/whl/cu126/torch-2.15.0+cu126-cp313-cp313-manylinux_2_28_x86_64.whl"
			f.files[path] = wz.b
			o, err := makeOptions([]Option{WithWheelArchs(scanArchs)})
			if err != nil {
				t.Fatal(err)
			}
			sass, ptx, fetched, err := o.wheelArchs(t.Context(), f.srv.URL+strings.ReplaceAll(path, "+", "%2B"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sass, []string{"sm_80", "sm_90", "sm_100"}) || !slices.Equal(ptx, []string{"sm_90"}) {
				t.Errorf("sass %v ptx %v", sass, ptx)
			}
			size := int64(len(wz.b))
			want := max(min(size, tailSize), size-wz.dirStart) + 30 + wz.member
			if served := f.wheelBytes(); fetched != want || served != want {
				t.Errorf("fetched %d bytes (server sent %d), want %d (directory and end records %d, local header 30, member %d) of %d",
					fetched, served, want, size-wz.dirStart, wz.member, size)
			}
			if fetched > size-12<<20+tailSize {
				t.Errorf("fetched %d of %d bytes: more than all but libtorch_cpu.so", fetched, size)
			}
		})
	}
}

// TestWheelArchsRefuses: a server that ignores Range, a wheel without
// libtorch_cuda.so and a member whose bytes do not match its CRC are
// errors naming the wheel; nothing is scanned from them.
func TestWheelArchsRefuses(t *testing.T) {
	good := torchWheel(t, 10, zip.Store)
	noCUDA := func() []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create("torch/lib/libtorch_cpu.so")
		_, _ = w.Write([]byte("cpu only"))
		_ = zw.Close()
		return buf.Bytes()
	}()
	corrupt := slices.Clone(good.b)
	i := bytes.Index(corrupt, []byte{0x50, 0xED, 0x55, 0xBA})
	corrupt[i+200] ^= 0xFF
	tests := []struct {
		name    string
		b       []byte
		noRange bool
		want    string
	}{
		{"server ignores Range", good.b, true, "does not honour Range"},
		{"no libtorch_cuda.so", noCUDA, false, "has no torch/lib/libtorch_cuda.so"},
		{"member bytes do not match the CRC", corrupt, false, "CRC-32"},
		{"not a zip", bytes.Repeat([]byte("not a zip "), 1000), false, "not a zip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeUpstream(t)
			f.noRange = tt.noRange
			path := "/whl/cu126/torch-2.15.0+cu126-cp313-cp313-manylinux_2_28_x86_64.whl"
			f.files[path] = tt.b
			o, _ := makeOptions([]Option{WithWheelArchs(scanArchs)})
			u := f.srv.URL + strings.ReplaceAll(path, "+", "%2B")
			_, _, _, err := o.wheelArchs(t.Context(), u)
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), u) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want a FormatError naming %s and %q", err, u, tt.want)
			}
		})
	}
}

// TestUpdateReadsWheelArchs: with WithWheelArchs, a new torch variant's
// archs and ptx are those of its wheel, and the note says how many bytes
// were fetched; nothing is copied from an older release.
func TestUpdateReadsWheelArchs(t *testing.T) {
	db := builtin(t)
	f := newFakeUpstream(t)
	f.mirrorTorch(db)
	nt := db.Torch[0]
	v := bump(nt.Version)
	tag := "cu" + cudaTagOf(nt.Variants[0].CUDA)
	path := f.addWheel("torch", v, tag, "cp313", "manylinux_2_28_x86_64", "nvidia-cudnn-cu12==9.40.0.1")
	wz := torchWheel(t, 100, zip.Deflate)
	f.files[path] = wz.b
	f.addWheel("torchvision", "0.1.0", tag, "cp313", "manylinux_2_28_x86_64", "torch==0.0.1")
	f.addWheel("torchaudio", "0.1.0", tag, "cp313", "manylinux_2_28_x86_64", "torch==0.0.1")
	ov, err := Update(t.Context(), db, WithSources(SourceTorch), WithTorchIndexURL(f.torchURL()), WithClock(testDay), WithWheelArchs(scanArchs))
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.File.Torch) != 1 || len(ov.File.Torch[0].Variants) != 1 {
		t.Fatalf("rows %+v", ov.File.Torch)
	}
	tv := ov.File.Torch[0].Variants[0]
	if !slices.Equal(tv.Archs, []string{"sm_80", "sm_90", "sm_100"}) || !slices.Equal(tv.PTX, []string{"sm_90"}) {
		t.Errorf("archs %v ptx %v", tv.Archs, tv.PTX)
	}
	served := f.wheelBytes()
	if !slices.ContainsFunc(tv.Notes, func(n string) bool {
		return strings.Contains(n, "read from torch/lib/libtorch_cuda.so") && strings.Contains(n, fmt.Sprintf("(%d bytes fetched", served))
	}) {
		t.Errorf("notes %q do not say where the archs came from and what was fetched (%d)", tv.Notes, served)
	}
	if slices.ContainsFunc(ov.Unfilled, func(u Unfilled) bool { return u.Field == "archs" }) {
		t.Errorf("archs reported unfilled: %v", ov.Unfilled)
	}
	if _, err := matrix.ParseFile("o", must(ov.Marshal())); err != nil {
		t.Error(err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

package validate

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

// elfLib is a little-endian ELF64 header whose section header table
// ends at shEnd, then body, padded past the 64 KiB that makes a file
// worth scanning.
func elfLib(shEnd uint64, body ...[]byte) string {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1
	binary.LittleEndian.PutUint64(h[0x28:], shEnd-64*10)
	binary.LittleEndian.PutUint16(h[0x3A:], 64)
	binary.LittleEndian.PutUint16(h[0x3C:], 10)
	var b bytes.Buffer
	b.Write(h)
	b.Write(make([]byte, 64<<10))
	for _, x := range body {
		b.Write(x)
	}
	return b.String()
}

// TestUnreadableDeviceCode: a library whose fat binary is damaged, or
// whose ELF is cut short, is a warning naming the file, the layer and
// what could not be read, with the kernels read before the damage; an
// image whose only CUDA library is damaged is not "no device code".
func TestUnreadableDeviceCode(t *testing.T) {
	good := container([][3]int{{kindELF, 80}, {kindPTX, 80}})
	bad := container([][3]int{{kindELF, 90}})
	binary.LittleEndian.PutUint32(bad[fatbinHeaderSize+4:], 7) // a 7-byte entry header
	badHeader := container([][3]int{{kindELF, 90}})
	binary.LittleEndian.PutUint16(badHeader[4:], 9) // version 9
	tests := []struct {
		name    string
		content string
		msgHas  []string
	}{
		{"damaged entry", elfLib(1<<30, good, make([]byte, 8-len(good)%8), bad), []string{"entry at offset 0 of a", "has a 7-byte header", "read before the damage: sm_80 sm_80 (PTX)"}},
		{"damaged container header", elfLib(1<<30, good, make([]byte, 8-len(good)%8), badHeader), []string{"container header at byte", "has version 9", "read before the damage: sm_80"}},
		{"container cut short", elfLib(1<<30, good, make([]byte, 8-len(good)%8), bad[:40]), []string{"the file ends inside the", "read before the damage: sm_80"}},
		{"truncated ELF", elfLib(1<<30, good), []string{"truncated ELF: its section headers end at byte 1073741824, the file has", "read before the damage: sm_80"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lib := "usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublasLt.so.12.4.5.8"
			img := image(t, layer(t, file{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"}), layer(t, file{lib, tc.content}))
			r, err := Inspect(t.Context(), img, Options{DB: db(t), GPU: "h100"})
			must(t, err)
			cfg, err := img.ConfigFile()
			must(t, err)
			var dev, gpu *Check
			for i, c := range r.Checks {
				switch c.Name {
				case "device-code":
					dev = &r.Checks[i]
				case "gpu":
					gpu = &r.Checks[i]
				}
			}
			if dev == nil || dev.Status != matrix.Warn {
				t.Fatalf("device-code check = %+v, want a warning: %+v", dev, r.Checks)
			}
			want := append([]string{"/" + lib + " (layer 1, " + shortDigest(cfg.RootFS.DiffIDs[1].String()) + ")"}, tc.msgHas...)
			for _, w := range want {
				if !strings.Contains(dev.Message, w) {
					t.Errorf("device-code message lacks %q:\n%s", w, dev.Message)
				}
			}
			if gpu == nil || strings.Contains(gpu.Message, "no CUDA device code found") || !strings.Contains(gpu.Message, "could not be read") {
				t.Errorf("gpu check = %+v", gpu)
			}
			if len(r.Found.Unreadable) != 1 || r.Found.Unreadable[0].Kernels.Empty() {
				t.Errorf("found.unreadable = %+v", r.Found.Unreadable)
			}
		})
	}
	// An intact library is read as before, with no warning.
	img := image(t, layer(t, file{"usr/lib/libcublasLt.so.12", elfLib(64<<10, container([][3]int{{kindELF, 90}}))}))
	r, err := Inspect(t.Context(), img, Options{DB: db(t), GPU: "h100"})
	must(t, err)
	if st := statuses(r); st["device-code"] != "" || st["gpu"] != matrix.Pass {
		t.Errorf("intact library: %+v", r.Checks)
	}
}

// paxRecord is one PAX extended header record ("NN key=value\n").
func paxRecord(k, v string) string {
	s := " " + k + "=" + v + "\n"
	n := len(s) + 1
	for len(strconv.Itoa(n))+len(s) != n {
		n++
	}
	return strconv.Itoa(n) + s
}

// sparseLayer is a tar stream with one PAX (GNU 1.0) sparse file: a
// single hole of realsize bytes, about 1.5 KiB on the wire. archive/tar's
// Writer cannot write sparse files, so the extended header is made by
// hand.
func sparseLayer(name string, realsize int64) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	recs := paxRecord("GNU.sparse.major", "1") + paxRecord("GNU.sparse.minor", "0") + paxRecord("GNU.sparse.name", name) + paxRecord("GNU.sparse.realsize", strconv.FormatInt(realsize, 10))
	_ = tw.WriteHeader(&tar.Header{Name: "PaxHeaders/0", Typeflag: tar.TypeReg, Size: int64(len(recs)), Format: tar.FormatUSTAR})
	_, _ = tw.Write([]byte(recs))
	data := append([]byte("1\n0\n0\n"), make([]byte, 506)...) // one entry: offset 0, length 0
	_ = tw.WriteHeader(&tar.Header{Name: "GNUSparseFile.0/0", Typeflag: tar.TypeReg, Size: int64(len(data)), Format: tar.FormatUSTAR})
	_, _ = tw.Write(data)
	_ = tw.Close()
	b := buf.Bytes()
	b[156] = tar.TypeXHeader // the first header is the extended header
	return fixTarChecksums(b)
}

// TestSparseDeviceLibIsABomb: a sparse CUDA library declaring a petabyte
// of holes compresses to almost nothing and reads as zeros without end;
// the walk stops it as a bomb, quickly, instead of scanning it.
func TestSparseDeviceLibIsABomb(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(sparseLayer("usr/lib/x86_64-linux-gnu/libcublas.so.12", 1<<50))
	_ = zw.Close()
	img := image(t, gzLayer{gz.Bytes()})
	start := time.Now()
	_, err := Inspect(t.Context(), img, Options{DB: db(t), Limits: Limits{MinBombBytes: 64 << 20}})
	if !errors.Is(err, ErrBomb) || !strings.Contains(err.Error(), "sparse") {
		t.Fatalf("err = %v, want ErrBomb for sparse files", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v", took)
	}
}

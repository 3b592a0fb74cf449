package validate

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestScanFatbinMatchesCuobjdump reads NVIDIA's real libraries (Debian's
// CUDA 11.8 packages) and compares the architectures found with what
// NVIDIA's cuobjdump lists for the same files.
func TestScanFatbinMatchesCuobjdump(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Debian's CUDA packages")
	}
	root, err := testenv.DebianCUDA(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range []string{"libcurand.so.10.3.0.86", "libcublas.so.11.11.3.6"} {
		t.Run(lib, func(t *testing.T) {
			if cubins := crossCheckCuobjdump(t, testenv.Cuobjdump(root), filepath.Join(root, "usr/lib/x86_64-linux-gnu", lib)); cubins == 0 {
				t.Fatal("cuobjdump lists no cubins: the cross-check proves nothing")
			}
		})
	}
}

// crossCheckCuobjdump compares ScanFatbin's architectures for the file p
// with what cuobjdump --list-elf and --list-ptx list, and returns how many
// cubins cuobjdump listed.
func crossCheckCuobjdump(t *testing.T, cuobjdump, p string) int {
	t.Helper()
	re := regexp.MustCompile(`\.(sm_[0-9]+[af]?)\.(cubin|ptx)`)
	want := map[string]map[string]int{"cubin": {}, "ptx": {}}
	for _, flag := range []string{"--list-elf", "--list-ptx"} {
		out, err := exec.Command(cuobjdump, flag, p).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "does not contain device code") {
			t.Fatalf("cuobjdump %s %s: %v\n%s", flag, p, err, out)
		}
		for _, m := range re.FindAllStringSubmatch(string(out), -1) {
			want[m[2]][m[1]]++
		}
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k, err := ScanFatbin(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: cuobjdump cubins %v ptx %v; gpuimg cubins %v ptx %v", p, want["cubin"], want["ptx"], k.ELFCount, k.PTXCount)
	n := 0
	for _, c := range want["cubin"] {
		n += c
	}
	for _, c := range []struct {
		what      string
		got, want map[string]int
	}{{"cubins", k.ELFCount, want["cubin"]}, {"PTX", k.PTXCount, want["ptx"]}} {
		if len(c.got) != 0 || len(c.want) != 0 {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%s per arch = %v, cuobjdump says %v", c.what, c.got, c.want)
			}
		}
	}
	return n
}

// container builds a fat binary with one entry per (kind, arch).
func container(entries [][2]int) []byte {
	var body bytes.Buffer
	for _, e := range entries {
		payload := bytes.Repeat([]byte{0xBA, 0x55, 0xED, 0x50, 1, 0, 16, 0}, 3) // looks like magic: must be skipped
		h := make([]byte, 64)
		binary.LittleEndian.PutUint16(h[0:], uint16(e[0]))
		binary.LittleEndian.PutUint16(h[2:], 0x0101)
		binary.LittleEndian.PutUint32(h[4:], 64)
		binary.LittleEndian.PutUint64(h[8:], uint64(len(payload)))
		binary.LittleEndian.PutUint32(h[28:], uint32(e[1]))
		body.Write(h)
		body.Write(payload)
	}
	h := make([]byte, 16)
	binary.LittleEndian.PutUint32(h[0:], fatbinMagic)
	binary.LittleEndian.PutUint16(h[4:], 1)
	binary.LittleEndian.PutUint16(h[6:], 16)
	binary.LittleEndian.PutUint64(h[8:], uint64(body.Len()))
	return append(h, body.Bytes()...)
}

func TestScanFatbinSynthetic(t *testing.T) {
	noise := bytes.Repeat([]byte("ELF-ish noise 12"), 64<<10) // 1 MiB, spans the scan window
	var buf bytes.Buffer
	buf.Write(noise)
	buf.Write(container([][2]int{{kindELF, 80}, {kindELF, 90}, {kindPTX, 90}}))
	buf.Write(make([]byte, 8))
	buf.Write(noise[:300<<10])
	buf.Write(container([][2]int{{kindELFAlt, 100}, {kindELF, 80}}))
	k, err := ScanFatbin(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sm_80", "sm_90", "sm_100"}; !reflect.DeepEqual(k.SASS, want) {
		t.Errorf("SASS = %v, want %v", k.SASS, want)
	}
	if want := map[string]int{"sm_80": 2, "sm_90": 1, "sm_100": 1}; !reflect.DeepEqual(k.ELFCount, want) {
		t.Errorf("ELF counts = %v, want %v", k.ELFCount, want)
	}
	if want := []string{"sm_90"}; !reflect.DeepEqual(k.PTX, want) {
		t.Errorf("PTX = %v", k.PTX)
	}

	// A truncated container and random data end cleanly.
	c := container([][2]int{{kindELF, 86}})
	k, err = ScanFatbin(bytes.NewReader(c[:len(c)-10]))
	if err == nil && len(k.SASS) > 0 && k.SASS[0] != "sm_86" {
		t.Errorf("truncated container: %v", k)
	}
	k, err = ScanFatbin(bytes.NewReader(noise))
	if err != nil || !k.Empty() {
		t.Errorf("noise: %v %v", k, err)
	}
}

// TestScanFatbinMatchesCuobjdumpOn is the same cross-check on any
// libraries, for a machine with a CUDA toolkit: GPUIMG_FATBIN_LIBS lists
// them (colon-separated) and GPUIMG_CUOBJDUMP names cuobjdump.
// bench/gpu/run.sh runs it on PyTorch's own CUDA libraries (CUDA 13
// fat binaries, compressed) on the GPU machine.
func TestScanFatbinMatchesCuobjdumpOn(t *testing.T) {
	libs, cuobjdump := os.Getenv("GPUIMG_FATBIN_LIBS"), os.Getenv("GPUIMG_CUOBJDUMP")
	if libs == "" || cuobjdump == "" {
		t.Skip("set GPUIMG_FATBIN_LIBS and GPUIMG_CUOBJDUMP to cross-check libraries of your own")
	}
	for _, p := range filepath.SplitList(libs) {
		t.Run(filepath.Base(p), func(t *testing.T) { crossCheckCuobjdump(t, cuobjdump, p) })
	}
}

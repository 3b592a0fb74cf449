package validate

import (
	"bytes"
	"encoding/binary"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestScanFatbinMatchesCuobjdump reads NVIDIA's real libraries (Debian's
// CUDA 11.8 packages) and compares the architectures found with what
// NVIDIA's cuobjdump lists for the same files.
func TestScanFatbinMatchesCuobjdump(t *testing.T) {
	testenv.Require(t, "needs Debian's CUDA packages", testenv.Slow)
	root, err := testenv.DebianCUDA(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range []string{"libcurand.so.10.3.0.86", "libcublas.so.11.11.3.6"} {
		t.Run(lib, func(t *testing.T) {
			if cubins := crossCheckCuobjdump(t, testenv.Cuobjdump(root), filepath.Join(root, "usr/lib/x86_64-linux-gnu", lib)); len(cubins) == 0 {
				t.Fatal("cuobjdump lists no cubins: the cross-check proves nothing")
			}
		})
	}
}

// TestScanFatbinMatchesCuobjdumpArchSpecific cross-checks arch-specific
// code (sm_90a) with Debian 13's real CUDA build of PyTorch
// (libtorch-cuda-2.6, CUDA 12.4: 341 cubins for each of sm_50 … sm_90 and
// 2 for sm_90a) and Debian 13's cuobjdump 12.4, and with small fat
// binaries that the same toolkit's ptxas and fatbinary make here, which
// also carry sm_90a PTX, compressed and not.
func TestScanFatbinMatchesCuobjdumpArchSpecific(t *testing.T) {
	testenv.Require(t, "needs Debian's CUDA build of PyTorch", testenv.Slow)
	root, err := testenv.DebianTorchCUDA(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cuobjdump := testenv.Cuobjdump(root)
	t.Run("libtorch_cuda", func(t *testing.T) {
		cubins := crossCheckCuobjdump(t, cuobjdump, filepath.Join(root, testenv.DebianTorchCUDALib))
		if cubins["sm_90a"] == 0 || cubins["sm_90"] == 0 {
			t.Fatalf("cuobjdump lists cubins %v: no sm_90 and sm_90a to tell apart", cubins)
		}
	})

	// Hand-written PTX for sm_90 and sm_90a, assembled by ptxas and
	// packed by fatbinary as nvcc would.
	dir := t.TempDir()
	tool := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(filepath.Join(root, "usr/bin", name), args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	images := []string{"-64"}
	for _, sm := range []string{"90", "90a"} {
		ptx := filepath.Join(dir, "k"+sm+".ptx")
		src := ".version 8.4\n.target sm_" + sm + "\n.address_size 64\n.visible .entry k() { ret; }\n"
		if err := os.WriteFile(ptx, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cubin := filepath.Join(dir, "k"+sm+".cubin")
		tool("ptxas", "-arch=sm_"+sm, ptx, "-o", cubin)
		images = append(images, "--image3=kind=elf,sm="+sm+",file="+cubin, "--image3=kind=ptx,sm="+sm+",file="+ptx)
	}
	for _, compress := range []string{"--compress=false", "--compress-all"} {
		t.Run(compress, func(t *testing.T) {
			fb := filepath.Join(dir, strings.TrimLeft(compress, "-")+".fatbin")
			tool("fatbinary", append([]string{"--create=" + fb, compress}, images...)...)
			crossCheckCuobjdump(t, cuobjdump, fb)
			f, err := os.Open(fb)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			k, err := ScanFatbin(f)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"sm_90", "sm_90a"}; !reflect.DeepEqual(k.SASS, want) || !reflect.DeepEqual(k.PTX, want) {
				t.Errorf("SASS %v, PTX %v, want %v for both", k.SASS, k.PTX, want)
			}
		})
	}
}

// crossCheckCuobjdump compares ScanFatbin's architectures for the file p
// with what cuobjdump --list-elf and --list-ptx list, and returns the
// cubins per architecture that cuobjdump listed.
func crossCheckCuobjdump(t *testing.T, cuobjdump, p string) map[string]int {
	t.Helper()
	re := regexp.MustCompile(`\.(sm_[0-9]+[af]?)\.(cubin|ptx)`)
	want := map[string]map[string]int{"cubin": {}, "ptx": {}}
	for _, flag := range []string{"--list-elf", "--list-ptx"} {
		start := time.Now()
		out, err := exec.Command(cuobjdump, flag, p).CombinedOutput()
		t.Logf("cuobjdump %s: %v", flag, time.Since(start).Round(time.Millisecond))
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
	start := time.Now()
	k, err := ScanFatbin(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ScanFatbin: %v", time.Since(start).Round(time.Millisecond))
	t.Logf("%s: cuobjdump cubins %v ptx %v; gpuimg cubins %v ptx %v", p, want["cubin"], want["ptx"], k.ELFCount, k.PTXCount)
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
	return want["cubin"]
}

// container builds a fat binary with one entry per (kind, arch, flags).
func container(entries [][3]int) []byte {
	var body bytes.Buffer
	for _, e := range entries {
		payload := bytes.Repeat([]byte{0xBA, 0x55, 0xED, 0x50, 1, 0, 16, 0}, 3) // looks like magic: must be skipped
		h := make([]byte, 64)
		binary.LittleEndian.PutUint16(h[0:], uint16(e[0]))
		binary.LittleEndian.PutUint16(h[2:], 0x0101)
		binary.LittleEndian.PutUint32(h[4:], 64)
		binary.LittleEndian.PutUint64(h[8:], uint64(len(payload)))
		binary.LittleEndian.PutUint32(h[28:], uint32(e[1]))
		binary.LittleEndian.PutUint64(h[40:], uint64(e[2]))
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
	buf.Write(container([][3]int{{kindELF, 80}, {kindELF, 90}, {kindPTX, 90}}))
	buf.Write(make([]byte, 8))
	buf.Write(noise[:300<<10])
	buf.Write(container([][3]int{{kindELFAlt, 100}, {kindELF, 80}}))
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
	c := container([][3]int{{kindELF, 86}})
	k, err = ScanFatbin(bytes.NewReader(c[:len(c)-10]))
	if err == nil && len(k.SASS) > 0 && k.SASS[0] != "sm_86" {
		t.Errorf("truncated container: %v", k)
	}
	k, err = ScanFatbin(bytes.NewReader(noise))
	if err != nil || !k.Empty() {
		t.Errorf("noise: %v %v", k, err)
	}
}

// TestScanFatbinArchSpecific: an entry whose flags mark an arch-specific
// target is its own architecture, sm_90a, in names, counts and order, and
// the coverage judgement sees it as such: sm_100a code does not run on an
// sm_103 GPU, plain sm_100 code does.
func TestScanFatbinArchSpecific(t *testing.T) {
	const (
		linux64    = 0x11   // 64-bit, Linux: every entry has them
		compressed = 0x2000 // how nvcc leaves most entries
		// archSpecific is the flag as CUDA 12.4's fatbinary writes it
		// (spelled out, so that a change of flagArchSpecific fails here).
		archSpecific = 0x100000
	)
	for _, tc := range []struct {
		name     string
		entries  [][3]int
		sass     []string
		elfCount map[string]int
		ptx      []string
		gpu      string
		native   bool
		viaPTX   bool
	}{{
		name: "libtorch_cuda's flags",
		entries: [][3]int{{kindELF, 90, linux64 | compressed}, {kindELF, 90, archSpecific | linux64 | compressed},
			{kindELF, 86, linux64 | compressed}, {kindPTX, 90, linux64 | compressed}, {kindELF, 90, linux64 | compressed}},
		sass:     []string{"sm_86", "sm_90", "sm_90a"},
		elfCount: map[string]int{"sm_86": 1, "sm_90": 2, "sm_90a": 1},
		ptx:      []string{"sm_90"},
		gpu:      "sm_90", native: true, viaPTX: true,
	}, {
		name:     "arch-specific only, on a later minor",
		entries:  [][3]int{{kindELF, 100, archSpecific | linux64}, {kindPTX, 100, archSpecific | linux64}},
		sass:     []string{"sm_100a"},
		elfCount: map[string]int{"sm_100a": 1},
		ptx:      []string{"sm_100a"},
		gpu:      "sm_103", native: false, viaPTX: false,
	}, {
		name:     "arch-specific only, on that GPU",
		entries:  [][3]int{{kindELFAlt, 100, archSpecific | linux64}},
		sass:     []string{"sm_100a"},
		elfCount: map[string]int{"sm_100a": 1},
		gpu:      "sm_100", native: true,
	}, {
		name:     "plain, on a later minor",
		entries:  [][3]int{{kindELF, 100, linux64}, {kindELF, 120, archSpecific}},
		sass:     []string{"sm_100", "sm_120a"},
		elfCount: map[string]int{"sm_100": 1, "sm_120a": 1},
		gpu:      "sm_103", native: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ScanFatbin(bytes.NewReader(container(tc.entries)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(k.SASS, tc.sass) || !maps.Equal(k.ELFCount, tc.elfCount) || !slices.Equal(k.PTX, tc.ptx) {
				t.Errorf("SASS %v %v, PTX %v; want %v %v, %v", k.SASS, k.ELFCount, k.PTX, tc.sass, tc.elfCount, tc.ptx)
			}
			// Native code wins over PTX: viaPTX is what runs without it.
			want := matrix.NoKernels
			switch {
			case tc.native:
				want = matrix.Native
			case tc.viaPTX:
				want = matrix.ViaPTX
			}
			if cov := matrix.KernelCoverage(tc.gpu, k.SASS, k.PTX); cov != want {
				t.Errorf("on %s: coverage %v, want %v (native %v, via PTX %v)", tc.gpu, cov, want, tc.native, tc.viaPTX)
			}
		})
	}

	// A header too short to hold the flags (32 bytes) leaves the entry
	// plain, whatever follows it.
	c := container([][3]int{{kindELF, 90, archSpecific}})
	binary.LittleEndian.PutUint32(c[fatbinHeaderSize+4:], entryMinHeader)
	binary.LittleEndian.PutUint64(c[fatbinHeaderSize+8:], uint64(len(c)-fatbinHeaderSize-entryMinHeader))
	k, err := ScanFatbin(bytes.NewReader(c))
	if err != nil || !reflect.DeepEqual(k.SASS, []string{"sm_90"}) {
		t.Errorf("32-byte entry header: %v %v, want sm_90", k.SASS, err)
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

// ptxEntry builds a fat binary with one PTX entry for arch, with flags,
// whose payload is p.
func ptxEntry(arch int, flags uint64, p []byte) []byte {
	h := make([]byte, 64, 64+len(p))
	binary.LittleEndian.PutUint16(h[0:], kindPTX)
	binary.LittleEndian.PutUint16(h[2:], 0x0101)
	binary.LittleEndian.PutUint32(h[4:], 64)
	binary.LittleEndian.PutUint64(h[8:], uint64(len(p)))
	binary.LittleEndian.PutUint32(h[28:], uint32(arch))
	binary.LittleEndian.PutUint64(h[40:], flags)
	h = append(h, p...)
	c := make([]byte, 16)
	binary.LittleEndian.PutUint32(c[0:], fatbinMagic)
	binary.LittleEndian.PutUint16(c[4:], 1)
	binary.LittleEndian.PutUint16(c[6:], 16)
	binary.LittleEndian.PutUint64(c[8:], uint64(len(h)))
	return append(c, h...)
}

// ptxText is the start of PTX as nvcc writes it for target.
func ptxText(target string) []byte {
	return []byte("//\n// Generated by NVIDIA NVVM Compiler\n//\n// Compiler Build ID: CL-00000000\n// Cuda compilation tools, release 12.9, V12.9.41\n// Based on NVVM 7.0.1\n//\n\n.version 8.8\n.target " + target + "\n.address_size 64\n\n.visible .entry k() { ret; }\n")
}

// TestScanFatbinFamilySpecificPTX: uncompressed PTX names its target,
// sm_100f or sm_100a, and the scanner reports it so, so that coverage
// judges family-specific PTX by its family (NVIDIA's Table 28: 10.0 and
// 10.3, not 12.x) rather than as plain PTX that would JIT forward to any
// later GPU. What cannot be read (compressed PTX, a number that is not
// the entry's, binary bytes before the directive) stays plain.
func TestScanFatbinFamilySpecificPTX(t *testing.T) {
	const linux64, compressed = 0x11, 0x2000
	lz := append([]byte{0x04, 0x22, 0x4d, 0x18, 0x64}, ptxText("sm_100f")...) // a compressed frame's literals can hold the text
	for _, tc := range []struct {
		name string
		fb   []byte
		ptx  string
		on   map[string]matrix.Coverage
	}{
		{"family-specific", ptxEntry(100, linux64, ptxText("sm_100f")), "sm_100f",
			map[string]matrix.Coverage{"sm_100": matrix.ViaPTX, "sm_103": matrix.ViaPTX, "sm_110": matrix.NoKernels, "sm_120": matrix.NoKernels}},
		{"family-specific 12.x", ptxEntry(120, linux64, ptxText("sm_120f")), "sm_120f",
			map[string]matrix.Coverage{"sm_120": matrix.ViaPTX, "sm_121": matrix.ViaPTX, "sm_100": matrix.NoKernels}},
		{"arch-specific without the flag", ptxEntry(100, linux64, ptxText("sm_100a")), "sm_100a",
			map[string]matrix.Coverage{"sm_100": matrix.ViaPTX, "sm_103": matrix.NoKernels}},
		{"arch-specific flag wins", ptxEntry(90, linux64|flagArchSpecific, ptxText("sm_90")), "sm_90a",
			map[string]matrix.Coverage{"sm_90": matrix.ViaPTX, "sm_100": matrix.NoKernels}},
		{"plain with options", ptxEntry(100, linux64, ptxText("sm_100, debug")), "sm_100",
			map[string]matrix.Coverage{"sm_120": matrix.ViaPTX}},
		{"compressed stays plain", ptxEntry(100, linux64|compressed, lz), "sm_100",
			map[string]matrix.Coverage{"sm_120": matrix.ViaPTX}},
		{"another number stays plain", ptxEntry(100, linux64, ptxText("sm_120f")), "sm_100",
			map[string]matrix.Coverage{"sm_120": matrix.ViaPTX}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ScanFatbin(bytes.NewReader(tc.fb))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(k.PTX, []string{tc.ptx}) || len(k.SASS) != 0 {
				t.Fatalf("PTX %v SASS %v, want PTX [%s]", k.PTX, k.SASS, tc.ptx)
			}
			for gpu, want := range tc.on {
				if got := matrix.KernelCoverage(gpu, k.SASS, k.PTX); got != want {
					t.Errorf("on %s: %v, want %v", gpu, got, want)
				}
			}
		})
	}
}

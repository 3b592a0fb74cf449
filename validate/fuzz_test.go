package validate

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

	"github.com/gpuimg/gpuimg/matrix"
)

// bounded runs f and fails if it allocates or runs beyond a budget linear
// in the input size n: a hostile input must not cost more than its size.
func bounded(t *testing.T, n int, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	limit := 5*time.Second + time.Duration(n)*2*time.Microsecond
	// A hang crashes the worker, so the fuzzer keeps the input.
	watchdog := time.AfterFunc(3*limit, func() { panic(fmt.Sprintf("%d bytes of input still running after %v", n, 3*limit)) })
	defer watchdog.Stop()
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(32<<20+256*n); alloc > limit {
		t.Fatalf("%d bytes of input allocated %d bytes (limit %d)", n, alloc, limit)
	}
	if took > limit {
		t.Fatalf("%d bytes of input took %v (limit %v)", n, took, limit)
	}
}

// FuzzScanFatbin: no panic, bounded cost, and scanning a prefix never
// finds more kernels than scanning the whole. Seeds in
// testdata/fuzz/FuzzScanFatbin are real containers cut from Debian's
// libcurand and libtorch_cuda.
func FuzzScanFatbin(f *testing.F) {
	f.Add(container([][3]int{{kindELF, 80}, {kindPTX, 90}, {kindELFAlt, 100, archSpecificFlag}}), uint16(40))
	f.Add(append(bytes.Repeat([]byte("noise 12"), 4), container([][3]int{{kindELF, 86}})...), uint16(100))
	f.Add(ptxEntry(100, 0x11, ptxText("sm_100f")), uint16(261)) // cut inside .target sm_100f, just before the f
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		var whole Kernels
		var err error
		bounded(t, len(b), func() { whole, err = ScanFatbin(bytes.NewReader(b)) })
		if err == nil && !whole.Empty() && len(whole.SASS)+len(whole.PTX) == 0 {
			t.Fatal("kernels counted but not listed")
		}
		for _, n := range []int{int(cut) % (len(b) + 1), len(b) / 2} {
			part, _ := ScanFatbin(bytes.NewReader(b[:n]))
			if more := moreKernels(part, whole); more != "" {
				t.Fatalf("the first %d of %d bytes have more kernels than the whole: %s", n, len(b), more)
			}
		}
		lib, libErr := scanLibrary(bytes.NewReader(b), int64(len(b)))
		if moreKernels(lib, whole) != "" || moreKernels(whole, lib) != "" {
			t.Fatalf("scanLibrary found %v, ScanFatbin %v", lib, whole)
		}
		if err != nil && libErr == nil {
			t.Fatalf("ScanFatbin failed (%v) but scanLibrary did not", err)
		}
	})
}

const archSpecificFlag = flagArchSpecific

// moreKernels says where a has more entries than b, or "".
func moreKernels(a, b Kernels) string {
	for _, m := range [][2]map[string]int{{a.ELFCount, b.ELFCount}, {a.PTXCount, b.PTXCount}} {
		for arch, n := range m[0] {
			if n > m[1][arch] {
				return fmt.Sprintf("%s: %d > %d", arch, n, m[1][arch])
			}
		}
	}
	return ""
}

// FuzzInspectLayer builds an image from a fixed base layer and a layer
// made of the fuzzed tar bytes (gzip'd, or zstd'd when useZstd is set, as
// an OCI zstd layer read the way go-containerregistry reads a registry's
// layers) and inspects it: whiteouts, PAX headers, huge declared sizes,
// sparse files, hard and symbolic links anywhere. It must return a report
// or an error, within bounds.
func FuzzInspectLayer(f *testing.F) {
	for _, seed := range walkSeeds(f) {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	d, err := matrix.Builtin()
	if err != nil {
		f.Fatal(err)
	}
	base := layer(f, file{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"}, file{"root/", ""}, file{"root/.netrc", "machine x login y password " + strings.Repeat("z", 12) + "\n"},
		file{"usr/local/cuda-12.2/version.json", `{"cuda":{"version":"12.2.2"}}`})
	f.Fuzz(func(t *testing.T, tarBytes []byte, useZstd bool) {
		tarBytes = fixTarChecksums(tarBytes)
		var upper v1.Layer
		if useZstd {
			upper = zstdLayer(t, tarBytes)
		} else {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			_, _ = zw.Write(tarBytes)
			_ = zw.Close()
			upper = gzLayer{gz.Bytes()}
		}
		img := image(t, base, upper)
		bounded(t, len(tarBytes), func() {
			r, err := Inspect(t.Context(), img, Options{DB: d, GPU: "h100", Limits: Limits{MaxEntries: 10000, MinBombBytes: 1 << 20, MaxRatio: 1000}})
			if err != nil {
				return
			}
			if r.Verdict == "" || len(r.Checks) == 0 {
				t.Fatalf("a report without a verdict: %+v", r)
			}
			// The base layer's secret is found whatever the upper layer does.
			for _, c := range r.Checks {
				if c.Name == "secrets" && c.Status != matrix.Fail {
					t.Fatalf("secrets = %s: %s", c.Status, c.Message)
				}
			}
		})
	})
}

// zstdLayer is b zstd-compressed as an OCI zstd layer, through
// go-containerregistry's partial.CompressedToLayer: its Uncompressed peeks
// at the magic and decompresses as it does for a registry's layers.
func zstdLayer(tb testing.TB, b []byte) v1.Layer {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		tb.Fatal(err)
	}
	_, _ = zw.Write(b)
	_ = zw.Close()
	l, err := partial.CompressedToLayer(rawLayer{buf.Bytes(), types.OCILayerZStd})
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// rawLayer is a compressed layer of the given bytes and media type.
type rawLayer struct {
	b  []byte
	mt types.MediaType
}

func (l rawLayer) Digest() (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(l.b))
	return h, err
}
func (l rawLayer) Compressed() (io.ReadCloser, error)  { return io.NopCloser(bytes.NewReader(l.b)), nil }
func (l rawLayer) Size() (int64, error)                { return int64(len(l.b)), nil }
func (l rawLayer) MediaType() (types.MediaType, error) { return l.mt, nil }

// fixTarChecksums rewrites the checksum of each tar header block in b,
// found by following the headers' sizes, so that mutated headers reach
// the walker instead of all failing archive/tar's checksum test.
func fixTarChecksums(b []byte) []byte {
	b = bytes.Clone(b)
	for off := 0; off+512 <= len(b); {
		h := b[off : off+512]
		if bytes.Equal(h, make([]byte, 512)) {
			break
		}
		copy(h[148:156], "        ")
		sum := 0
		for _, c := range h {
			sum += int(c)
		}
		copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
		size, err := strconv.ParseInt(strings.Trim(string(h[124:136]), " \x00"), 8, 64)
		if err != nil || size < 0 || size > int64(len(b)) {
			break
		}
		off += 512 + int(size+511)/512*512
	}
	return b
}

// walkSeeds are tar streams of the shapes a hostile layer takes.
func walkSeeds(tb testing.TB) [][]byte {
	mk := func(hs ...*tar.Header) []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range hs {
			if h.Typeflag == 0 {
				h.Typeflag = tar.TypeReg
			}
			if err := tw.WriteHeader(h); err != nil {
				tb.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg && h.Size > 0 && h.Size < 1<<20 {
				_, _ = tw.Write(bytes.Repeat([]byte("a"), int(h.Size)))
			}
		}
		_ = tw.Flush()
		return buf.Bytes()
	}
	lib := container([][3]int{{kindELF, 90}})
	var libTar bytes.Buffer
	tw := tar.NewWriter(&libTar)
	content := append(make([]byte, 64<<10+8), lib...)
	_ = tw.WriteHeader(&tar.Header{Name: "usr/lib/libcublas.so.12", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))})
	_, _ = tw.Write(content)
	_ = tw.Close()
	huge := mk(&tar.Header{Name: "huge", Size: 1 << 20})
	binaryHuge := append([]byte(nil), huge...)
	copy(binaryHuge[124:136], "77777777777\x00") // a declared size of 8 GiB
	return [][]byte{
		mk(&tar.Header{Name: "root/.wh..netrc"}, &tar.Header{Name: "etc/.wh..wh..opq"}, &tar.Header{Name: "etc/os-release", Size: 12}),
		mk(&tar.Header{Name: strings.Repeat("long/", 60) + "name", Size: 3, PAXRecords: map[string]string{"path": "usr/lib/x", "comment": "pax"}}),
		mk(&tar.Header{Name: "link", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"}, &tar.Header{Name: "sym", Typeflag: tar.TypeSymlink, Linkname: "/proc/self/root"}),
		mk(&tar.Header{Name: "../escape", Size: 1}, &tar.Header{Name: "dir/", Typeflag: tar.TypeDir}, &tar.Header{Name: "dir", Size: 2}),
		mk(&tar.Header{Name: "sparse", Typeflag: tar.TypeGNUSparse, Size: 10, Format: tar.FormatGNU}),
		binaryHuge,
		libTar.Bytes(),
		libTar.Bytes()[:len(libTar.Bytes())-1024],
		sparseLayer("usr/lib/libcublas.so.12", 1<<40),
	}
}

// FuzzDetectFiles feeds fuzzed content to each file parser of the
// detector (dist-info METADATA, torch/version.py, os-release, CUDA's
// version files and headers, pyvenv.cfg, credential files) and checks
// what it reads: no panic, bounded cost, single-line values.
func FuzzDetectFiles(f *testing.F) {
	paths := []string{
		"usr/lib/python3/dist-packages/torch-2.3.1.dist-info/METADATA",
		"opt/venv/lib/python3.11/site-packages/torch/version.py",
		"etc/os-release",
		"usr/local/cuda-12.2/version.json",
		"usr/local/cuda/version.txt",
		"usr/include/cudnn_version.h",
		"opt/venv/pyvenv.cfg",
		"root/.netrc",
		"root/.docker/config.json",
		"root/.pypirc",
		"app/key.json",
		"root/.npmrc",
	}
	for i, s := range []string{
		"Metadata-Version: 2.1\nName: torch\nVersion: 2.3.1+cu121\nSummary: x\n\nbody",
		"__version__ = '2.3.1+cu121'\ndebug = False\ncuda: Optional[str] = '12.1'\ngit_version = 'abc'\nhip: Optional[str] = None\n",
		"PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nID=ubuntu\nVERSION_ID=\"22.04\"\n",
		`{"cuda":{"name":"CUDA SDK","version":"12.2.2"}}`,
		"CUDA Version 11.0.228\n",
		"#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 2\n",
		"home = /usr/bin\nversion = 3.11.4\n",
		"machine a login b password c\n",
		`{"auths":{"r":{"auth":"dTpw"}}}`,
		"[pypi]\npassword = pypi-AgEIcHlwaS5vcmc\n",
		`{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\nMIIE\n"}`,
		"//r/:_authToken=abc\n",
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		p := paths[int(which)%len(paths)]
		d := newDetector()
		bounded(t, len(b), func() {
			_ = d.visit(Entry{Path: p, Header: &tar.Header{Name: p, Typeflag: tar.TypeReg, Size: int64(len(b))}}, bytes.NewReader(b))
			found := d.finish(&WalkResult{visible: map[string]int{p: 0}})
			for name, v := range found.Packages {
				if strings.ContainsAny(name+v, "\n") {
					t.Fatalf("package %q %q spans lines", name, v)
				}
			}
			if found.Torch != nil && strings.ContainsAny(found.Torch.Version+found.Torch.CUDA, "\n'\"") {
				t.Fatalf("torch %+v", found.Torch)
			}
			for _, h := range found.secrets {
				if s := joinMatches(h.matches); len(s) > 400 {
					t.Fatalf("secret description of %d bytes", len(s))
				}
			}
		})
		name, version := parseMetadata(b)
		if strings.Contains(name+version, "\n") {
			t.Fatalf("METADATA %q %q spans lines", name, version)
		}
	})
}

// FuzzSecretsRedacted: whatever the text, what gpuimg shows of a secret
// it finds never holds the secret's own part.
func FuzzSecretsRedacted(f *testing.F) {
	for _, c := range secretCorpus() {
		f.Add(c.content)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var shown string
		bounded(t, len(s), func() { shown = joinMatches(secretsInText(s)) })
		for _, p := range tokenPatterns {
			for _, m := range p.re.FindAllString(s, 4) {
				if p.ok != nil && !p.ok(m) {
					continue
				}
				var secret string
				switch p.keep {
				case -1:
					secret = strings.TrimPrefix(m, rePrivateKey.FindString(m))
				case -2:
					secret = reURLCreds.FindStringSubmatch(m)[3]
				case -3:
					secret = p.re.FindStringSubmatch(m)[1]
				default:
					secret = m[min(p.keep, len(m)):]
				}
				secret = strings.TrimSpace(strings.ReplaceAll(secret, `\n`, ""))
				if len(secret) >= 8 && strings.Contains(shown, secret) {
					t.Fatalf("%q shows %q", shown, secret)
				}
			}
		}
	})
}

// TestWalkZstdLayer checks that FuzzInspectLayer's zstd layers reach the
// walker: a zstd upper layer's whiteout and file apply over a gzip base,
// and a zstd bomb is stopped as one.
func TestWalkZstdLayer(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{{Name: "etc/.wh.os-release"}, {Name: "opt/app.py", Size: 5}} {
		h.Typeflag, h.Mode = tar.TypeReg, 0o644
		must(t, tw.WriteHeader(h))
		_, _ = tw.Write([]byte("print")[:h.Size])
	}
	must(t, tw.Close())
	img := image(t, layer(t, file{"etc/os-release", "ID=debian\n"}), zstdLayer(t, buf.Bytes()))
	files, _, err := walkAll(t, img, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["etc/os-release"]; ok || files["opt/app.py"] != "print" {
		t.Errorf("zstd layer not applied: %v", files)
	}

	buf.Reset()
	tw = tar.NewWriter(&buf)
	zeros := make([]byte, 16<<20)
	must(t, tw.WriteHeader(&tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(zeros))}))
	_, _ = tw.Write(zeros)
	must(t, tw.Close())
	_, _, err = walkAll(t, image(t, zstdLayer(t, buf.Bytes())), Limits{MinBombBytes: 1 << 20, MaxRatio: 100})
	if !errors.Is(err, ErrBomb) {
		t.Fatalf("zstd bomb: err = %v, want ErrBomb", err)
	}
}

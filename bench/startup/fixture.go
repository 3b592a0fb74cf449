package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	kflate "github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// component is one wheel of the fixture stack: it stands for a real wheel
// and carries that wheel's size, divided by the run's scale.
type component struct {
	Dist, Version string
	// PerPython wheels are built once per CPython (cpXY tags); the others
	// are py3-none, like every nvidia-* wheel.
	PerPython bool
	// RealMB is the real wheel's size in MB (10^6 bytes), read at Source.
	RealMB float64
	Source string
	// Dir is the package directory; Libs share the wheel's bytes by the
	// given weights; Loaded are the libraries importing torch loads.
	Dir    string
	Libs   []lib
	Import bool // torch imports it (and loads its Loaded libraries)
}

type lib struct {
	Name   string
	Weight float64
	Loaded bool
}

// The fixture stack stands for one real install: `pip install torch`
// of torch 2.7.1 from PyPI (the CUDA 12.6 build, cp310 manylinux_2_28
// x86_64), every wheel it brings, at the sizes pip printed downloading
// them. The pins (Requires-Dist of torch 2.7.1) were read in
// skypilotSource; the sizes in pip logs of that install (three public
// logs found with the project's code search gave the same sizes; torch's
// 821 MB also in torchSizeSource). The fixture keeps the names and
// versions of the real wheels, except torch, torchvision and torchaudio,
// which carry the version the bench's matrix resolves (torchVersion):
// only the sizes stand for 2.7.1's.
const (
	skypilotSource  = "https://github.com/skypilot-org/skypilot/pull/6177 (pip log of torch 2.7.1's install: its nvidia-* and triton pins)"
	torchSizeSource = "https://github.com/pytorch/pytorch/issues/157265 (torch-2.7.1-cp310-cp310-manylinux_2_28_x86_64.whl, the CUDA 12.6 build on PyPI, 821 MB)"
	pipLogSource    = "pip's download log of torch 2.7.1's install (sizes as pip printed them from PyPI; pypi.org/project/NAME/VERSION/ has the file)"
)

var components = []component{
	{Dist: "torch", Version: torchVersion + "+cu126", PerPython: true, RealMB: 821.2, Import: true, Source: torchSizeSource,
		Dir: "torch/lib", Libs: []lib{{"libtorch_cuda.so", 0.70, true}, {"libtorch_cpu.so", 0.25, true}, {"libc10.so", 0.01, true}, {"libtorch_python.so", 0.04, true}}},
	{Dist: "triton", Version: "3.3.1", PerPython: true, RealMB: 155.6, Source: pipLogSource,
		Dir: "triton/_C", Libs: []lib{{"libtriton.so", 1, false}}},
	{Dist: "nvidia-cudnn-cu12", Version: "9.5.1.17", RealMB: 571.0, Import: true, Source: pipLogSource,
		Dir: "nvidia/cudnn/lib", Libs: []lib{{"libcudnn.so.9", 0.01, true}, {"libcudnn_engines_precompiled.so.9", 0.74, false}, {"libcudnn_adv.so.9", 0.15, false}, {"libcudnn_graph.so.9", 0.10, true}}},
	{Dist: "nvidia-cublas-cu12", Version: "12.6.4.1", RealMB: 393.1, Import: true, Source: pipLogSource,
		Dir: "nvidia/cublas/lib", Libs: []lib{{"libcublasLt.so.12", 0.75, true}, {"libcublas.so.12", 0.25, true}}},
	{Dist: "nvidia-cusparse-cu12", Version: "12.5.4.2", RealMB: 216.6, Import: true, Source: pipLogSource,
		Dir: "nvidia/cusparse/lib", Libs: []lib{{"libcusparse.so.12", 1, true}}},
	{Dist: "nvidia-nccl-cu12", Version: "2.26.2", RealMB: 201.3, Import: true, Source: pipLogSource,
		Dir: "nvidia/nccl/lib", Libs: []lib{{"libnccl.so.2", 1, true}}},
	{Dist: "nvidia-cufft-cu12", Version: "11.3.0.4", RealMB: 200.2, Import: true, Source: pipLogSource,
		Dir: "nvidia/cufft/lib", Libs: []lib{{"libcufft.so.11", 0.95, true}, {"libcufftw.so.11", 0.05, false}}},
	{Dist: "nvidia-cusolver-cu12", Version: "11.7.1.2", RealMB: 158.2, Import: true, Source: pipLogSource,
		Dir: "nvidia/cusolver/lib", Libs: []lib{{"libcusolver.so.11", 0.7, true}, {"libcusolverMg.so.11", 0.3, false}}},
	{Dist: "nvidia-cusparselt-cu12", Version: "0.6.3", RealMB: 156.8, Import: true, Source: pipLogSource,
		Dir: "nvidia/cusparselt/lib", Libs: []lib{{"libcusparseLt.so.0", 1, true}}},
	{Dist: "nvidia-curand-cu12", Version: "10.3.7.77", RealMB: 56.3, Import: true, Source: pipLogSource,
		Dir: "nvidia/curand/lib", Libs: []lib{{"libcurand.so.10", 1, true}}},
	{Dist: "nvidia-cuda-nvrtc-cu12", Version: "12.6.77", RealMB: 23.7, Import: true, Source: pipLogSource,
		Dir: "nvidia/cuda_nvrtc/lib", Libs: []lib{{"libnvrtc.so.12", 0.8, true}, {"libnvrtc-builtins.so.12.6", 0.2, false}}},
	{Dist: "nvidia-nvjitlink-cu12", Version: "12.6.85", RealMB: 19.7, Import: true, Source: pipLogSource,
		Dir: "nvidia/nvjitlink/lib", Libs: []lib{{"libnvJitLink.so.12", 1, true}}},
	{Dist: "nvidia-cuda-cupti-cu12", Version: "12.6.80", RealMB: 8.9, Import: true, Source: pipLogSource,
		Dir: "nvidia/cuda_cupti/lib", Libs: []lib{{"libcupti.so.12", 1, true}}},
	{Dist: "nvidia-cufile-cu12", Version: "1.11.1.6", RealMB: 1.1, Import: true, Source: pipLogSource,
		Dir: "nvidia/cufile/lib", Libs: []lib{{"libcufile.so.0", 1, true}}},
	{Dist: "nvidia-cuda-runtime-cu12", Version: "12.6.77", RealMB: 0.9, Import: true, Source: pipLogSource,
		Dir: "nvidia/cuda_runtime/lib", Libs: []lib{{"libcudart.so.12", 1, true}}},
	{Dist: "nvidia-nvtx-cu12", Version: "12.6.77", RealMB: 0.09, Import: true, Source: pipLogSource,
		Dir: "nvidia/nvtx/lib", Libs: []lib{{"libnvToolsExt.so.1", 1, true}}},
	// torchvision and torchaudio require torch; they are not in torch's
	// Requires-Dist. torchvision 0.22.1 (torch 2.7.1's) is 7.5 MB in the
	// same log; torchaudio's 3.5 MB is from another pip log whose
	// version was not shown (unconfirmed).
	{Dist: "torchvision", Version: visionVersion + "+cu126", PerPython: true, RealMB: 7.5, Source: pipLogSource,
		Dir: "torchvision", Libs: []lib{{"_C.so", 1, false}}},
	{Dist: "torchaudio", Version: audioVersion + "+cu126", PerPython: true, RealMB: 3.5, Source: pipLogSource + "; version not shown in the log read (unconfirmed)",
		Dir: "torchaudio/lib", Libs: []lib{{"libtorchaudio.so", 1, false}}},
}

// addon reports whether c is installed beside torch rather than by it.
func (c component) addon() bool { return c.Dist == "torchvision" || c.Dist == "torchaudio" }

const (
	torchVersion  = "2.9.1"
	visionVersion = "0.24.1"
	audioVersion  = "2.9.1"
	cudaImage     = "12.6.3"
	osName        = "ubuntu22.04"
	// torchModules is how many Python modules the fixture torch imports
	// (real torch 2.x imports well over a thousand on import torch).
	torchModules = 300
	// loadBytes is what the fixture reads of each library it "loads": the
	// first and the last loadBytes (ELF headers, dynamic section, symbol
	// tables), standing for the dynamic loader, which maps a library but
	// touches only those pages and the code its initialisers run, not
	// the device code (fatbins load lazily).
	loadBytes = 1 << 20
)

// pool is the bytes the fixture files are cut from: Debian's real CUDA
// 11.8 libraries, so the fixture compresses as CUDA libraries do.
type pool struct {
	b     []byte
	ratio float64 // gzip-compressed / raw, measured on the first 32 MiB
}

func loadPool(ctx context.Context) (*pool, error) {
	root, err := testenv.DebianCUDA(ctx)
	if err != nil {
		return nil, err
	}
	libs, _ := filepath.Glob(filepath.Join(root, "usr/lib/x86_64-linux-gnu/lib*.so.*.*"))
	slices.Sort(libs)
	var buf bytes.Buffer
	for _, l := range libs {
		b, err := os.ReadFile(l)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	if buf.Len() < 64<<20 {
		return nil, fmt.Errorf("the CUDA libraries under %s hold %d bytes; want at least 64 MiB", root, buf.Len())
	}
	p := &pool{b: buf.Bytes()}
	sample := p.b[:32<<20]
	var z countWriter
	gw, _ := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	_, _ = gw.Write(sample)
	_ = gw.Close()
	p.ratio = float64(z.n) / float64(len(sample))
	return p, nil
}

// slice returns n bytes of the pool from offset off, wrapping around.
func (p *pool) slice(off, n int64) io.Reader {
	var rs []io.Reader
	off %= int64(len(p.b))
	for n > 0 {
		k := min(n, int64(len(p.b))-off)
		rs = append(rs, bytes.NewReader(p.b[off:off+k]))
		n -= k
		off = 0
	}
	return io.MultiReader(rs...)
}

// deflated is how many bytes n bytes of the pool from off deflate to, as
// the wheels are written.
func (p *pool) deflated(off, n int64) int64 {
	var c countWriter
	w, _ := kflate.NewWriter(&c, 5)
	_, _ = io.Copy(w, p.slice(off, n))
	_ = w.Close()
	return c.n
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// wfile is a file of a wheel: literal data, or n bytes of the pool.
type wfile struct {
	name    string
	data    string
	off, n  int64
	fromSrc bool
}

// writeWheel writes dist's wheel into dir, named as the real one would be,
// with requires as Requires-Dist.
func writeWheel(dir, dist, version, tag string, requires []string, files []wfile, p *pool) error {
	norm := strings.ReplaceAll(dist, "-", "_")
	info := fmt.Sprintf("%s-%s.dist-info", norm, version)
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: gpuimg startup benchmark fixture standing in for %s\n", dist, version, dist)
	for _, r := range requires {
		fmt.Fprintf(&meta, "Requires-Dist: %s\n", r)
	}
	files = append(slices.Clone(files),
		wfile{name: info + "/METADATA", data: meta.String()},
		wfile{name: info + "/WHEEL", data: fmt.Sprintf("Wheel-Version: 1.0\nGenerator: gpuimg-bench\nRoot-Is-Purelib: %v\nTag: %s\n", strings.HasSuffix(tag, "-any"), tag)})
	p0 := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.whl", norm, version, tag))
	tmp := p0 + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := zip.NewWriter(f)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return kflate.NewWriter(w, 5) })
	mod := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var record strings.Builder
	for _, wf := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: wf.name, Method: zip.Deflate, Modified: mod})
		if err != nil {
			f.Close()
			return err
		}
		var src io.Reader = strings.NewReader(wf.data)
		if wf.fromSrc {
			src = p.slice(wf.off, wf.n)
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h), src)
		if err != nil {
			f.Close()
			return err
		}
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", wf.name, b64(h), n)
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: info + "/RECORD", Method: zip.Deflate, Modified: mod})
	if err == nil {
		_, err = io.WriteString(w, record.String())
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write wheel %s: %w", p0, err)
	}
	return os.Rename(tmp, p0)
}

func b64(h hash.Hash) string { return base64.RawURLEncoding.EncodeToString(h.Sum(nil)) }

// cachedWheels puts the fixture stack's wheels into dir (hard links to a
// cache under testenv.CacheDir, made once per scale and fixture
// definition: writing them takes a minute or two on two CPUs).
func cachedWheels(ctx context.Context, dir string, pythons []string, scale float64) error {
	key := sha256.Sum256([]byte(fmt.Sprintf("v4 %+v %v %g %d %d", components, pythons, scale, torchModules, loadBytes)))
	cache := filepath.Join(testenv.CacheDir(), fmt.Sprintf("bench-startup-wheels-%x", key[:6]))
	if _, err := os.Stat(filepath.Join(cache, ".done")); err != nil {
		p, err := loadPool(ctx)
		if err != nil {
			return err
		}
		_ = os.RemoveAll(cache)
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return err
		}
		if err := writeWheels(cache, pythons, scale, p); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(cache, ".done"), nil, 0o644); err != nil {
			return err
		}
	}
	whls, _ := filepath.Glob(filepath.Join(cache, "*.whl"))
	for _, w := range whls {
		if err := os.Link(w, filepath.Join(dir, filepath.Base(w))); err != nil {
			return err
		}
	}
	return nil
}

// writeWheels writes the fixture stack's wheels for the given CPython
// versions into dir: each component's files sized so that the wheel is
// about its real size divided by scale.
func writeWheels(dir string, pythons []string, scale float64, p *pool) error {
	var requires []string
	var loads []string // library paths relative to site-packages, in load order
	for _, c := range components {
		if c.Dist != "torch" && !c.addon() {
			requires = append(requires, c.Dist+"=="+c.Version)
		}
		for _, l := range c.Libs {
			if c.Import && l.Loaded {
				loads = append(loads, c.Dir+"/"+l.Name)
			}
		}
	}
	var off int64
	for i, c := range components {
		target := c.RealMB * 1e6 / scale
		var files []wfile
		for _, l := range c.Libs {
			// The pool compresses unevenly: size each cut by what it
			// deflates to, correcting it until it is within 2% (at most
			// six times; two were not enough for every cut).
			want := target * l.Weight
			n := int64(want / p.ratio)
			for range 6 {
				d := float64(max(p.deflated(off, n), 1))
				if d > 0.98*want && d < 1.02*want {
					break
				}
				n = int64(float64(n) * want / d)
			}
			files = append(files, wfile{name: c.Dir + "/" + l.Name, off: off, n: n, fromSrc: true})
			off += n + int64(i)*4099 // different cuts for every file
		}
		tags := []string{"py3-none-manylinux_2_27_x86_64"}
		if c.PerPython {
			tags = nil
			for _, py := range pythons {
				cp := "cp" + strings.ReplaceAll(py, ".", "")
				tags = append(tags, cp+"-"+cp+"-manylinux_2_28_x86_64")
			}
		}
		var req []string
		if c.Dist == "torch" {
			files = append(files, torchPython(loads)...)
			req = requires
		}
		if c.Dist == "triton" {
			files = append(files, wfile{name: "triton/__init__.py", data: "__version__ = '" + c.Version + "'\n"})
		}
		if c.addon() {
			pkg, _, _ := strings.Cut(c.Dir, "/")
			files = append(files, wfile{name: pkg + "/__init__.py", data: "import torch\n__version__ = '" + c.Version + "'\n"})
			req = []string{"torch==" + torchVersion}
		}
		if strings.HasPrefix(c.Dist, "nvidia-") {
			// nvidia/ is a namespace package: no nvidia/__init__.py, as in the real wheels.
			files = append(files, wfile{name: strings.TrimSuffix(c.Dir, "/lib") + "/__init__.py", data: ""})
		}
		for _, tag := range tags {
			if err := writeWheel(dir, c.Dist, c.Version, tag, req, files, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// torchPython is the fixture torch's Python code: version.py (what
// gpuimg's install check reads), torchModules modules it imports, and an
// __init__ that loads the libraries (see loadBytes).
func torchPython(loads []string) []wfile {
	var init strings.Builder
	init.WriteString(`"""gpuimg startup benchmark fixture standing in for torch.

Importing it does what importing torch does to files: it imports many
Python modules and loads torch's libraries and the nvidia-* libraries they
link. Loading a library is modelled as reading its first and last
LOAD_BYTES (see bench/startup and docs/startup.md).
"""
import os as _os
import site as _site

from .version import __version__

LOAD_BYTES = ` + fmt.Sprint(loadBytes) + `
LIBS = [
`)
	for _, l := range loads {
		fmt.Fprintf(&init, "    %q,\n", l)
	}
	init.WriteString(`]


def _site_dir():
    return _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))


def _load(path):
    with open(path, "rb") as f:
        f.read(LOAD_BYTES)
        size = f.seek(0, 2)
        if size > 2 * LOAD_BYTES:
            f.seek(size - LOAD_BYTES)
            f.read(LOAD_BYTES)


for _lib in LIBS:
    _load(_os.path.join(_site_dir(), _lib))

`)
	for i := range torchModules {
		fmt.Fprintf(&init, "from . import _m%03d\n", i)
	}
	files := []wfile{
		{name: "torch/__init__.py", data: init.String()},
		{name: "torch/version.py", data: fmt.Sprintf("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n__version__ = '%s+cu126'\ndebug = False\ncuda: Optional[str] = '12.6'\ngit_version = 'gpuimg-bench'\nhip: Optional[str] = None\n", torchVersion)},
	}
	body := strings.Repeat("# Fixture module: stands for one of torch's Python modules.\n", 40)
	for i := range torchModules {
		files = append(files, wfile{name: fmt.Sprintf("torch/_m%03d.py", i), data: fmt.Sprintf("%sNAME = 'm%03d'\n\n\ndef f(x):\n    return x + %d\n", body, i, i)})
	}
	return files
}

// appFiles writes the user's files (the code update changes main.py).
func appFiles(dir, version string) error {
	if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
		return err
	}
	main := fmt.Sprintf("# The user's code, version %s.\nimport torch\nimport torchaudio\nimport torchvision\n\nprint('ready', torch.__version__, torchvision.__version__, torchaudio.__version__, 'app %s')\n", version, version)
	cfg := strings.Repeat("# model configuration line\n", 2000)
	if err := os.WriteFile(filepath.Join(dir, "app", "main.py"), []byte(main), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "app", "config.py"), []byte(cfg), 0o644)
}

// startCommand is what a node runs to be ready: the user's code, which
// imports each framework (and would initialise CUDA on a GPU node).
var startCommand = []string{"python", "/app/main.py"}

// runtimeGB is what NVIDIA's runtime flavor adds to base: /usr/local/cuda-11.8
// of the runtime image, about 2.3 GB on disk
// (https://github.com/IBM/text-generation-inference/pull/50, read
// 2026-11-30).
const runtimeGB = 2.3

// runtimeLibs picks Debian's CUDA 11.8 libraries, in a fixed order
// (libcublas, libcurand, libcudart), whose size is about runtimeGB/scale:
// each is taken unless it overshoots the target by more than 15%.
func runtimeLibs(libs []string, scale float64) ([]string, int64, error) {
	target := int64(runtimeGB * 1e9 / scale)
	var picked []string
	var total int64
	for _, prefix := range []string{"libcublas.so", "libcurand.so", "libcudart.so"} {
		for _, l := range libs {
			if !strings.HasPrefix(filepath.Base(l), prefix) {
				continue
			}
			st, err := os.Stat(l)
			if err != nil {
				return nil, 0, err
			}
			if float64(total+st.Size()) <= 1.15*float64(target) {
				picked = append(picked, l)
				total += st.Size()
			}
		}
	}
	if len(picked) == 0 {
		return nil, 0, fmt.Errorf("no Debian CUDA library fits the runtime flavor's %d bytes at scale %g", target, scale)
	}
	return picked, total, nil
}

// stripped are the parts of the Debian root filesystem the fixture base
// leaves out, to come closer to real size / scale (see docs/startup.md):
// documentation, translations, manual pages, glibc's iconv modules and
// the Pythons' test suites and pydoc data. Nothing the builds or the
// start command run reads them (dpkg, apt, perl and ensurepip stay).
var stripped = []string{
	"./usr/share/doc/", "./usr/share/locale/", "./usr/share/man/", "./usr/share/info/",
	"./usr/lib/x86_64-linux-gnu/gconv/",
	"./usr/lib/python3.13/test/", "./usr/lib/python3.14/test/",
	"./usr/lib/python3.13/pydoc_data/", "./usr/lib/python3.14/pydoc_data/",
}

// stripRootfs copies the root filesystem tar src to dst without the
// files under stripped (their directories stay, empty), and returns the
// bytes of file content kept and dropped.
func stripRootfs(src, dst string) (kept, dropped int64, err error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return 0, 0, err
	}
	tr, tw := tar.NewReader(in), tar.NewWriter(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Close()
			return 0, 0, fmt.Errorf("read %s: %w", src, err)
		}
		drop := false
		for _, p := range stripped {
			if strings.HasPrefix(h.Name, p) && h.Name != p {
				drop = true
			}
		}
		if drop {
			dropped += h.Size
			continue
		}
		kept += h.Size
		if err := tw.WriteHeader(h); err != nil {
			out.Close()
			return 0, 0, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			out.Close()
			return 0, 0, err
		}
	}
	if err := tw.Close(); err != nil {
		out.Close()
		return 0, 0, err
	}
	return kept, dropped, out.Close()
}

// baseSizes is the fixture base: bytes of files kept and left out of the
// Debian root filesystem, and the base layer's compressed size.
type baseSizes struct {
	Kept, Dropped, Compressed int64
}

// sidPackages are what the gpuimg builds of the bench install with apt on
// its sid base (builder's compilerPackages for each of its Pythons:
// torch.compile's compiler and headers, which every default image
// carries), from a loopback repository of Debian sid (AptRepoDirOf).
func sidPackages() []string {
	pkgs := []string{"gcc", "libc6-dev"}
	for _, py := range testenv.TwoPythons {
		pkgs = append(pkgs, "python"+py, "python"+py+"-venv", "python"+py+"-dev")
	}
	return pkgs
}

// pushBases pushes the two fixture bases under NVIDIA's tag names, with
// repo as their apt source: base is
// the Debian sid root filesystem with two Pythons (without stripped),
// runtime adds Debian's
// real CUDA 11.8 libraries (runtimeLibs) where NVIDIA's runtime image has
// its CUDA libraries. It returns the runtime tag's extra bytes
// (uncompressed, compressed).
func pushBases(ctx context.Context, dir, host string, scale float64, repo *testenv.AptRepo) (raw, compressed int64, bs baseSizes, err error) {
	full, err := testenv.TwoPythonsRootfs(ctx)
	if err != nil {
		return 0, 0, bs, err
	}
	rootfs := filepath.Join(dir, "base-rootfs.tar")
	if bs.Kept, bs.Dropped, err = stripRootfs(full, rootfs); err != nil {
		return 0, 0, bs, err
	}
	// PushImage puts NVIDIA's PATH first.
	env := []string{"CUDA_VERSION=" + cudaImage, "NVIDIA_REQUIRE_CUDA=cuda>=12.6", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"}
	baseRef := host + "/nvidia/cuda:" + cudaImage + "-base-" + osName
	if _, err := testenv.PushImageAptRepo(ctx, rootfs, baseRef, env, repo); err != nil {
		return 0, 0, bs, err
	}
	root, err := testenv.DebianCUDA(ctx)
	if err != nil {
		return 0, 0, bs, err
	}
	all, _ := filepath.Glob(filepath.Join(root, "usr/lib/x86_64-linux-gnu/lib*.so.*.*"))
	slices.Sort(all)
	libs, raw, err := runtimeLibs(all, scale)
	if err != nil {
		return 0, 0, bs, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return libsTar(libs, "usr/local/cuda-12.6/targets/x86_64-linux/lib/") })
	if err != nil {
		return 0, 0, bs, err
	}
	br, err := name.ParseReference(baseRef, name.Insecure)
	if err != nil {
		return 0, 0, bs, err
	}
	base, err := remote.Image(br, remote.WithContext(ctx))
	if err != nil {
		return 0, 0, bs, fmt.Errorf("read %s: %w", baseRef, err)
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "gpuimg bench: Debian's CUDA 11.8 libraries standing in for the runtime flavor's"}})
	if err != nil {
		return 0, 0, bs, err
	}
	rr, err := name.ParseReference(host+"/nvidia/cuda:"+cudaImage+"-runtime-"+osName, name.Insecure)
	if err != nil {
		return 0, 0, bs, err
	}
	if err := remote.Write(rr, img, remote.WithContext(ctx)); err != nil {
		return 0, 0, bs, fmt.Errorf("push %s: %w", rr, err)
	}
	if bs.Compressed, err = imageSize(ctx, baseRef); err != nil {
		return 0, 0, bs, err
	}
	compressed, err = layer.Size()
	return raw, compressed, bs, err
}

// libsTar streams a tar of files under prefix.
func libsTar(files []string, prefix string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		err := testenv.WriteFilesTar(pw, prefix, files, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
		pw.CloseWithError(err)
	}()
	return pr, nil
}

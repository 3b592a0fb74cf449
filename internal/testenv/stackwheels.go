package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// StackWheel is one wheel of the fixture stack LayeredStackWheels writes:
// a real distribution's name, version, size and layout, and where they
// were read. torchtwin.md beside this file records where each
// structural fact comes from.
type StackWheel struct {
	Dist, Version string
	// MB is the real wheel's size in MB (10^6 bytes).
	MB float64
	// Any says the wheel is for any Python 3 (py3-none-…); else it is
	// built for one CPython (cp3XX-cp3XX-…).
	Any bool
	// Libs are the ELF shared objects the wheel ships, by their path in
	// the site directory (nvidia/cublas/lib/libcublas.so.12, top-level
	// cusparselt/lib/libcusparseLt.so.0 for cuSPARSELt 0.6); the first
	// carries the wheel's size. A wheel without Libs is a Python package
	// (its import name's directory) with its size in a data file.
	Libs     []string
	Requires []string
	Source   string
}

// The wheels torch 2.6.0 pulls in from PyPI on Linux x86_64 (its CUDA
// 12.4 build), at the versions and sizes pip printed installing
// torch==2.6.0 torchvision==0.21.0 on CPython 3.11 (pip26Log); the
// nvidia-* and triton pins are torch's Requires-Dist, the same as
// PyTorch's generate_binary_build_matrix.py lists for CUDA 12.4
// (binaryMatrix26). cuSPARSELt 0.6.2 installs to a top-level
// cusparselt/, not under nvidia/.
const (
	pip26Log       = "pip log of `pip install torch==2.6.0 torchvision==0.21.0` on CPython 3.11 (a public notebook; read 2026-12-01)"
	binaryMatrix26 = "pytorch/pytorch .github/scripts/generate_binary_build_matrix.py of the 2.6 cycle (CUDA_ARCHES 11.8, 12.4, 12.6), PYTORCH_EXTRA_INSTALL_REQUIREMENTS[\"12.4\"]"
)

var stackWheels = []StackWheel{
	{Dist: "nvidia-cudnn-cu12", Version: "9.1.0.70", MB: 664.8, Any: true, Libs: []string{"nvidia/cudnn/lib/libcudnn.so.9"}, Requires: []string{"nvidia-cublas-cu12"}, Source: pip26Log},
	{Dist: "nvidia-cublas-cu12", Version: "12.4.5.8", MB: 363.4, Any: true, Libs: []string{"nvidia/cublas/lib/libcublasLt.so.12", "nvidia/cublas/lib/libcublas.so.12"}, Source: pip26Log},
	{Dist: "nvidia-cufft-cu12", Version: "11.2.1.3", MB: 211.5, Any: true, Libs: []string{"nvidia/cufft/lib/libcufft.so.11"}, Requires: []string{"nvidia-nvjitlink-cu12"}, Source: pip26Log},
	{Dist: "nvidia-cusparse-cu12", Version: "12.3.1.170", MB: 207.5, Any: true, Libs: []string{"nvidia/cusparse/lib/libcusparse.so.12"}, Requires: []string{"nvidia-nvjitlink-cu12"}, Source: pip26Log},
	{Dist: "nvidia-nccl-cu12", Version: "2.21.5", MB: 188.7, Any: true, Libs: []string{"nvidia/nccl/lib/libnccl.so.2"}, Source: pip26Log},
	{Dist: "nvidia-cusparselt-cu12", Version: "0.6.2", MB: 150.1, Any: true, Libs: []string{"cusparselt/lib/libcusparseLt.so.0"}, Source: pip26Log},
	{Dist: "nvidia-cusolver-cu12", Version: "11.6.1.9", MB: 127.9, Any: true, Libs: []string{"nvidia/cusolver/lib/libcusolver.so.11"}, Requires: []string{"nvidia-cublas-cu12", "nvidia-nvjitlink-cu12", "nvidia-cusparse-cu12"}, Source: pip26Log},
	{Dist: "nvidia-curand-cu12", Version: "10.3.5.147", MB: 56.3, Any: true, Libs: []string{"nvidia/curand/lib/libcurand.so.10"}, Source: pip26Log},
	{Dist: "nvidia-cuda-nvrtc-cu12", Version: "12.4.127", MB: 24.6, Any: true, Libs: []string{"nvidia/cuda_nvrtc/lib/libnvrtc.so.12"}, Source: pip26Log},
	{Dist: "nvidia-nvjitlink-cu12", Version: "12.4.127", MB: 21.1, Any: true, Libs: []string{"nvidia/nvjitlink/lib/libnvJitLink.so.12"}, Source: pip26Log},
	{Dist: "nvidia-cuda-cupti-cu12", Version: "12.4.127", MB: 13.8, Any: true, Libs: []string{"nvidia/cuda_cupti/lib/libcupti.so.12"}, Source: pip26Log},
	{Dist: "nvidia-cuda-runtime-cu12", Version: "12.4.127", MB: 0.8837, Any: true, Libs: []string{"nvidia/cuda_runtime/lib/libcudart.so.12"}, Source: pip26Log},
	{Dist: "nvidia-nvtx-cu12", Version: "12.4.127", MB: 0.0991, Any: true, Libs: []string{"nvidia/nvtx/lib/libnvToolsExt.so.1"}, Source: pip26Log},
	{Dist: "triton", Version: "3.2.0", MB: 253.2, Libs: []string{"triton/_C/libtriton.so"}, Source: pip26Log},
	{Dist: "sympy", Version: "1.13.1", MB: 6.2, Any: true, Requires: []string{"mpmath<1.4,>=1.1.0"}, Source: pip26Log},
	{Dist: "networkx", Version: "3.4.2", MB: 1.7, Any: true, Source: pip26Log},
	{Dist: "mpmath", Version: "1.3.0", MB: 0.5362, Any: true, Source: pip26Log},
	{Dist: "fsspec", Version: "2025.5.0", MB: 0.1962, Any: true, Source: pip26Log},
	{Dist: "jinja2", Version: "3.1.6", MB: 0.1349, Any: true, Requires: []string{"MarkupSafe>=2.0"}, Source: pip26Log},
	{Dist: "typing-extensions", Version: "4.13.2", MB: 0.0458, Any: true, Source: pip26Log},
	{Dist: "MarkupSafe", Version: "3.0.2", MB: 0.023, Source: pip26Log},
	{Dist: "filelock", Version: "3.18.0", MB: 0.016, Any: true, Source: pip26Log},
}

// TorchMB is the size of the fixture's torch wheel in MB: torch 2.6.0
// for CPython 3.11 on Linux x86_64 (PyPI's, the CUDA 12.4 build) is
// 766.7 MB (pip26Log).
const TorchMB = 766.7

// StackMB is the fixture stack's size in MB at scale 1: torch's wheel
// (TorchMB) and every StackWheel.
func StackMB() float64 {
	mb := TorchMB
	for _, w := range stackWheels {
		mb += w.MB
	}
	return mb
}

// StackWheels are the fixture stack's wheels besides torch (a copy).
func StackWheels() []StackWheel { return append([]StackWheel(nil), stackWheels...) }

// torchCUDARPath is the DT_RPATH list PyTorch links its libraries with
// when the CUDA libraries come from PyPI (.ci/manywheel/build_cuda.sh,
// CUDA_RPATHS of the CUDA 12.1/12.4 branch, the 2.6 cycle; joined with
// ':' and given with --force-rpath, so DT_RPATH, not DT_RUNPATH). Its
// libraries in torch/lib add $ORIGIN (LIB_SO_RPATH); torch/_C adds
// $ORIGIN and $ORIGIN/lib (C_SO_RPATH).
const torchCUDARPath = "$ORIGIN/../../nvidia/cublas/lib:$ORIGIN/../../nvidia/cuda_cupti/lib:$ORIGIN/../../nvidia/cuda_nvrtc/lib:" +
	"$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/cufft/lib:$ORIGIN/../../nvidia/curand/lib:" +
	"$ORIGIN/../../nvidia/cusolver/lib:$ORIGIN/../../nvidia/cusparse/lib:$ORIGIN/../../cusparselt/lib:$ORIGIN/../../nvidia/nccl/lib:" +
	"$ORIGIN/../../nvidia/nvtx/lib"

// torchLib is one ELF file of the fixture torch wheel: its path in the
// wheel, DT_NEEDED and share of the wheel's size.
type torchLib struct {
	path   string
	needed []string
	share  float64
}

// torchLibs are torch's libraries as the fixture builds them: the
// dependency chain torch/_C -> libtorch_python.so -> libtorch.so ->
// libtorch_cuda.so -> the CUDA libraries (libcusparseLt.so.0 among
// them, whose absence fails `from torch._C import *`, as in
// pytorch/pytorch#144433). The shares of the wheel's size are
// unconfirmed (libtorch_cuda.so is most of the real wheel).
var torchLibs = []torchLib{
	{path: "torch/lib/libc10.so", share: 0.01},
	{path: "torch/lib/libc10_cuda.so", needed: []string{"libc10.so", "libcudart.so.12"}, share: 0.005},
	{path: "torch/lib/libtorch_cpu.so", needed: []string{"libc10.so"}, share: 0.25},
	{path: "torch/lib/libtorch_cuda.so", needed: []string{"libc10_cuda.so", "libcudart.so.12", "libcusparse.so.12", "libcufft.so.11", "libcusparseLt.so.0",
		"libcurand.so.10", "libcublas.so.12", "libcublasLt.so.12", "libcudnn.so.9", "libnccl.so.2", "libtorch_cpu.so", "libc10.so"}, share: 0.70},
	{path: "torch/lib/libtorch.so", needed: []string{"libtorch_cpu.so", "libtorch_cuda.so"}},
	{path: "torch/lib/libshm.so", needed: []string{"libtorch_cpu.so", "libc10.so"}},
	{path: "torch/lib/libtorch_python.so", needed: []string{"libshm.so", "libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so", "libc10_cuda.so", "libc10.so"}, share: 0.03},
}

// The C sources of torch's Python entry point, as PyTorch builds it:
// torch/_C is torch/csrc/stub.c, whose PyInit__C calls initModule in
// libtorch_python.so. Both use Python's stable ABI (compiled against the
// host's headers, they load in any CPython 3.11 or later).
const (
	torchPythonSrc = `#define Py_LIMITED_API 0x030b0000
#include <Python.h>
static struct PyModuleDef torch_c = {PyModuleDef_HEAD_INIT, "torch._C", "gpuimg test fixture standing in for torch._C", -1, NULL};
PyObject *initModule(void) { return PyModule_Create(&torch_c); }
`
	torchStubSrc = `#define Py_LIMITED_API 0x030b0000
#include <Python.h>
extern PyObject *initModule(void);
PyMODINIT_FUNC PyInit__C(void) { return initModule(); }
`
)

// PythonIncludes returns the -I flag for the host's Python headers
// (Debian's python3-dev, installed when missing and the test runs as
// root), which the fixture's Python extensions compile against.
func PythonIncludes(ctx context.Context) (string, error) {
	if err := EnsurePackages(ctx, "python3-dev"); err != nil {
		return "", err
	}
	hs, _ := filepath.Glob("/usr/include/python3.*/Python.h")
	if len(hs) == 0 {
		return "", errors.New("python3-dev is installed but no /usr/include/python3.*/Python.h; reinstall python3-dev")
	}
	slices.Sort(hs)
	return "-I" + filepath.Dir(hs[len(hs)-1]), nil
}

// LayeredStackWheels writes a torch stack that is a structural twin of
// torch 2.6.0's CUDA 12 wheels (StackWheels, TorchMB) into dir: the real
// distributions, versions, Requires-Dist pins and top-level layout
// (torch/, torch/lib/, nvidia/X/lib/, cusparselt/lib/, triton/), with real
// ELF shared objects built here (SharedObject) carrying the real sonames,
// DT_NEEDED entries and torch's DT_RPATH list, each wheel scale times
// its real size (scale 1e-3: a real MB is a fixture kB, held in the
// first library's .gpuimg.pad section or a package's data file).
// torch==torch+cuXY, torchvision==vision+cuXY and torchaudio==audio+cuXY
// are written for each CPython of pythons ("3.13"), torch with a
// torch/_C.cpython-3XY-x86_64-linux-gnu.so extension and
// torch/version.py with its cuda line (what verify.py reads).
// `import torch` runs `from torch._C import *`: the dynamic loader loads
// torch/lib's libraries and, through their DT_RPATH, every CUDA
// library, so it fails as the real one does when a directory its RPATH
// names (../../cusparselt/lib from torch/lib) does not resolve.
//
// fill, at most one, is what the libraries' bulk holds: Incompressible
// when none is given (the tests' sizes), HalfCompressible for a benchmark
// whose layer sizes should compress as real ones do.
func LayeredStackWheels(ctx context.Context, dir, torch, vision, audio, cuda string, pythons []string, scale float64, fill ...Fill) error {
	var f Fill
	if len(fill) > 0 {
		f = fill[0]
	}
	inc, err := PythonIncludes(ctx)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpuimg-twins-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	local := "+cu" + strings.ReplaceAll(cuda, ".", "")
	linux := `; platform_system == "Linux" and platform_machine == "x86_64"`
	size := func(mb float64) int { return int(mb * 1e6 * scale) }
	so := func(spec ELFSpec) (string, error) {
		b, err := SharedObject(ctx, work, spec)
		return string(b), err
	}
	pinned := map[string]string{}
	for _, w := range stackWheels {
		if err := writeStackWheel(ctx, work, dir, w, pythons, scale, f); err != nil {
			return err
		}
		pinned[w.Dist] = w.Dist + "==" + w.Version + linux
	}
	// torch's Requires-Dist, in its order (binaryMatrix26, then triton's
	// and sympy's pins).
	torchReq := []string{"filelock", "typing-extensions>=4.10.0", "networkx", "jinja2", "fsspec"}
	for _, d := range []string{"nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-cupti-cu12", "nvidia-cudnn-cu12", "nvidia-cublas-cu12",
		"nvidia-cufft-cu12", "nvidia-curand-cu12", "nvidia-cusolver-cu12", "nvidia-cusparse-cu12", "nvidia-cusparselt-cu12", "nvidia-nccl-cu12",
		"nvidia-nvtx-cu12", "nvidia-nvjitlink-cu12", "triton"} {
		torchReq = append(torchReq, pinned[d])
	}
	torchReq = append(torchReq, `sympy==1.13.1; python_version >= "3.9"`)

	files := map[string]string{
		twinInfo("torch", torch+local): twinMetadata("torch", torch+local, torchReq),
		"torch/__init__.py": `# gpuimg test fixture standing in for torch 2.6.0's torch/__init__.py:
# importing torch._C loads torch/lib's libraries and the CUDA libraries
# they need through their DT_RPATH, as the real one does.
from .version import __version__
from torch._C import *  # noqa: F403
`,
		"torch/version.py": fmt.Sprintf("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n__version__ = '%s%s'\ndebug = False\ncuda: Optional[str] = '%s'\ngit_version = 'gpuimg-testenv'\nhip: Optional[str] = None\n", torch, local, cuda),
	}
	for _, l := range torchLibs {
		spec := ELFSpec{Soname: path.Base(l.path), Needed: l.needed, SearchPath: torchCUDARPath + ":$ORIGIN", Size: int(l.share * float64(size(TorchMB))), Fill: f}
		if l.path == "torch/lib/libtorch_python.so" {
			spec.Source, spec.CFlags = torchPythonSrc, []string{inc}
		}
		b, err := so(spec)
		if err != nil {
			return err
		}
		files[l.path] = b
	}
	ext, err := so(ELFSpec{Needed: []string{"libtorch_python.so"}, SearchPath: torchCUDARPath + ":$ORIGIN:$ORIGIN/lib", Source: torchStubSrc, CFlags: []string{inc}})
	if err != nil {
		return err
	}
	for _, py := range pythons {
		cp := "cp" + strings.ReplaceAll(py, ".", "")
		tag := cp + "-" + cp + "-linux_x86_64"
		files["torch/_C."+strings.Replace(cp, "cp", "cpython-", 1)+"-x86_64-linux-gnu.so"] = ext
		if _, err := Wheel(dir, "torch", torch+local, tag, files); err != nil {
			return err
		}
		delete(files, "torch/_C."+strings.Replace(cp, "cp", "cpython-", 1)+"-x86_64-linux-gnu.so")
		for _, v := range []struct{ dist, version string }{{"torchvision", vision}, {"torchaudio", audio}} {
			if _, err := Wheel(dir, v.dist, v.version+local, tag, map[string]string{
				twinInfo(v.dist, v.version+local): twinMetadata(v.dist, v.version+local, []string{"torch==" + torch + local}),
				v.dist + "/__init__.py":           fmt.Sprintf("__version__ = '%s%s'\n", v.version, local),
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// twinMetadata is a fixture wheel's METADATA with a Provides-Extra line
// for each of extras and the Requires-Dist lines requires (markers
// included).
func twinMetadata(dist, version string, requires []string, extras ...string) string {
	var m strings.Builder
	fmt.Fprintf(&m, "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: gpuimg test fixture standing in for %s\n", dist, version, dist)
	for _, e := range extras {
		m.WriteString("Provides-Extra: " + e + "\n")
	}
	for _, r := range requires {
		m.WriteString("Requires-Dist: " + r + "\n")
	}
	return m.String()
}

// twinInfo is the path of a fixture wheel's METADATA.
func twinInfo(dist, version string) string {
	return strings.ReplaceAll(dist, "-", "_") + "-" + version + ".dist-info/METADATA"
}

// writeStackWheel writes w (a StackWheel) into dir, scale times its real
// size: its libraries as ELF shared objects built in work with their
// sonames, a package's size in a data file; one wheel for any Python, or
// one for each CPython of pythons.
func writeStackWheel(ctx context.Context, work, dir string, w StackWheel, pythons []string, scale float64, fill Fill) error {
	size := int(w.MB * 1e6 * scale)
	files := map[string]string{twinInfo(w.Dist, w.Version): twinMetadata(w.Dist, w.Version, w.Requires)}
	note := fmt.Sprintf("# gpuimg test fixture standing in for %s %s (%s)\n", w.Dist, w.Version, w.Source)
	if len(w.Libs) == 0 {
		pkg := strings.ToLower(strings.ReplaceAll(w.Dist, "-", "_"))
		files[pkg+"/__init__.py"] = note
		files[pkg+"/_payload.bin"] = fill.bytes(w.Dist, size)
	}
	for i, l := range w.Libs {
		spec := ELFSpec{Soname: path.Base(l), Fill: fill}
		if i == 0 {
			spec.Size = size
		}
		b, err := SharedObject(ctx, work, spec)
		if err != nil {
			return err
		}
		files[l] = string(b)
		// Each package directory above lib/ is a Python package, as in
		// the real nvidia-* and triton wheels (every nvidia-* wheel ships
		// nvidia/__init__.py); no listing of cuSPARSELt 0.6's cusparselt/
		// was read, so it gets only its library.
		for d := path.Dir(path.Dir(l)); d != "." && d != "cusparselt"; d = path.Dir(d) {
			files[d+"/__init__.py"] = note
		}
	}
	if w.Any {
		tag := "py3-none-any"
		if len(w.Libs) > 0 {
			tag = "py3-none-manylinux2014_x86_64"
		}
		_, err := Wheel(dir, w.Dist, w.Version, tag, files)
		return err
	}
	for _, py := range pythons {
		cp := "cp" + strings.ReplaceAll(py, ".", "")
		if _, err := Wheel(dir, w.Dist, w.Version, cp+"-"+cp+"-manylinux_2_17_x86_64.manylinux2014_x86_64", files); err != nil {
			return err
		}
	}
	return nil
}

// Fill is what a fixture's bulk bytes are: Incompressible (the
// default), or HalfCompressible, which compresses about 2:1 with zstd or
// gzip, as real CUDA libraries do (bench/README.md, "Compression":
// libtorch_cuda.so and cuBLAS take 0.50 to 0.67 of their size).
type Fill int

const (
	// Incompressible bytes: a SHA-256 stream (payload).
	Incompressible Fill = iota
	// HalfCompressible bytes: each 64-byte block is 32 bytes of the
	// SHA-256 stream and 32 zero bytes.
	HalfCompressible
)

// bytes is n bytes of fill f, the same for the same seed.
func (f Fill) bytes(seed string, n int) string {
	if f != HalfCompressible {
		return payload(seed, n)
	}
	var b strings.Builder
	b.Grow(n + 64)
	var ctr [8]byte
	var zeros [sha256.Size]byte
	for i := uint64(0); b.Len() < n; i++ {
		binary.BigEndian.PutUint64(ctr[:], i)
		sum := sha256.Sum256(append([]byte(seed), ctr[:]...))
		b.Write(sum[:])
		b.Write(zeros[:])
	}
	return b.String()[:n]
}

// payload is n incompressible bytes, the same for the same seed.
func payload(seed string, n int) string {
	var b strings.Builder
	b.Grow(n + sha256.Size)
	var ctr [8]byte
	for i := uint64(0); b.Len() < n; i++ {
		binary.BigEndian.PutUint64(ctr[:], i)
		sum := sha256.Sum256(append([]byte(seed), ctr[:]...))
		b.Write(sum[:])
	}
	return b.String()[:n]
}

// PushBaseRootfs pushes rootfsTar (BaseRootfs, TwoPythonsRootfs) as tag
// (nvidia/cuda:12.8.2-base-ubuntu24.04) to the registry standing in for
// Docker Hub, with NVIDIA's environment, and returns its digest.
func (e *Env) PushBaseRootfs(ctx context.Context, rootfsTar, tag string) (string, error) {
	repo, version, _ := strings.Cut(tag, ":")
	return pushImage(ctx, rootfsTar, e.Registry.Host+"/"+repo+":"+version, baseEnv(version), nil, e.AptRepo)
}

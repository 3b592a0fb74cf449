package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
)

// StackWheel is one wheel of the fixture stack LayeredStackWheels writes:
// a real distribution's name, version and size, and where its size was
// read.
type StackWheel struct {
	Dist, Version string
	// MB is the real wheel's size in MB (10^6 bytes).
	MB float64
	// Any says the wheel is for any Python 3 (py3-none-…); else it is
	// built for one CPython (cp3XX-cp3XX-…).
	Any bool
	// Lib is the shared library an nvidia-* wheel carries (nvidia/DIR/lib/NAME).
	Lib      string
	Requires []string
	Source   string
}

// The wheels torch 2.3.1+cu121 pulls in on Linux x86_64, with their sizes.
// The nvidia-* sizes are those pip printed while downloading them
// (pytorch/pytorch#121646, a maintainer's log, and microsoft/T-MAC#26, both
// read 2026-11-30: cublas 410.6 MB, cudnn 731.7 MB, cufft 121.6 MB, curand
// 56.5 MB, cusolver 124.2 MB, nvrtc 23.7 MB, cupti 14.1 MB, cuda-runtime
// 823.6 kB, nvtx 99.1 kB). Unconfirmed, from memory of PyPI's file lists
// and marked so: torch, triton, cusparse, nccl, nvjitlink and the small
// pure-Python dependencies.
const pytorchLog = "https://github.com/pytorch/pytorch/issues/121646"

var stackWheels = []StackWheel{
	{Dist: "nvidia-cudnn-cu12", Version: "8.9.2.26", MB: 731.7, Any: true, Lib: "cudnn/lib/libcudnn.so.8", Requires: []string{"nvidia-cublas-cu12"}, Source: pytorchLog},
	{Dist: "nvidia-cublas-cu12", Version: "12.1.3.1", MB: 410.6, Any: true, Lib: "cublas/lib/libcublas.so.12", Source: pytorchLog},
	{Dist: "nvidia-cusparse-cu12", Version: "12.1.0.106", MB: 196, Any: true, Lib: "cusparse/lib/libcusparse.so.12", Requires: []string{"nvidia-nvjitlink-cu12"}, Source: "unconfirmed"},
	{Dist: "nvidia-nccl-cu12", Version: "2.20.5", MB: 176, Any: true, Lib: "nccl/lib/libnccl.so.2", Source: "unconfirmed"},
	{Dist: "nvidia-cusolver-cu12", Version: "11.4.5.107", MB: 124.2, Any: true, Lib: "cusolver/lib/libcusolver.so.11", Requires: []string{"nvidia-cublas-cu12", "nvidia-nvjitlink-cu12", "nvidia-cusparse-cu12"}, Source: pytorchLog},
	{Dist: "nvidia-cufft-cu12", Version: "11.0.2.54", MB: 121.6, Any: true, Lib: "cufft/lib/libcufft.so.11", Source: pytorchLog},
	{Dist: "nvidia-curand-cu12", Version: "10.3.2.106", MB: 56.5, Any: true, Lib: "curand/lib/libcurand.so.10", Source: pytorchLog},
	{Dist: "nvidia-cuda-nvrtc-cu12", Version: "12.1.105", MB: 23.7, Any: true, Lib: "cuda_nvrtc/lib/libnvrtc.so.12", Source: pytorchLog},
	{Dist: "nvidia-nvjitlink-cu12", Version: "12.4.127", MB: 21, Any: true, Lib: "nvjitlink/lib/libnvJitLink.so.12", Source: "unconfirmed"},
	{Dist: "nvidia-cuda-cupti-cu12", Version: "12.1.105", MB: 14.1, Any: true, Lib: "cuda_cupti/lib/libcupti.so.12", Source: pytorchLog},
	{Dist: "nvidia-cuda-runtime-cu12", Version: "12.1.105", MB: 0.8236, Any: true, Lib: "cuda_runtime/lib/libcudart.so.12", Source: pytorchLog},
	{Dist: "nvidia-nvtx-cu12", Version: "12.1.105", MB: 0.0991, Any: true, Lib: "nvtx/lib/libnvToolsExt.so.1", Source: "https://github.com/microsoft/T-MAC/issues/26"},
	{Dist: "triton", Version: "2.3.1", MB: 168, Requires: []string{"filelock"}, Source: "unconfirmed"},
	{Dist: "sympy", Version: "1.13.0", MB: 6.2, Any: true, Requires: []string{"mpmath"}, Source: "unconfirmed"},
	{Dist: "networkx", Version: "3.3", MB: 1.7, Any: true, Source: "unconfirmed"},
	{Dist: "mpmath", Version: "1.3.0", MB: 0.54, Any: true, Source: "unconfirmed"},
	{Dist: "fsspec", Version: "2024.6.1", MB: 0.18, Any: true, Source: "unconfirmed"},
	{Dist: "jinja2", Version: "3.1.4", MB: 0.13, Any: true, Requires: []string{"MarkupSafe"}, Source: "unconfirmed"},
	{Dist: "typing-extensions", Version: "4.12.2", MB: 0.037, Any: true, Source: "unconfirmed"},
	{Dist: "MarkupSafe", Version: "2.1.5", MB: 0.026, Source: "unconfirmed"},
	{Dist: "filelock", Version: "3.15.4", MB: 0.016, Any: true, Source: "unconfirmed"},
}

// TorchMB is the size of the fixture's torch wheel in MB: torch 2.3.1+cu121
// for CPython 3.11 on Linux x86_64 is about 781 MB (unconfirmed, from
// memory of download.pytorch.org's listing).
const TorchMB = 781

// StackWheels are the fixture stack's wheels besides torch (a copy).
func StackWheels() []StackWheel { return append([]StackWheel(nil), stackWheels...) }

// LayeredStackWheels writes a torch stack with the real proportions of
// torch 2.3.1+cu121's wheels (StackWheels, TorchMB) into dir, each wheel's
// payload scale times the real size in incompressible bytes (scale 1e-3:
// a real MB is a fixture kB): torch==torch+cuXY, torchvision==vision+cuXY
// and torchaudio==audio+cuXY for each CPython of pythons ("3.13"), torch
// requiring the nvidia-*, triton and pure-Python wheels as the real one
// does, nvidia-* wheels with their library at nvidia/DIR/lib/NAME, and
// torch/version.py with its cuda line (what verify.py reads). Importing
// the fixture torch fails, as the real one's libraries do, unless
// nvidia/cublas/lib/libcublas.so.12 is found where torch's RPATH
// ($ORIGIN/../../nvidia/cublas/lib from torch/lib) points.
func LayeredStackWheels(dir, torch, vision, audio, cuda string, pythons []string, scale float64) error {
	local := "+cu" + strings.ReplaceAll(cuda, ".", "")
	linux := `; platform_system == "Linux" and platform_machine == "x86_64"`
	size := func(mb float64) int { return int(mb * 1e6 * scale) }
	meta := func(dist, version string, requires []string) string {
		var m strings.Builder
		fmt.Fprintf(&m, "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: gpuimg test fixture standing in for %s\n", dist, version, dist)
		for _, r := range requires {
			m.WriteString("Requires-Dist: " + r + "\n")
		}
		return m.String()
	}
	info := func(dist, version string) string {
		return strings.ReplaceAll(dist, "-", "_") + "-" + version + ".dist-info/METADATA"
	}
	var torchReq []string
	for _, w := range stackWheels {
		files := map[string]string{}
		files[info(w.Dist, w.Version)] = meta(w.Dist, w.Version, w.Requires)
		pkg := strings.ToLower(strings.ReplaceAll(w.Dist, "-", "_"))
		if w.Lib != "" {
			pkg = "nvidia/" + strings.SplitN(w.Lib, "/", 2)[0]
			files["nvidia/"+w.Lib] = payload(w.Dist, size(w.MB))
		} else {
			files[pkg+"/_payload.bin"] = payload(w.Dist, size(w.MB))
		}
		files[pkg+"/__init__.py"] = fmt.Sprintf("# gpuimg test fixture standing in for %s %s (%s)\n", w.Dist, w.Version, w.Source)
		switch {
		case w.Any:
			tag := "py3-none-any"
			if w.Lib != "" {
				tag = "py3-none-manylinux1_x86_64"
			}
			if _, err := Wheel(dir, w.Dist, w.Version, tag, files); err != nil {
				return err
			}
		default:
			for _, py := range pythons {
				cp := "cp" + strings.ReplaceAll(py, ".", "")
				if _, err := Wheel(dir, w.Dist, w.Version, cp+"-"+cp+"-manylinux_2_17_x86_64", files); err != nil {
					return err
				}
			}
		}
		if strings.HasPrefix(w.Dist, "nvidia-") || w.Dist == "triton" {
			torchReq = append(torchReq, w.Dist+"=="+w.Version+linux)
		}
	}
	torchReq = append(torchReq, "filelock", "typing-extensions>=4.8.0", "sympy", "networkx", "jinja2", "fsspec")
	for _, py := range pythons {
		cp := "cp" + strings.ReplaceAll(py, ".", "")
		tag := cp + "-" + cp + "-linux_x86_64"
		if _, err := Wheel(dir, "torch", torch+local, tag, map[string]string{
			info("torch", torch+local): meta("torch", torch+local, torchReq),
			"torch/__init__.py": `import os
from .version import __version__

# As torch's libraries do (RPATH $ORIGIN/../../nvidia/cublas/lib from torch/lib).
_cublas = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "..", "..", "nvidia", "cublas", "lib", "libcublas.so.12")
if not os.path.exists(_cublas):
    raise ImportError("libcublas.so.12: cannot open shared object file: No such file or directory")
`,
			"torch/lib/_payload.bin": payload("torch", size(TorchMB)),
			"torch/version.py":       fmt.Sprintf("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n__version__ = '%s%s'\ndebug = False\ncuda: Optional[str] = '%s'\ngit_version = 'gpuimg-testenv'\nhip: Optional[str] = None\n", torch, local, cuda),
		}); err != nil {
			return err
		}
		for _, v := range []struct{ dist, version string }{{"torchvision", vision}, {"torchaudio", audio}} {
			if _, err := Wheel(dir, v.dist, v.version+local, tag, map[string]string{
				info(v.dist, v.version+local): meta(v.dist, v.version+local, []string{"torch==" + torch + local}),
				v.dist + "/__init__.py":       fmt.Sprintf("__version__ = '%s%s'\n", v.version, local),
			}); err != nil {
				return err
			}
		}
	}
	return nil
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

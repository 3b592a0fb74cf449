package matrix

import (
	"fmt"
	"strings"
)

// DefaultFlavor documents the flavor rule pickFlavor applies when
// Constraints.Flavor is empty:
//
//   - base, when every framework of the stack brings CUDA's libraries
//     (cuBLAS, cuDNN, NCCL, …) as pip wheels (PyTorch's CUDA wheels,
//     jax[cudaNN], tensorflow[and-cuda]): nvidia/cuda's base flavor has
//     only the CUDA runtime and the compat libraries, so no library is in
//     the image twice (the runtime flavor adds about 2.3 GB that the
//     wheels bring again);
//   - runtime (cudnn-runtime when cuDNN must be in the image), when a
//     framework loads CUDA from the image (TensorFlow < 2.14), the stack
//     has no framework, --cudnn asks for a system cuDNN, or an OS package
//     the build adds uses CUDA's libraries (AptNeedsCUDALibs).
//
// A flavor given by the user always wins.
const DefaultFlavor = "base"

// cudaLibPackages are the name prefixes of OS packages that are, or link
// against, the CUDA libraries the runtime flavor carries (NVIDIA's
// cuda-libraries and libnccl2, cuDNN, TensorRT).
var cudaLibPackages = []string{
	"cuda-", "libcublas", "libcudnn", "libcufft", "libcufile", "libcurand", "libcusolver",
	"libcusparse", "libcutensor", "libnccl", "libnpp", "libnvinfer", "libnvjitlink",
	"libnvjpeg", "libnvonnxparsers", "libnvrtc", "tensorrt",
}

// AptNeedsCUDALibs returns the OS packages (apt or dnf names, with an
// optional =VERSION) that use CUDA's libraries from the image, judged by
// name: cuda-*, libcublas*, libcudnn*, libnccl*, TensorRT, ….
func AptNeedsCUDALibs(pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		name, _, _ := strings.Cut(p, "=")
		for _, prefix := range cudaLibPackages {
			if strings.HasPrefix(name, prefix) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// pickFlavor chooses the candidate's image flavor (DefaultFlavor) and
// says why.
func (s *search) pickFlavor(cand *onCUDA) (flavor, why string) {
	if s.c.Flavor != "" {
		return s.c.Flavor, fmt.Sprintf("the %s flavor was asked for", s.c.Flavor)
	}
	var sys, wheels []string
	for _, ch := range cand.combo {
		if ch.sysLibs {
			sys = append(sys, ch.name+" "+ch.version.String())
		} else {
			wheels = append(wheels, ch.name+" "+ch.version.String())
		}
	}
	switch {
	case len(sys) > 0:
		return "runtime", fmt.Sprintf("runtime: %s loads CUDA's libraries from the image, not from pip wheels", strings.Join(sys, ", "))
	case len(cand.combo) == 0:
		return "runtime", "runtime: no framework brings CUDA's libraries as pip wheels, so the image carries them"
	case cand.sysCuDNN:
		return "runtime", "runtime: the cuDNN asked for must be in the image"
	}
	if apt := AptNeedsCUDALibs(s.c.Apt); len(apt) > 0 {
		return "runtime", fmt.Sprintf("runtime: the OS packages %s use CUDA's libraries from the image", strings.Join(apt, ", "))
	}
	return "base", fmt.Sprintf("base: %s bring%s CUDA's libraries as pip wheels (nvidia-*), and the base flavor adds only the CUDA runtime and compat libraries, so none is in the image twice (give --flavor runtime for NVIDIA's system copies too)",
		strings.Join(wheels, " and "), map[bool]string{true: "s"}[len(wheels) == 1])
}

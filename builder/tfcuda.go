package builder

import (
	"fmt"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// TensorFlow finds its CUDA libraries at run time: tsl's dso_loader
// dlopens each by soname (libcudart.so.12, libcudnn.so.8, …) from
// libtensorflow_framework.so.2, so the dynamic loader searches that
// library's RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache and the default
// directories, and never the objects' DT_NEEDED. tensorflow[and-cuda]
// 2.16.1 installs the libraries as NVIDIA's pip wheels (nvidia/*/lib)
// whose directories its libraries' search paths do not name:
// tf.config.list_physical_devices('GPU') is empty although `import
// tensorflow` works (tensorflow/tensorflow#63362, which also reports
// 2.17.0rc0; #85311 reports 2.18.0 in a poetry venv). The release that
// fixed it was not established from sources, so the rule holds for every
// and-cuda stack; it is harmless where TensorFlow finds them itself.
// internal/testenv/tftwin.md records the sources.

// tfFrameworkLib is the TensorFlow library that opens the CUDA libraries
// (tsl's dso_loader and cuda_libdevice_path are in it), relative to the
// site directory.
const tfFrameworkLib = "tensorflow/libtensorflow_framework.so.2"

// VenvLdConf is the dynamic loader configuration file the build writes
// for a stack whose TensorFlow takes CUDA from pip (tfPipCUDA): the
// directories of the venv's nvidia/*/lib, for ldconfig's cache.
const VenvLdConf = "/etc/ld.so.conf.d/gpuimg-venv-nvidia.conf"

// tfPipCUDA says the stack's TensorFlow is installed with its and-cuda
// extra, so its CUDA libraries are NVIDIA's pip wheels in the venv
// (matrix: TensorFlow 2.14 and later).
func tfPipCUDA(s matrix.Stack) bool {
	fw, ok := s.Frameworks[matrix.FrameworkTensorFlow]
	if !ok {
		return false
	}
	for _, p := range fw.Packages {
		if strings.HasPrefix(p, "tensorflow[and-cuda]") {
			return true
		}
	}
	return false
}

// tfDlopenSonames are the sonames TensorFlow's dso_loader opens for a
// build against CUDA major cuda and cuDNN major cudnn: GetDsoHandle(name,
// version) of libcudart, libcublas, libcublasLt (cuBLAS's version),
// libcufft, libcusolver, libcusparse and libcudnn, each version its
// library's soname major as the CUDA release ships it (cuFFT 11 and
// cuSOLVER 11 in CUDA 12; cudart 11.0, cuFFT 10 in CUDA 11). NCCL and
// CUPTI are left out: the profiler alone opens CUPTI, and whether
// 2.16's NCCL is linked or opened was not read. nil for another major.
func tfDlopenSonames(cudaMajor, cudnnMajor int) []string {
	var v map[string]string
	switch cudaMajor {
	case 12:
		v = map[string]string{"cudart": "12", "cublas": "12", "cublasLt": "12", "cufft": "11", "cusolver": "11", "cusparse": "12"}
	case 11:
		v = map[string]string{"cudart": "11.0", "cublas": "11", "cublasLt": "11", "cufft": "10", "cusolver": "11", "cusparse": "11"}
	default:
		return nil
	}
	var out []string
	for _, n := range []string{"cudart", "cublas", "cublasLt", "cufft", "cusolver", "cusparse"} {
		out = append(out, "lib"+n+".so."+v[n])
	}
	return append(out, fmt.Sprintf("libcudnn.so.%d", cudnnMajor))
}

// tfProofArgs are proof.py's options for the stack's TensorFlow: every
// library its dso_loader opens resolves from libtensorflow_framework.so.2
// (--dlopen), and XLA finds ptxas and libdevice (--xla). None without
// TensorFlow.
func tfProofArgs(s matrix.Stack) []string {
	fw, ok := s.Frameworks[matrix.FrameworkTensorFlow]
	if !ok {
		return nil
	}
	cuda, err1 := matrix.ParseVersion(fw.CUDA)
	cudnn, err2 := matrix.ParseVersion(fw.CuDNN)
	var args []string
	if err1 == nil && err2 == nil {
		if names := tfDlopenSonames(cuda.Major(), cudnn.Major()); names != nil {
			args = append(args, "--dlopen="+tfFrameworkLib+":"+strings.Join(names, ","))
		}
	}
	return append(args, "--xla="+tfFrameworkLib)
}

// xlaNvccWheels is, per CUDA major, the pip wheel that brings ptxas and
// libdevice (nvidia/cuda_nvcc/bin/ptxas,
// nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc) to a TensorFlow that
// takes CUDA from the base image on a flavor without them (runtime,
// base: NVIDIA's devel images install cuda-nvcc): NVIDIA's
// nvidia-cuda-nvcc wheel at the version TensorFlow's own and-cuda extra
// pins for that major (2.14's setup.py: nvidia-cuda-nvcc-cu11==11.8.89,
// matrix source tensorflow-setup-py-2.14). Every TensorFlow that takes
// CUDA from the image (before 2.14) is built for CUDA 11.
var xlaNvccWheels = map[int]string{11: "nvidia-cuda-nvcc-cu11==11.8.89"}

// tfXLAWheel is the wheel the TensorFlow step adds for XLA's ptxas and
// libdevice (xlaNvccWheels), "" when the stack needs none: no
// TensorFlow, CUDA from pip (the and-cuda extra pins nvidia-cuda-nvcc),
// or a devel flavor. An error when the stack needs one and none is known.
func tfXLAWheel(s matrix.Stack) (string, error) {
	fw, ok := s.Frameworks[matrix.FrameworkTensorFlow]
	if !ok || tfPipCUDA(s) || s.Flavor == "devel" {
		return "", nil
	}
	v, err := matrix.ParseVersion(fw.CUDA)
	if err != nil {
		return "", err
	}
	w, ok := xlaNvccWheels[v.Major()]
	if !ok {
		return "", fmt.Errorf("tensorflow %s takes CUDA %s from the image, and the %s flavor has no ptxas or libdevice for XLA; build with --flavor devel", fw.Version, fw.CUDA, s.Flavor)
	}
	return w, nil
}

// xlaDataDir is where the TensorFlow step's nvidia-cuda-nvcc wheel
// (tfXLAWheel) puts ptxas and libdevice: the venv's site directory's
// nvidia/cuda_nvcc (through a link to the shared site directory in a
// layered build).
func xlaDataDir(py string) string {
	return VenvDir + "/lib/python" + py + "/site-packages/nvidia/cuda_nvcc"
}

// tfLoaderConfScript prints the real directories of the venv's
// nvidia/*/lib that hold a shared object, sorted, one a line (through
// the venv's links to a shared site directory, LayeredDockerfile's).
const tfLoaderConfScript = `import glob, os, sysconfig; ` +
	`ds = {os.path.realpath(d) for d in glob.glob(os.path.join(sysconfig.get_path("purelib"), "nvidia", "*", "lib")) if any(".so" in f for f in os.listdir(d))}; ` +
	`print("\n".join(sorted(ds)))`

// tfCUDASteps writes what a TensorFlow stack needs after the framework
// steps for TensorFlow to use the GPU: XLA_FLAGS naming the data
// directory of the nvidia-cuda-nvcc wheel the TensorFlow step added
// (tfXLAWheel), and, for a stack whose TensorFlow takes CUDA from pip
// (tfPipCUDA), the step that makes the venv's nvidia/*/lib resolvable
// for the dynamic loader: VenvLdConf lists them and ldconfig caches
// them, so dlopen from any library finds them with no environment
// variable. ldconfig's aux-cache (inode numbers and times, pkgRunFiles)
// is removed in the same step; ld.so.cache itself depends only on the
// libraries. The step runs after the framework steps, on the
// frameworks' stage and again on a layered image (whose venv is made
// anew).
func (g *gen) tfCUDASteps() {
	if w, _ := tfXLAWheel(g.d.Stack); w != "" {
		// XLA looks in --xla_gpu_cuda_data_dir first (tensorflow#58681);
		// a TensorFlow older than 2.14 may not look beside its libraries.
		g.w("\n# XLA's ptxas and libdevice, from %s (the base image's flavor has none).\n", w)
		g.w("ENV XLA_FLAGS=--xla_gpu_cuda_data_dir=%s\n", xlaDataDir(g.d.Stack.Python))
	}
	if !tfPipCUDA(g.d.Stack) {
		return
	}
	g.w("\n# TensorFlow dlopens its CUDA libraries; the loader's cache lists the venv's nvidia/*/lib (2.16.1 finds them no other way: tensorflow#63362).\n")
	g.w("RUN %s\n", clamped(fmt.Sprintf("%s/bin/python -c %s > %s \\\n && ldconfig && rm -f /var/cache/ldconfig/aux-cache", VenvDir, quoteAll([]string{tfLoaderConfScript})[0], VenvLdConf)))
}

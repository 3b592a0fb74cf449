package testenv

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// TensorFlow's twins (TensorFlowTwinWheels): tftwin.md beside this file
// records where each fact was read and what is unconfirmed.
const (
	// tf216Log: pip logs that install tensorflow[and-cuda]==2.16.*
	// (rstudio/tensorflow#603, devanshkv/fetch#35) and the same twelve
	// pins listed beside tensorflow[and-cuda]==2.16.1 (astral-sh/uv
	// issue of 2024-05-25); read 2026-12-02.
	tf216Log = "pip logs of tensorflow[and-cuda]==2.16.* (rstudio/tensorflow#603, devanshkv/fetch#35; read 2026-12-02)"
	// tf215Setup: setup.py's EXTRA_PACKAGES['and-cuda'] at commit
	// 0b15fdfcb3fd (_VERSION 2.15.0.post1), as matrix/data/tensorflow.yaml
	// records it (source tensorflow-setup-py-2.15.0.post1).
	tf215Setup = "tensorflow setup.py at 0b15fdfcb3fd (2.15.0.post1), EXTRA_PACKAGES['and-cuda'] (matrix source tensorflow-setup-py-2.15.0.post1)"
	// TFTwinVersion is the TensorFlow release whose twin shows
	// tensorflow/tensorflow#63362.
	TFTwinVersion = "2.16.1"
)

// tfTwin is one TensorFlow release the twin stands for: the nvidia-*
// wheels its and-cuda extra pins, pins of that extra no index serves
// (no wheel is written for them), and the RUNPATH of
// libtensorflow_framework.so.2.
type tfTwin struct {
	wheels   []StackWheel
	unserved []string
	fwPath   string
}

// tfWheels216 are the nvidia-* wheels tensorflow[and-cuda]==2.16.1 pins,
// at its pins, with the libraries TensorFlow opens from them; cuda_nvcc
// carries ptxas and libdevice, which XLA looks for under
// nvidia/cuda_nvcc.
var tfWheels216 = []StackWheel{
	{Dist: "nvidia-cublas-cu12", Version: "12.3.4.1", Any: true, Libs: []string{"nvidia/cublas/lib/libcublas.so.12", "nvidia/cublas/lib/libcublasLt.so.12"}, Source: tf216Log},
	{Dist: "nvidia-cuda-cupti-cu12", Version: "12.3.101", Any: true, Libs: []string{"nvidia/cuda_cupti/lib/libcupti.so.12"}, Source: tf216Log},
	{Dist: "nvidia-cuda-nvcc-cu12", Version: "12.3.107", Any: true, Source: tf216Log},
	{Dist: "nvidia-cuda-nvrtc-cu12", Version: "12.3.107", Any: true, Libs: []string{"nvidia/cuda_nvrtc/lib/libnvrtc.so.12"}, Source: tf216Log},
	{Dist: "nvidia-cuda-runtime-cu12", Version: "12.3.101", Any: true, Libs: []string{"nvidia/cuda_runtime/lib/libcudart.so.12"}, Source: tf216Log},
	{Dist: "nvidia-cudnn-cu12", Version: "8.9.7.29", Any: true, Libs: []string{"nvidia/cudnn/lib/libcudnn.so.8"}, Source: tf216Log},
	{Dist: "nvidia-cufft-cu12", Version: "11.0.12.1", Any: true, Libs: []string{"nvidia/cufft/lib/libcufft.so.11"}, Source: tf216Log},
	{Dist: "nvidia-curand-cu12", Version: "10.3.4.107", Any: true, Libs: []string{"nvidia/curand/lib/libcurand.so.10"}, Source: tf216Log},
	{Dist: "nvidia-cusolver-cu12", Version: "11.5.4.101", Any: true, Libs: []string{"nvidia/cusolver/lib/libcusolver.so.11"}, Source: tf216Log},
	{Dist: "nvidia-cusparse-cu12", Version: "12.2.0.103", Any: true, Libs: []string{"nvidia/cusparse/lib/libcusparse.so.12"}, Source: tf216Log},
	{Dist: "nvidia-nccl-cu12", Version: "2.19.3", Any: true, Libs: []string{"nvidia/nccl/lib/libnccl.so.2"}, Source: tf216Log},
	{Dist: "nvidia-nvjitlink-cu12", Version: "12.3.101", Any: true, Libs: []string{"nvidia/nvjitlink/lib/libnvJitLink.so.12"}, Source: tf216Log},
}

// tfWheels215 are those of 2.15.0.post1's extra (2.15.0's pins the same
// twelve, and tensorrt).
var tfWheels215 = []StackWheel{
	{Dist: "nvidia-cublas-cu12", Version: "12.2.5.6", Any: true, Libs: []string{"nvidia/cublas/lib/libcublas.so.12", "nvidia/cublas/lib/libcublasLt.so.12"}, Source: tf215Setup},
	{Dist: "nvidia-cuda-cupti-cu12", Version: "12.2.142", Any: true, Libs: []string{"nvidia/cuda_cupti/lib/libcupti.so.12"}, Source: tf215Setup},
	{Dist: "nvidia-cuda-nvcc-cu12", Version: "12.2.140", Any: true, Source: tf215Setup},
	{Dist: "nvidia-cuda-nvrtc-cu12", Version: "12.2.140", Any: true, Libs: []string{"nvidia/cuda_nvrtc/lib/libnvrtc.so.12"}, Source: tf215Setup},
	{Dist: "nvidia-cuda-runtime-cu12", Version: "12.2.140", Any: true, Libs: []string{"nvidia/cuda_runtime/lib/libcudart.so.12"}, Source: tf215Setup},
	{Dist: "nvidia-cudnn-cu12", Version: "8.9.4.25", Any: true, Libs: []string{"nvidia/cudnn/lib/libcudnn.so.8"}, Source: tf215Setup},
	{Dist: "nvidia-cufft-cu12", Version: "11.0.8.103", Any: true, Libs: []string{"nvidia/cufft/lib/libcufft.so.11"}, Source: tf215Setup},
	{Dist: "nvidia-curand-cu12", Version: "10.3.3.141", Any: true, Libs: []string{"nvidia/curand/lib/libcurand.so.10"}, Source: tf215Setup},
	{Dist: "nvidia-cusolver-cu12", Version: "11.5.2.141", Any: true, Libs: []string{"nvidia/cusolver/lib/libcusolver.so.11"}, Source: tf215Setup},
	{Dist: "nvidia-cusparse-cu12", Version: "12.1.2.141", Any: true, Libs: []string{"nvidia/cusparse/lib/libcusparse.so.12"}, Source: tf215Setup},
	{Dist: "nvidia-nccl-cu12", Version: "2.16.5", Any: true, Libs: []string{"nvidia/nccl/lib/libnccl.so.2"}, Source: tf215Setup},
	{Dist: "nvidia-nvjitlink-cu12", Version: "12.2.140", Any: true, Libs: []string{"nvidia/nvjitlink/lib/libnvJitLink.so.12"}, Source: tf215Setup},
}

// tfNvidiaRunPath is the RUNPATH the 2.15 twins' libtensorflow_framework.so.2
// carries: cuda_rpath_flags' $ORIGIN/../<relpath> for each nvidia/*/lib
// TensorFlow opens (tsl cuda_build_defs.bzl), so that 2.15 finds them
// itself, as 2.15.1 does on the machines of tensorflow#63362. Which
// entries 2.15's wheel really has was not read (unconfirmed).
const tfNvidiaRunPath = "$ORIGIN/../nvidia/cublas/lib:$ORIGIN/../nvidia/cuda_runtime/lib:$ORIGIN/../nvidia/cudnn/lib:" +
	"$ORIGIN/../nvidia/cufft/lib:$ORIGIN/../nvidia/cusolver/lib:$ORIGIN/../nvidia/cusparse/lib:$ORIGIN/:$ORIGIN/.."

// tfTwins are the releases TensorFlowTwinWheels writes.
var tfTwins = map[string]tfTwin{
	TFTwinVersion:  {wheels: tfWheels216, fwPath: tfFrameworkRunPath},
	"2.15.0.post1": {wheels: tfWheels215, fwPath: tfNvidiaRunPath},
	// 2.15.0's extra also pins TensorRT, whose tensorrt-libs 8.6.1 no
	// index serves (matrix source tensorflow-pr-62520): pip cannot
	// install tensorflow[and-cuda]==2.15.0.
	"2.15.0": {wheels: tfWheels215, fwPath: tfNvidiaRunPath, unserved: []string{"tensorrt==8.6.1.post1", "tensorrt-bindings==8.6.1", "tensorrt-libs==8.6.1"}},
}

// TFTwinWheels are the nvidia-* wheels of TensorFlow version's twin (a
// copy), nil for a version without one.
func TFTwinWheels(version string) []StackWheel {
	return append([]StackWheel(nil), tfTwins[version].wheels...)
}

// The search paths of TensorFlow's two libraries in the twin. Neither
// names an nvidia/*/lib directory, as in 2.16.1 (tensorflow#63362).
// _pywrap_tensorflow_internal.so's is the shape objdump showed for an
// older wheel (tensorflow#20561: Bazel's _solib entry, $ORIGIN/,
// $ORIGIN/..); 2.16.1's own lists were not read (unconfirmed).
const (
	tfPywrapRunPath    = "$ORIGIN/../../_solib_k8/_U_S_Stensorflow_Spython_C_Upywrap_Utensorflow_Uinternal.so___Utensorflow:$ORIGIN/:$ORIGIN/.."
	tfFrameworkRunPath = "$ORIGIN/:$ORIGIN/.."
)

// tfPywrapSrc is the twin's tensorflow/python/_pywrap_tensorflow_internal.so:
// an extension module (Python's stable ABI) that needs
// libtensorflow_framework.so.2, so importing it loads that library
// through its RUNPATH.
const tfPywrapSrc = `#define Py_LIMITED_API 0x030b0000
#include <Python.h>
static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "tensorflow.python._pywrap_tensorflow_internal", "gpuimg test fixture standing in for TensorFlow's _pywrap_tensorflow_internal", -1, NULL};
PyMODINIT_FUNC PyInit__pywrap_tensorflow_internal(void) { return PyModule_Create(&m); }
`

// TensorFlowTwinWheels writes into dir a structural twin of
// tensorflow[and-cuda]==version on Linux x86_64 (2.16.1, TFTwinVersion;
// 2.15.0.post1; 2.15.0): the nvidia-* wheels at the extra's pins
// (TFTwinWheels) with real ELF libraries of their sonames,
// nvidia-cuda-nvcc-cu12 with bin/ptxas and
// nvvm/libdevice/libdevice.10.bc, and tensorflow version for each CPython
// of pythons, whose METADATA's Requires-Dist pins them under the
// and-cuda extra (2.15.0's also TensorRT, for which no wheel is written:
// no index serves it) and whose `import tensorflow` loads
// tensorflow/python/_pywrap_tensorflow_internal.so and, through its
// RUNPATH, tensorflow/libtensorflow_framework.so.2. Nothing needs a CUDA
// library by DT_NEEDED (TensorFlow dlopens them): the import works either
// way. As in 2.16.1 (tensorflow#63362) no RUNPATH of its twin names
// nvidia/*/lib, so the CUDA libraries resolve only when the loader is
// told where they are; the 2.15 twins' libtensorflow_framework.so.2
// names them (2.15.1 works on the same machines; unconfirmed for the
// wheel itself).
func TensorFlowTwinWheels(ctx context.Context, dir, version string, pythons []string) error {
	twin, ok := tfTwins[version]
	if !ok {
		return fmt.Errorf("testenv has no TensorFlow %s twin (it has 2.15.0, 2.15.0.post1 and 2.16.1)", version)
	}
	inc, err := PythonIncludes(ctx)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpuimg-tftwin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	so := func(spec ELFSpec) (string, error) {
		b, err := SharedObject(ctx, work, spec)
		return string(b), err
	}
	var pins []string
	for _, w := range twin.wheels {
		pins = append(pins, w.Dist+"=="+w.Version+`; extra == "and-cuda"`)
		const tag = "py3-none-manylinux1_x86_64"
		if _, err := os.Stat(filepath.Join(dir, strings.ReplaceAll(w.Dist, "-", "_")+"-"+w.Version+"-"+tag+".whl")); err == nil {
			continue // written for another release of the same pins (2.15.0 and 2.15.0.post1)
		}
		note := fmt.Sprintf("# gpuimg test fixture standing in for %s %s (%s)\n", w.Dist, w.Version, w.Source)
		files := map[string]string{twinInfo(w.Dist, w.Version): twinMetadata(w.Dist, w.Version, nil), "nvidia/__init__.py": note}
		for _, l := range w.Libs {
			b, err := so(ELFSpec{Soname: path.Base(l)})
			if err != nil {
				return err
			}
			files[l] = b
			files[path.Dir(path.Dir(l))+"/__init__.py"] = note
		}
		if w.Dist == "nvidia-cuda-nvcc-cu12" {
			ptxas, err := so(ELFSpec{Executable: true})
			if err != nil {
				return err
			}
			files["nvidia/cuda_nvcc/__init__.py"] = note
			files["nvidia/cuda_nvcc/bin/ptxas"] = ptxas
			files["nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc"] = "BC\xc0\xde" + payload("libdevice.10.bc", 4096)
		}
		if _, err := Wheel(dir, w.Dist, w.Version, tag, files); err != nil {
			return err
		}
	}
	for _, u := range twin.unserved {
		pins = append(pins, u+`; extra == "and-cuda"`)
	}
	fw, err := so(ELFSpec{Soname: "libtensorflow_framework.so.2", SearchPath: twin.fwPath, RunPath: true})
	if err != nil {
		return err
	}
	pywrap, err := so(ELFSpec{Needed: []string{"libtensorflow_framework.so.2"}, SearchPath: tfPywrapRunPath, RunPath: true, Source: tfPywrapSrc, CFlags: []string{inc}})
	if err != nil {
		return err
	}
	files := map[string]string{
		twinInfo("tensorflow", version): twinMetadata("tensorflow", version, pins, "and-cuda"),
		"tensorflow/__init__.py": `# gpuimg test fixture standing in for tensorflow 2.16.1's tensorflow/__init__.py:
# importing pywrap_tensorflow loads _pywrap_tensorflow_internal.so and,
# through its RUNPATH, libtensorflow_framework.so.2, as the real one does.
from tensorflow.python import pywrap_tensorflow as _pywrap_tensorflow  # noqa: F401
__version__ = "` + version + `"
`,
		"tensorflow/python/__init__.py":                    "",
		"tensorflow/python/pywrap_tensorflow.py":           "from tensorflow.python._pywrap_tensorflow_internal import *  # noqa: F403\n",
		"tensorflow/python/_pywrap_tensorflow_internal.so": pywrap,
		"tensorflow/libtensorflow_framework.so.2":          fw,
	}
	for _, py := range pythons {
		cp := "cp" + strings.ReplaceAll(py, ".", "")
		if _, err := Wheel(dir, "tensorflow", version, cp+"-"+cp+"-manylinux_2_17_x86_64.manylinux2014_x86_64", files); err != nil {
			return err
		}
	}
	return nil
}

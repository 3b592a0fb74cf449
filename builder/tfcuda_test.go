package builder

import (
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestTFCUDASteps checks the rule for TensorFlow's CUDA libraries on the
// rendered Dockerfiles: a stack whose TensorFlow takes CUDA from pip
// (the and-cuda extra) lists the venv's nvidia/*/lib for ldconfig after
// the framework steps, in the plain and in the layered build, leaves no
// aux-cache, and has its proof check TensorFlow's dlopen sonames and
// XLA's ptxas and libdevice; one that takes CUDA from a runtime base
// installs nvidia-cuda-nvcc in the TensorFlow step and names its
// directory in XLA_FLAGS, unless the flavor is devel; a torch stack gets
// none of it.
func TestTFCUDASteps(t *testing.T) {
	tfPlan := []PlannedDist{
		{Name: "nvidia-cudnn-cu12", Version: "8.9.7.29", Step: 1, Size: 600e6, Shared: true, Top: []string{"nvidia"}},
		{Name: "tensorflow", Version: "2.16.1", Step: 1, Size: 500e6},
	}
	tests := []struct {
		name    string
		c       matrix.Constraints
		layered bool
		plan    []PlannedDist
		conf    bool
		xla     string // the wheel the TensorFlow step adds for ptxas and libdevice
		dlopen  string // part of proof.py's arguments, "" for none
	}{
		{name: "tensorflow 2.16 (and-cuda, CUDA 12, cuDNN 8)", c: matrix.Constraints{TensorFlow: cons("2.16")}, conf: true,
			dlopen: "--dlopen=tensorflow/libtensorflow_framework.so.2:libcudart.so.12,libcublas.so.12,libcublasLt.so.12,libcufft.so.11,libcusolver.so.11,libcusparse.so.12,libcudnn.so.8"},
		{name: "tensorflow 2.16, layered", c: matrix.Constraints{TensorFlow: cons("2.16")}, layered: true, plan: tfPlan, conf: true,
			dlopen: "--dlopen=tensorflow/libtensorflow_framework.so.2:libcudart.so.12,"},
		{name: "tensorflow 2.18 (cuDNN 9)", c: matrix.Constraints{TensorFlow: cons("2.18")}, conf: true,
			dlopen: ",libcusparse.so.12,libcudnn.so.9 --xla=tensorflow/libtensorflow_framework.so.2 tensorflow"},
		{name: "tensorflow 2.14 (and-cuda, CUDA 11)", c: matrix.Constraints{TensorFlow: cons("2.14"), Python: matrix.MustConstraint("3.10")}, conf: true,
			dlopen: ":libcudart.so.11.0,libcublas.so.11,libcublasLt.so.11,libcufft.so.10,libcusolver.so.11,libcusparse.so.11,libcudnn.so.8"},
		{name: "torch: no TensorFlow rule", c: matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}},
		{name: "tensorflow 2.13 (CUDA from the runtime base): XLA's nvcc wheel", c: matrix.Constraints{TensorFlow: cons("2.13")}, xla: "nvidia-cuda-nvcc-cu11==11.8.89",
			dlopen: ":libcudart.so.11.0,libcublas.so.11,libcublasLt.so.11,libcufft.so.10,libcusolver.so.11,libcusparse.so.11,libcudnn.so.8"},
		{name: "tensorflow 2.13, layered", c: matrix.Constraints{TensorFlow: cons("2.13")}, layered: true, plan: tfPlan[1:], xla: "nvidia-cuda-nvcc-cu11==11.8.89",
			dlopen: "--xla=tensorflow/libtensorflow_framework.so.2 tensorflow"},
		{name: "tensorflow 2.13 on devel: the image's own ptxas", c: matrix.Constraints{TensorFlow: cons("2.13"), Flavor: "devel"},
			dlopen: "--xla=tensorflow/libtensorflow_framework.so.2 tensorflow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Definition{Stack: resolve(t, tt.c), Base: pinned}
			df, err := Dockerfile(d)
			if tt.layered {
				df, err = LayeredDockerfile(d, tt.plan, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			n := strings.Count(df, "> "+VenvLdConf+" \\\n && ldconfig && rm -f /var/cache/ldconfig/aux-cache \\\n && "+clampStep+"\n")
			want := 0
			if tt.conf {
				want = 1
				if tt.layered {
					want = 2 // the frameworks' stage and the layered image
				}
			}
			if n != want {
				t.Errorf("%d ldconfig steps for %s, want %d:\n%s", n, VenvLdConf, want, df)
			}
			if tt.conf {
				// After the framework steps, before the proofs and the user's layers.
				last := strings.LastIndex(df, VenvLdConf)
				if i := strings.Index(df, "pip install --disable-pip-version-check 'tensorflow[and-cuda]"); i < 0 || i > strings.Index(df, VenvLdConf) {
					t.Errorf("the loader step is not after the TensorFlow step:\n%s", df)
				}
				if last > strings.LastIndex(df, "FROM gpuimg-image AS "+StageCheck) {
					t.Errorf("the loader step is after the image's proof:\n%s", df)
				}
			}
			env := "ENV XLA_FLAGS=--xla_gpu_cuda_data_dir=/opt/venv/lib/python" + d.Stack.Python + "/site-packages/nvidia/cuda_nvcc\n"
			wantEnv := 0
			if tt.xla != "" {
				if !strings.Contains(df, "pip install --disable-pip-version-check tensorflow=="+d.Stack.Frameworks[matrix.FrameworkTensorFlow].Version+" "+tt.xla+" \\\n") {
					t.Errorf("the TensorFlow step does not install %s:\n%s", tt.xla, df)
				}
				wantEnv = 1
				if tt.layered {
					wantEnv = 2
				}
			} else if strings.Contains(df, "nvidia-cuda-nvcc") {
				t.Errorf("an nvidia-cuda-nvcc wheel is added:\n%s", df)
			}
			if got := strings.Count(df, env); got != wantEnv {
				t.Errorf("%d times %q, want %d:\n%s", got, env, wantEnv, df)
			}
			if tt.dlopen == "" {
				if strings.Contains(df, "--dlopen=") || strings.Contains(df, "--xla=") {
					t.Errorf("proof.py checks TensorFlow's libraries without TensorFlow:\n%s", df)
				}
				return
			}
			if got := strings.Count(df, tt.dlopen); got != 2 {
				t.Errorf("%d proofs with %q, want 2 (environment and image):\n%s", got, tt.dlopen, df)
			}
		})
	}
}

// TestTFXLAWheelRefuses: a TensorFlow that takes CUDA from the image on a
// flavor without ptxas and libdevice, for a CUDA major no nvidia-cuda-nvcc
// wheel is known for, is refused with the fix.
func TestTFXLAWheelRefuses(t *testing.T) {
	s := matrix.Stack{Flavor: "runtime", Frameworks: map[string]matrix.Framework{
		matrix.FrameworkTensorFlow: {Version: "2.13.0", CUDA: "12.1", Packages: []string{"tensorflow==2.13.0"}}}}
	if _, err := tfXLAWheel(s); err == nil || !strings.Contains(err.Error(), "has no ptxas or libdevice for XLA; build with --flavor devel") {
		t.Errorf("err = %v, want the refusal", err)
	}
	s.Flavor = "devel"
	if w, err := tfXLAWheel(s); w != "" || err != nil {
		t.Errorf("devel: %q, %v; want none", w, err)
	}
}

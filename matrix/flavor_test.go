package matrix

import (
	"slices"
	"strings"
	"testing"
)

func TestDefaultFlavor(t *testing.T) {
	db := world(t)
	tests := []struct {
		name      string
		c         Constraints
		flavor    string
		base      string
		reasonHas string
	}{
		{"torch brings CUDA as wheels: base", Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3")},
			"base", "nvidia/cuda:12.2.2-base-ubuntu22.04", "base: torch 2.3.1 brings CUDA's libraries as pip wheels"},
		{"jax[cuda12] brings CUDA as wheels: base", Constraints{JAX: cons("0.4.30")},
			"base", "", "base: jax 0.4.30 brings CUDA's libraries"},
		{"a flavor asked for wins", Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3"), Flavor: "runtime"},
			"runtime", "nvidia/cuda:12.2.2-runtime-ubuntu22.04", "the runtime flavor was asked for"},
		{"devel asked for", Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3"), Flavor: "devel"},
			"devel", "nvidia/cuda:12.2.2-devel-ubuntu22.04", "the devel flavor was asked for"},
		{"TensorFlow 2.13 loads CUDA from the image: cudnn runtime", Constraints{TensorFlow: cons("2.13")},
			"runtime", "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", "runtime: tensorflow 2.13.0 loads CUDA's libraries from the image"},
		{"no framework: runtime", Constraints{CUDA: MustConstraint("12.2")},
			"runtime", "", "runtime: no framework brings CUDA's libraries"},
		{"an apt package that links cuDNN: runtime", Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3"), Apt: []string{"git", "libcudnn8=8.9.7.29-1+cuda12.2"}},
			"runtime", "nvidia/cuda:12.2.2-runtime-ubuntu22.04", "runtime: the OS packages libcudnn8 use CUDA's libraries from the image"},
		{"apt packages without CUDA keep base", Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3"), Apt: []string{"git", "curl"}},
			"base", "nvidia/cuda:12.2.2-base-ubuntu22.04", "base:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := db.Resolve(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if s.Flavor != tt.flavor || (tt.base != "" && s.BaseImage != tt.base) || !strings.Contains(s.FlavorReason, tt.reasonHas) {
				t.Errorf("flavor %s, base %s, reason %q; want %s, %s, %q", s.Flavor, s.BaseImage, s.FlavorReason, tt.flavor, tt.base, tt.reasonHas)
			}
		})
	}
}

func TestAptNeedsCUDALibs(t *testing.T) {
	got := AptNeedsCUDALibs([]string{"git", "libcudnn9-cuda-12", "libnccl2=2.20.5-1+cuda12.4", "cuda-nvcc-12-2", "tensorrt", "libcurl4", "cudatext"})
	if want := []string{"libcudnn9-cuda-12", "libnccl2", "cuda-nvcc-12-2", "tensorrt"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

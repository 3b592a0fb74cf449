package upstream

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestUpdateReadsCUDA13Shape: a torch wheel whose METADATA has the shape
// of CUDA 13 wheels (torch 2.13.0's, source torch-pins-2.13.0-pypi: the
// cuda-toolkit metapackage with extras, -cu13 cuDNN and NCCL, a
// cuda-bindings range, triton) is read into the variant's pins, NCCL,
// cuDNN and triton, on the index twin served on loopback; the range is
// not a pin, and the overlay loads.
func TestUpdateReadsCUDA13Shape(t *testing.T) {
	db := builtin(t)
	f := newFakeUpstream(t)
	f.mirrorTorch(db)
	nt := db.Torch[0]
	f.addWheel("torch", nt.Version.String(), "cu139", "cp312", "manylinux_2_28_x86_64",
		`cuda-toolkit[cublas,cudart,nvtx]==13.0.3; platform_system == "Linux"`,
		`cuda-bindings<14,>=13.0.3; platform_system == "Linux" and python_version < "3.15"`,
		`nvidia-cudnn-cu13==9.20.0.48; platform_system == "Linux"`,
		`nvidia-nccl-cu13==2.29.7; platform_system == "Linux"`,
		`triton==3.7.1; platform_system == "Linux"`)
	ov, err := Update(t.Context(), db, WithSources(SourceTorch), WithTorchIndexURL(f.torchURL()), WithClock(testDay))
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.File.Torch) != 1 {
		t.Fatalf("rows %+v", ov.File.Torch)
	}
	vs := ov.File.Torch[0].Variants
	i := slices.IndexFunc(vs, func(v matrix.TorchVariant) bool { return v.CUDA.String() == "13.9" })
	if i < 0 {
		t.Fatalf("no cu139 variant in %+v", vs)
	}
	v := vs[i]
	var got []string
	for _, p := range v.Pins {
		got = append(got, p.String())
	}
	want := []string{"cuda-toolkit[cublas,cudart,nvtx]==13.0.3", "nvidia-cudnn-cu13==9.20.0.48", "nvidia-nccl-cu13==2.29.7"}
	if !slices.Equal(got, want) || v.Triton != "==3.7.1" || v.CuDNN.String() != "9.20.0.48" || v.NCCL.String() != "2.29.7" {
		t.Errorf("pins %q triton %q cudnn %s nccl %s; want pins %q, triton ==3.7.1", got, v.Triton, v.CuDNN, v.NCCL, want)
	}
	b, err := ov.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "o.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := matrix.Load(path); err != nil {
		t.Errorf("overlay does not load: %v\n%s", err, b)
	}
}

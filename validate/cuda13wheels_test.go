package validate

import (
	"testing"
)

// TestCUDA13WheelNames: torch's CUDA 13 wheels install suffix-less
// component wheels (nvidia-cublas, nvidia-cuda-runtime) beside -cu13
// cuDNN and NCCL wheels (torch 2.9.0 cu130's pins, matrix data source
// torch-gbbm-2.9-cycle); validate reads each from its dist-info.
func TestCUDA13WheelNames(t *testing.T) {
	const sp = "opt/venv/lib/python3.12/site-packages/"
	dist := func(dir, name, version string) file {
		return file{sp + dir + "-" + version + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n\n"}
	}
	tests := []struct {
		name                string
		files               []file
		cublas, cudnn, nccl string
	}{
		{"CUDA 13 shape", []file{
			dist("nvidia_cublas", "nvidia-cublas", "13.0.0.19"),
			dist("nvidia_cuda_runtime", "nvidia-cuda-runtime", "13.0.48"),
			dist("nvidia_cudnn_cu13", "nvidia-cudnn-cu13", "9.13.0.50"),
			dist("nvidia_nccl_cu13", "nvidia-nccl-cu13", "2.27.7"),
		}, "13.0.0.19", "9.13.0.50", "2.27.7"},
		{"CUDA 12 shape", []file{
			dist("nvidia_cublas_cu12", "nvidia-cublas-cu12", "12.8.4.1"),
			dist("nvidia_cudnn_cu12", "nvidia-cudnn-cu12", "9.10.2.21"),
			dist("nvidia_nccl_cu12", "nvidia-nccl-cu12", "2.27.5"),
		}, "12.8.4.1", "9.10.2.21", "2.27.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := image(t, layer(t, tt.files...))
			r, err := Inspect(t.Context(), img, Options{DB: db(t)})
			if err != nil {
				t.Fatal(err)
			}
			if r.Found.CuBLAS != tt.cublas || r.Found.CuDNN != tt.cudnn || r.Found.NCCL != tt.nccl {
				t.Errorf("found cuBLAS %q cuDNN %q NCCL %q, want %q %q %q", r.Found.CuBLAS, r.Found.CuDNN, r.Found.NCCL, tt.cublas, tt.cudnn, tt.nccl)
			}
		})
	}
}

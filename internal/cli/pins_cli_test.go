package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCUDA13PinsCLI is the CLI side of the pin rule in the shape of CUDA
// 13 wheels (matrix.DB.ComparePins, matrix.PinsOutside): resolve says
// whether frameworks sharing an environment agree, and list shows what
// the matrix records of each variant's pins.
func TestCUDA13PinsCLI(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		has    []string // in stdout+stderr
		hasNot []string
	}{
		{
			name: "torch 2.13 cu130 (cuda-toolkit 13.0.3) with jax 0.9.2 cuda13: compared, agree",
			args: []string{"matrix", "resolve", "--torch", "2.13", "--jax", "0.9.2"},
			has:  []string{"the exact pins of torch 2.13.0 cu130 fall inside the nvidia-* version ranges of jax 0.9.2 cu130"},
			// no "does not record the exact nvidia-* pins" for either
			hasNot: []string{"does not record the exact nvidia-* pins", "unconfirmed"},
		},
		{
			name: "torch 2.6 cu124's cuDNN 9.1.0.70 against jax 0.7.1's >=9.8,<10.0: no stack, exit 1",
			args: []string{"matrix", "resolve", "--torch", "2.6", "--jax", "0.7.1"},
			code: 1,
			has:  []string{"nvidia-cudnn-cu12 (9.1.0.70 and >=9.8,<10.0)", "these work:"},
		},
		{
			name: "list torch: PyPI's default variant, NCCL, the CUDA 13 pin shape and triton",
			args: []string{"matrix", "list", "torch"},
			has:  []string{"PYPI", "PINS", "TRITON", "5, cuda-toolkit 13.0.3  ~=3.8.0", "default  9.19.0.56  2.28.9  5, cuda-toolkit 13.0.2  3.6.0"},
		},
		{
			name: "list jax: NCCL range and how many ranges were read",
			args: []string{"matrix", "list", "jax"},
			has:  []string{"RANGES", ">=2.27.7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			all := out + errOut
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, all)
			}
			for _, h := range tt.has {
				if !strings.Contains(all, h) {
					t.Errorf("output lacks %q:\n%s", h, all)
				}
			}
			for _, h := range tt.hasNot {
				if strings.Contains(all, h) {
					t.Errorf("output has %q:\n%s", h, all)
				}
			}
		})
	}
}

// TestListTorchPinsJSON: -o json carries the pins as METADATA writes them,
// extras and prefix included.
func TestListTorchPinsJSON(t *testing.T) {
	out, errOut, code := run(t, "matrix", "list", "torch", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []struct {
		Version  string
		Variants []struct {
			CUDA   string   `json:"cuda"`
			Pins   []string `json:"pins"`
			Triton string   `json:"triton"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Version != "2.13.0" {
			continue
		}
		for _, v := range r.Variants {
			if v.CUDA == "13.0" {
				if len(v.Pins) == 0 || v.Pins[0] != "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3" || v.Triton != "==3.7.1" {
					t.Errorf("torch 2.13.0 cu130: pins %v triton %q", v.Pins, v.Triton)
				}
				return
			}
		}
	}
	t.Error("no torch 2.13.0 cu130 row in -o json")
}

// TestTorchPinsComparedCLI: torch 2.10.0 cu130 records its component pins
// (issue 44, item 1), so a JAX release whose CUDA 13 plugin asks for a
// newer cuFFT than torch pins cannot share its environment: resolve says
// which package and exits 1. Before the pins were recorded the matrix
// compared only cuDNN and NCCL and said the rest was not compared.
func TestTorchPinsComparedCLI(t *testing.T) {
	file := filepath.Join(t.TempDir(), "jax.yaml")
	row := `sources:
  - id: test-jax
    title: a jax release whose CUDA 13 plugin asks for a newer cuFFT than torch 2.10.0 cu130 pins
    url: https://example.com/jax
    retrieved: "2026-12-07"
jax:
  - version: 0.99.0
    python: ">=3.11"
    source: test-jax
    variants:
      - extra: cuda13
        cuda: "13"
        min_cuda: "13.0"
        min_cudnn: "9.12.0.46"
        min_driver: "580"
        requires:
          - "nvidia-cufft>=12.1"
`
	if err := os.WriteFile(file, []byte(row), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "matrix", "resolve", "--torch", "2.10.0", "--cuda", "13.0", "--jax", "0.99.0", "--matrix-file", file)
	all := out + errOut
	if code != 1 || !strings.Contains(all, "pin different versions of nvidia-cufft (12.0.0.61 and >=12.1)") {
		t.Errorf("exit %d, want 1 naming nvidia-cufft:\n%s", code, all)
	}
	if strings.Contains(all, "records only the nvidia-cudnn and nvidia-nccl pins") {
		t.Errorf("torch 2.10.0 cu130 is still judged by cuDNN and NCCL only:\n%s", all)
	}
}

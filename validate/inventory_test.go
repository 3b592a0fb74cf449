package validate

import (
	"strings"
	"testing"
)

const dpkgStatus = `Package: libc6
Status: install ok installed
Architecture: amd64
Source: glibc
Version: 2.35-0ubuntu3.8
Description: GNU C Library
 multi-line description

Package: removed-pkg
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: cuda-cudart-12-2
Status: install ok installed
Architecture: amd64
Version: 12.2.140-1
`

func TestInventory(t *testing.T) {
	sp := "opt/venv/lib/python3.10/site-packages/"
	img := torchImage(t, "12.1", "cuda>=12.2", nil,
		file{"var/lib/dpkg/status", dpkgStatus},
		file{"var/lib/dpkg/status.d/base-files", "Package: base-files\nVersion: 12.4+deb12u5\nArchitecture: amd64\n"},
		file{"var/lib/dpkg/status.d/base-files.md5sums", "abc  etc/debian_version\n"},
		file{"usr/local/cuda-12.2/version.json", `{"cuda":{"name":"CUDA SDK","version":"12.2.2"},"cuda_cudart":{"name":"CUDA Runtime (cudart)","version":"12.2.140"},"cuda_nvcc":{"name":"CUDA NVCC","version":"12.2.140"}}`},
		file{"usr/local/cuda-12.2/lib64/libcudart.so.12.2.140", "not an ELF"},
		file{"usr/lib/x86_64-linux-gnu/libnvinfer.so.8.6.1", "not an ELF"},
		// NVIDIA's wheels name their libraries by soname major only; the
		// wheel beside them gives the release (issue 43).
		file{sp + "nvidia/cudnn/lib/libcudnn.so.8", "not an ELF"},
		file{sp + "nvidia/nccl/lib/libnccl.so.2", "not an ELF"},
		file{sp + "nvidia_nccl_cu12-2.20.5.dist-info/METADATA", "Name: nvidia-nccl-cu12\nVersion: 2.20.5\n"},
		file{sp + "nvidia/cublas/lib/libcublas.so.12", "not an ELF"},
	)
	for _, on := range []bool{false, true} {
		r, err := Inspect(t.Context(), img, Options{DB: db(t), Inventory: on})
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			if r.Inventory != nil {
				t.Fatal("inventory collected without Options.Inventory")
			}
			continue
		}
		inv := r.Inventory
		if inv == nil {
			t.Fatal("no inventory")
		}
		if inv.OS.ID != "ubuntu" || inv.OS.VersionID != "22.04" {
			t.Errorf("os = %+v", inv.OS)
		}
		var pkgs []string
		for _, p := range inv.OSPackages {
			pkgs = append(pkgs, p.Name+"="+p.Version+"/"+p.Arch+"/"+p.Source)
		}
		if got, want := strings.Join(pkgs, " "), "base-files=12.4+deb12u5/amd64/ cuda-cudart-12-2=12.2.140-1/amd64/ libc6=2.35-0ubuntu3.8/amd64/glibc"; got != want {
			t.Errorf("os packages = %s, want %s", got, want)
		}
		var torch *PythonDist
		for i, d := range inv.Python {
			if d.Name == "torch" {
				torch = &inv.Python[i]
			}
		}
		if torch == nil || torch.Version != "2.3.1" || torch.Local != "cu121" || torch.CUDA != "12.1" || torch.Path != sp+"torch-2.3.1+cu121.dist-info" {
			t.Errorf("torch = %+v", torch)
		}
		comps := map[string]CUDAComponent{}
		for _, c := range inv.CUDA {
			comps[c.Name] = c
		}
		if c := comps["cudart"]; c.Version != "12.2.140" || c.Soname != "libcudart.so.12" || c.Family != "cudart" {
			t.Errorf("cudart = %+v", c)
		}
		if c := comps["cudnn"]; c.Version != "8.9.2.26" || !c.Pip {
			t.Errorf("cudnn = %+v, want the wheel's 8.9.2.26", c)
		}
		if c := comps["nccl"]; c.Version != "2.20.5" || !c.Pip {
			t.Errorf("nccl = %+v, want the wheel's 2.20.5", c)
		}
		if c := comps["cublas"]; c.Version != "12" {
			t.Errorf("cublas = %+v, want the file's 12 (no wheel beside it)", c)
		}
		if c := comps["nvinfer"]; c.Family != "tensorrt" || c.Version != "8.6.1" {
			t.Errorf("nvinfer = %+v", c)
		}
		if c := comps["cuda_nvcc"]; c.Version != "12.2.140" || c.Family != "toolkit" {
			t.Errorf("cuda_nvcc = %+v", c)
		}
		if inv.RequireCUDA != "cuda>=12.2" || inv.DriverFloor == "" || inv.CUDAVersion != "12.2.2" {
			t.Errorf("require %q floor %q cuda %q", inv.RequireCUDA, inv.DriverFloor, inv.CUDAVersion)
		}
	}
}

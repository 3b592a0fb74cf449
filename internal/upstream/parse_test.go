package upstream

import (
	"slices"
	"testing"

	"github.com/gpuimg/gpuimg/matrix/pep508"
)

func TestParseWheelName(t *testing.T) {
	tests := []struct {
		name                           string
		dist, version, local, py, plat string
		wantErr                        bool
	}{
		{name: "torch-2.7.1+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", dist: "torch", version: "2.7.1", local: "cu128", py: "cp312", plat: "manylinux_2_28_x86_64"},
		{name: "torch-2.1.2+cu121-cp38-cp38-linux_x86_64.whl", dist: "torch", version: "2.1.2", local: "cu121", py: "cp38", plat: "linux_x86_64"},
		{name: "torch-2.4.1-cp38-none-macosx_11_0_arm64.whl", dist: "torch", version: "2.4.1", py: "cp38", plat: "macosx_11_0_arm64"},
		{name: "jax_cuda12_plugin-0.4.30-1-cp312-cp312-manylinux2014_x86_64.whl", dist: "jax-cuda12-plugin", version: "0.4.30", py: "cp312", plat: "manylinux2014_x86_64"},
		{name: "torch-2.8.0.dev20250601+cu128-cp313-cp313t-manylinux_2_28_x86_64.whl", dist: "torch", version: "2.8.0.dev20250601", local: "cu128", py: "cp313", plat: "manylinux_2_28_x86_64"},
		{name: "torch-2.7.1.whl", wantErr: true},
		{name: "torch-latest-cp312-cp312-linux_x86_64.whl", wantErr: true},
		{name: "torch-2.7.1--cp312-linux_x86_64.whl", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := parseWheelName(tt.name)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (w.Dist != tt.dist || w.Version != tt.version || w.Local != tt.local || w.Python != tt.py || w.Platform != tt.plat) {
				t.Errorf("got %+v", w)
			}
		})
	}
}

func TestParseRequirement(t *testing.T) {
	// install: pip installs it for CPython 3.12 on Linux x86_64, with the
	// extra the marker names (the first), or with none.
	tests := []struct {
		in          string
		name, extra string
		extras      []string
		pin, lower  string
		install     bool
		wantErr     bool
	}{
		{in: `nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"`, name: "nvidia-cudnn-cu12", pin: "9.1.0.70", lower: "9.1.0.70", install: true},
		{in: `jax-cuda12-plugin[with_cuda]<=0.4.30,>=0.4.30; extra == "cuda12"`, name: "jax-cuda12-plugin", extra: "cuda12", extras: []string{"with-cuda"}, pin: "0.4.30", lower: "0.4.30", install: true},
		{in: `nvidia-cudnn-cu12 (<10.0,>=9.1) ; extra == 'with-cuda'`, name: "nvidia-cudnn-cu12", extra: "with-cuda", lower: "9.1", install: true},
		{in: `torch==2.7.1+cu128`, name: "torch", pin: "2.7.1", lower: "2.7.1", install: true},
		{in: `Torch (==2.0.0)`, name: "torch", pin: "2.0.0", lower: "2.0.0", install: true},
		{in: `nvidia-cuda-runtime~=13.0; extra == "with-cuda"`, name: "nvidia-cuda-runtime", extra: "with-cuda", lower: "13.0", install: true},
		{in: `intel-openmp; platform_system == "Windows"`, name: "intel-openmp"},
		{in: `triton==3.3.1; sys_platform != "linux"`, name: "triton", pin: "3.3.1", lower: "3.3.1"},
		{in: `filelock`, name: "filelock", install: true},
		// Issue 43: the regular expression got each of these wrong.
		{in: `nvidia-nccl-cu12==2.20.5; sys_platform == "linux" or sys_platform == "win32"`, name: "nvidia-nccl-cu12", pin: "2.20.5", lower: "2.20.5", install: true},
		{in: `pywin32; os_name == "nt"`, name: "pywin32"},
		{in: `jax-cuda12-plugin==0.4.30; "cuda12" == extra`, name: "jax-cuda12-plugin", extra: "cuda12", pin: "0.4.30", lower: "0.4.30", install: true},
		{in: `nvidia-cudnn-cu12==9.1.0.70; platform_machine == "aarch64"`, name: "nvidia-cudnn-cu12", pin: "9.1.0.70", lower: "9.1.0.70"},
		{in: `triton==3.0.0; platform_system == "Linux" and platform_machine == "x86_64" and python_version < "3.13"`, name: "triton", pin: "3.0.0", lower: "3.0.0", install: true},
		{in: `tensorflow==2.15.0.post1`, name: "tensorflow", pin: "2.15.0.post1", lower: "2.15.0.post1", install: true},
		{in: `pkg @ https://example.com/pkg.whl`, wantErr: true},
		{in: `torch ?? 2`, wantErr: true},
		{in: `torch>=2 || <1`, wantErr: true},
		{in: `torch; os_name = "nt"`, wantErr: true},
	}
	env := pep508.LinuxEnv("x86_64", "3.12")
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := parseRequirement(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			extra := ""
			if es := r.extras(); len(es) > 0 {
				extra = es[0]
			}
			install, err := r.forExtra(env, extra)
			if err != nil {
				t.Fatal(err)
			}
			if r.Name != tt.name || extra != tt.extra || !slices.Equal(r.Extras, tt.extras) || r.pin() != tt.pin || r.lowerBound() != tt.lower || install != tt.install {
				t.Errorf("got name %q extra %q extras %q pin %q lower %q install %v", r.Name, extra, r.Extras, r.pin(), r.lowerBound(), install)
			}
		})
	}
}

func TestParseSimplePageAttributes(t *testing.T) {
	const h = "5b4ab8e2d5e0bd7f5ae8a8b4e3c2c8d0b2f1d6a1f3b1e7c9d8a6b4c2e0f1a3b5"
	page := `<!DOCTYPE html><html><body><h1>Links for torch</h1>
<a href="/whl/cu128/torch-2.7.1%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=` + h + `" data-dist-info-metadata="sha256=` + h + `" data-core-metadata="sha256=` + h + `">torch-2.7.1+cu128-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<a href="../cu126/torch-2.7.1%2Bcu126-cp312-cp312-manylinux_2_28_x86_64.whl" data-dist-info-metadata="true">x</a><br/>
<a href="torch-2.7.1%2Bcu118-cp312-cp312-manylinux_2_28_x86_64.whl">x</a><br/>
<a href="/whl/torch-2.7.1.tar.gz">sdist</a>
</body></html>`
	ws, _, err := parseSimplePage("https://download.example/whl/torch/", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 {
		t.Fatalf("wheels %+v", ws)
	}
	want := []struct {
		url, hash string
		md        bool
	}{
		{"https://download.example/whl/cu128/torch-2.7.1%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl", h, true},
		{"https://download.example/whl/cu126/torch-2.7.1%2Bcu126-cp312-cp312-manylinux_2_28_x86_64.whl", "", true},
		{"https://download.example/whl/torch/torch-2.7.1%2Bcu118-cp312-cp312-manylinux_2_28_x86_64.whl", "", false},
	}
	for i, w := range want {
		if ws[i].URL != w.url || ws[i].MetadataSHA256 != w.hash || ws[i].Metadata != w.md {
			t.Errorf("wheel %d = %+v, want %+v", i, ws[i], w)
		}
	}
	bad := `<a href="/whl/cu128/torch-2.7.1%2Bcu128-cp312-cp312-linux_x86_64.whl" data-core-metadata="sha256=zz">x</a>`
	if _, _, err := parseSimplePage("https://download.example/whl/torch/", []byte(bad)); err == nil {
		t.Errorf("a garbled data-core-metadata value was accepted")
	}
}

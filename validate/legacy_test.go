package validate

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/matrix"
)

// cudaEnvImage is a CUDA 12.4.1 image with torch 2.5.1 cu124 whose
// config environment is env.
func cudaEnvImage(t testing.TB, env ...string) v1.Image {
	t.Helper()
	sp := "opt/venv/lib/python3.10/site-packages/"
	img := image(t, layer(t,
		file{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"},
		file{"usr/local/cuda-12.4/version.json", `{"cuda":{"version":"12.4.1"}}`},
		file{"opt/venv/pyvenv.cfg", "version = 3.10.12\n"},
		file{sp + "torch/version.py", "__version__ = '2.5.1+cu124'\ncuda = '12.4'\n"},
		file{sp + "torch-2.5.1+cu124.dist-info/METADATA", "Name: torch\nVersion: 2.5.1+cu124\n"},
	))
	cfg, err := img.ConfigFile()
	must(t, err)
	cfg = cfg.DeepCopy()
	cfg.Config.Env = append([]string{"PATH=/opt/venv/bin:/usr/bin"}, env...)
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	return img
}

// TestInspectLegacyCUDAVersion: an image that sets CUDA_VERSION and no
// NVIDIA_REQUIRE_CUDA gets cuda>=MAJOR.MINOR from the NVIDIA container
// toolkit (nvidia-container-toolkit internal/config/image/cuda_image.go
// at d34b3046, IsLegacy L98-105, GetRequirements L125-132), so it is
// refused on a driver that reports an older CUDA (535.104.05 reports
// 12.2), and it is not "without NVIDIA_REQUIRE_CUDA" for require-cuda.
func TestInspectLegacyCUDAVersion(t *testing.T) {
	for _, tt := range []struct {
		name   string
		env    []string
		driver string
		want   map[string]Status
		has    map[string]string
	}{
		{"legacy image on 535.104.05", []string{"CUDA_VERSION=12.4.1"}, "535.104.05",
			map[string]Status{"require-cuda": matrix.Pass, "driver/require-cuda": matrix.Fail},
			map[string]string{"require-cuda": "CUDA_VERSION=12.4.1 without NVIDIA_REQUIRE_CUDA (the NVIDIA container toolkit requires cuda>=12.4 of it) covers CUDA 12.4", "driver/require-cuda": "cuda>=12.4 (the NVIDIA container toolkit's own requirement for an image that sets CUDA_VERSION=12.4.1 and no NVIDIA_REQUIRE_CUDA) does not hold"}},
		{"legacy image, NVIDIA_REQUIRE_CUDA empty", []string{"CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA="}, "535.104.05",
			map[string]Status{"require-cuda": matrix.Pass, "driver/require-cuda": matrix.Fail}, nil},
		{"legacy image on 550.54.15", []string{"CUDA_VERSION=12.4.1"}, "550.54.15",
			map[string]Status{"require-cuda": matrix.Pass, "driver/require-cuda": matrix.Pass}, nil},
		{"a CUDA_VERSION older than inside", []string{"CUDA_VERSION=12.1.0"}, "",
			map[string]Status{"require-cuda": matrix.Fail},
			map[string]string{"require-cuda": "CUDA_VERSION=12.1.0 without NVIDIA_REQUIRE_CUDA (the NVIDIA container toolkit requires cuda>=12.1 of it) is weaker than what is inside"}},
		{"a CUDA_VERSION the toolkit cannot read", []string{"CUDA_VERSION=12.4.1.0"}, "550.54.15",
			map[string]Status{"require-cuda": matrix.Fail, "driver/require-cuda": matrix.Fail},
			map[string]string{"require-cuda": "failed to get requirements"}},
		{"neither", nil, "",
			map[string]Status{"require-cuda": matrix.Warn},
			map[string]string{"require-cuda": "neither NVIDIA_REQUIRE_CUDA nor CUDA_VERSION is set"}},
		{"checks turned off", []string{"CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4", "NVIDIA_DISABLE_REQUIRE=true"}, "",
			map[string]Status{"require-cuda": matrix.Warn},
			map[string]string{"require-cuda": "NVIDIA_DISABLE_REQUIRE=true: the NVIDIA container runtime checks no requirement"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opt := Options{DB: db(t)}
			if tt.driver != "" {
				opt.Driver = matrix.MustVersion(tt.driver)
			}
			r, err := Inspect(t.Context(), cudaEnvImage(t, tt.env...), opt)
			must(t, err)
			st := statuses(r)
			for n, s := range tt.want {
				if st[n] != s {
					t.Errorf("%s = %s, want %s: %+v", n, st[n], s, r.Checks)
				}
			}
			for _, c := range r.Checks {
				if h, ok := tt.has[c.Name]; ok && !strings.Contains(c.Message, h) {
					t.Errorf("%s: %q lacks %q", c.Name, c.Message, h)
				}
				if strings.Contains(c.Message, "is not set") {
					t.Errorf("%s: %q", c.Name, c.Message)
				}
			}
		})
	}
}

package matrix

import (
	"strings"
	"testing"
)

func pins(t *testing.T, ss ...string) []Pin {
	t.Helper()
	out := make([]Pin, len(ss))
	for i, s := range ss {
		p, err := ParsePin(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = p
	}
	return out
}

// TestPinConflicts: the one rule for frameworks sharing an environment.
// Each row names where its pins were read.
func TestPinConflicts(t *testing.T) {
	tests := []struct {
		name, source string
		a, b         []string
		want         []string // conflicting package names
	}{
		{
			name: "torch 2.3.1 cu121 and tensorflow 2.15.0.post1 [and-cuda]",
			// torch: the cu121 PYTORCH_EXTRA_INSTALL_REQUIREMENTS (torch.yaml, source torch-pins-2.3-cu121);
			// tensorflow: setup.py at 0b15fdfcb3fd (tensorflow.yaml, source tensorflow-setup-py-2.15.0.post1).
			source: "https://github.com/tensorflow/tensorflow/blob/0b15fdfcb3fddcb4b8a095f26d0f786e316163d7/tensorflow/tools/pip_package/setup.py",
			a:      []string{"nvidia-cudnn-cu12==8.9.2.26", "nvidia-nccl-cu12==2.20.5", "nvidia-nvtx-cu12==12.1.105"},
			b:      []string{"nvidia-cudnn-cu12 == 8.9.4.25", "nvidia-nccl-cu12 == 2.16.5", "nvidia-nvjitlink-cu12 == 12.2.140"},
			want:   []string{"nvidia-cudnn-cu12", "nvidia-nccl-cu12"},
		},
		{
			name: "torch cu118 and tensorflow 2.15 pin different distributions (cu11 and cu12): no shared package",
			// tensorflow 2.14 setup.py at 4dacf3f368eb pins nvidia-cudnn-cu11; 2.15 pins -cu12.
			source: "https://github.com/tensorflow/tensorflow/blob/4dacf3f368eb7965e9b5c3bbdd5193986081c3b2/tensorflow/tools/pip_package/setup.py",
			a:      []string{"nvidia-cudnn-cu11==8.7.0.84"},
			b:      []string{"nvidia-cudnn-cu12==8.9.4.25"},
		},
		{
			name:   "the same pin spelled differently agrees (PEP 503 names, 8.7.0.84 = 8.7.0.84)",
			source: "https://peps.python.org/pep-0503/#normalized-names",
			a:      []string{"nvidia_cudnn_cu11==8.7.0.84", "tensorrt==8.5.3.1"},
			b:      []string{"Nvidia-CUDNN-cu11==8.7.0.84", "tensorrt==8.5.3.1"},
		},
		{
			name:   "post releases compare as PEP 440 versions (8.6.1.post1 is not 8.6.1)",
			source: "https://github.com/tensorflow/tensorflow/pull/62520",
			a:      []string{"tensorrt==8.6.1.post1"},
			b:      []string{"tensorrt==8.6.1"},
			want:   []string{"tensorrt"},
		},
		{
			name:   "PEP 440 spellings of one version agree (8.6.1-1 = 8.6.1.post1, 9.1.0.70 = 9.1.0.70.0)",
			source: "https://peps.python.org/pep-0440/#post-release-spelling",
			a:      []string{"tensorrt==8.6.1-1", "nvidia-cudnn-cu12==9.1.0.70"},
			b:      []string{"tensorrt==8.6.1.post1", "nvidia-cudnn-cu12==9.1.0.70.0"},
		},
		{
			name:   "epochs differ",
			source: "https://peps.python.org/pep-0440/#version-epochs",
			a:      []string{"nvidia-nccl-cu12==1!2.20.5"},
			b:      []string{"nvidia-nccl-cu12==2.20.5"},
			want:   []string{"nvidia-nccl-cu12"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PinConflicts(pins(t, tt.a...), pins(t, tt.b...))
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Errorf("conflicts %v, want %v (source %s)", names, tt.want, tt.source)
			}
		})
	}
}

func TestParsePin(t *testing.T) {
	for _, bad := range []string{"nvidia-cudnn-cu12>=9.1", "nvidia-cudnn-cu12", "==8.9", "a==b c"} {
		if _, err := ParsePin(bad); err == nil {
			t.Errorf("ParsePin(%q) accepted", bad)
		}
	}
	p, err := ParsePin("tensorrt == 8.6.1.post1")
	if err != nil || p.String() != "tensorrt==8.6.1.post1" || !p.Version.IsZero() {
		t.Errorf("%v %v %v", p, err, p.Version)
	}
}

// TestSystemCuDNNFits: a framework that loads cuDNN from the image needs
// the same major and at least its build's minor (TensorFlow's loader:
// "Loaded runtime CuDNN library: 8.8.0 but source was compiled with: 8.9.4",
// tensorflow/tensorflow#62626).
func TestSystemCuDNNFits(t *testing.T) {
	tests := []struct {
		built, have string
		want        bool
	}{
		{"8.6", "8.6.0.163", true},  // TF 2.12 on 11.8.0-cudnn8 ubuntu18.04 (dist/end-of-life/11.8.0/ubuntu1804)
		{"8.6", "8.9.6.50", true},   // TF 2.12 on 11.8.0-cudnn8 ubuntu22.04 (NV_CUDNN_VERSION 8.9.6.50)
		{"8.9.4", "8.8.0", false},   // the refusal quoted in tensorflow#62626
		{"8.9", "9.1.0.70", false},  // another major: libcudnn.so.9 is not libcudnn.so.8
		{"8.6", "8.5.0.96", false},  // an older minor
		{"", "9.1.0.70", true},      // nothing asked
		{"9.3", "9.10.2.21", true},  // minor 10 > 3, compared as numbers
		{"9.10", "9.9.0.52", false}, // ... and the other way
	}
	for _, tt := range tests {
		var built Version
		if tt.built != "" {
			built = MustVersion(tt.built)
		}
		if got := SystemCuDNNFits(built, MustVersion(tt.have)); got != tt.want {
			t.Errorf("SystemCuDNNFits(%s, %s) = %v, want %v", tt.built, tt.have, got, tt.want)
		}
	}
}

// TestFrameworkInstalled: the version an image must hold is the one pip
// was asked for (tensorflow 2.15.0 is installed as 2.15.0.post1,
// tensorflow/tensorflow#62520).
func TestFrameworkInstalled(t *testing.T) {
	for _, tt := range []struct {
		fw   Framework
		name string
		want string
	}{
		{Framework{Version: "2.15.0", Packages: []string{"tensorflow[and-cuda]==2.15.0.post1"}}, "tensorflow", "2.15.0.post1"},
		{Framework{Version: "2.12.0", Packages: []string{"tensorflow==2.12.0"}}, "tensorflow", "2.12.0"},
		{Framework{Version: "2.3.1", Packages: []string{"torch==2.3.1", "torchvision==0.18.1"}}, "torch", "2.3.1"},
		{Framework{Version: "0.4.30", Packages: []string{"jax[cuda12]==0.4.30"}}, "jax", "0.4.30"},
		{Framework{Version: "1.0"}, "x", "1.0"},
	} {
		if got := tt.fw.Installed(tt.name); got != tt.want {
			t.Errorf("%v.Installed(%s) = %q, want %q", tt.fw.Packages, tt.name, got, tt.want)
		}
	}
}

// TestBaseImageSupport reads NVIDIA's end-of-life marks (images.yaml,
// sources images-nvidia-unsupported-tags and images-nvidia-support-policy)
// for a tag as an image's label or FROM line names it.
func TestBaseImageSupport(t *testing.T) {
	db := builtin(t)
	for _, tt := range []struct {
		ref        string
		eol, known bool
		supported  string
	}{
		{"nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04", true, true, "12.8.2"},
		{"docker.io/nvidia/cuda:12.8.2-base-ubuntu24.04@sha256:1111111111111111111111111111111111111111111111111111111111111111", false, true, "12.8.2"},
		{"nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", true, true, ""}, // all of CUDA 11 is end of life
		{"nvidia/cuda:12.2.2-runtime-ubuntu22.04", false, true, "12.2.2"},
		{"nvidia/cuda:9.9.9-base-ubuntu22.04", false, false, ""},
		{"debian:bookworm", false, false, ""},
	} {
		eol, sup, known := db.BaseImageSupport(tt.ref)
		got := ""
		if !sup.IsZero() {
			got = sup.String()
		}
		if eol != tt.eol || known != tt.known || got != tt.supported {
			t.Errorf("%s: eol %v known %v supported %q, want %v %v %q", tt.ref, eol, known, got, tt.eol, tt.known, tt.supported)
		}
	}
}

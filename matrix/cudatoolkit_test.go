package matrix

import (
	"slices"
	"strings"
	"testing"
)

// variantPins are the pins torch.yaml records for one torch variant.
func variantPins(t *testing.T, db *DB, version, cuda string) []Pin {
	t.Helper()
	for _, r := range db.Torch {
		if r.Version.String() != version {
			continue
		}
		for _, v := range r.Variants {
			if v.CUDA.String() == cuda {
				return v.Pins
			}
		}
	}
	t.Fatalf("no torch %s cu%s row", version, cuda)
	return nil
}

// TestComparePins is the rule for two frameworks in one environment in
// the shape of CUDA 13 wheels: suffix-less component wheels, the
// cuda-toolkit metapackage with extras, and the -cu13 wheels of cuDNN,
// NCCL, cuSPARSELt and NVSHMEM. The torch rows' pins are the built-in
// data (sources torch-pins-2.11.0-pypi, torch-pins-2.13.0-pypi,
// torch-gbbm-2.9-cycle); cuda-toolkit's component pins are cudatoolkit.yaml's.
func TestComparePins(t *testing.T) {
	db := builtin(t)
	t211 := variantPins(t, db, "2.11.0", "13.0")
	t213 := variantPins(t, db, "2.13.0", "13.0")
	t290 := variantPins(t, db, "2.9.0", "13.0")
	t290cu128 := variantPins(t, db, "2.9.0", "12.8")
	tests := []struct {
		name, source string
		a, b         []Pin
		conflicts    []string // package names
		notCompared  []string // substrings, one per entry
	}{
		{
			name:   "torch 2.13.0's cuda-toolkit 13.0.3 pins nvidia-cublas 13.1.1.3.*; torch 2.9.0 cu130 pins 13.0.0.19 directly",
			source: "cuda-toolkit-13.0.3-pip-log; torch-gbbm-2.9-cycle",
			a:      t213, b: t290,
			conflicts: []string{"nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cufft", "nvidia-cufile", "nvidia-cuda-cupti", "nvidia-cusolver", "nvidia-cusparse", "nvidia-cuda-nvrtc", "nvidia-nvtx", "nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13"},
			// cuda-toolkit 13.0.3's nvjitlink is a range, not a pin: torch
			// 2.9.0's nvidia-nvjitlink==13.0.39 is not compared with it.
			notCompared: []string{"nvidia-nvjitlink (cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3 against nvidia-nvjitlink==13.0.39)"},
		},
		{
			name:   "two toolkit releases conflict by the metapackage's own name as well as by component",
			source: "torch-pins-2.11.0-pypi; torch-pins-2.13.0-pypi",
			a:      t211, b: t213,
			conflicts: []string{"cuda-toolkit", "nvidia-cudnn-cu13", "nvidia-cusparselt-cu13", "nvidia-nccl-cu13", "nvidia-cublas"},
			// 13.0.2 pins nvidia-nvjitlink==13.0.88.*, 13.0.3 asks for a range.
			notCompared: []string{"nvidia-nvjitlink (cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3 against nvidia-nvjitlink==13.0.88.*)"},
		},
		{
			name:   "a component pin inside the toolkit's prefix pin agrees",
			source: "cuda-toolkit-13.0.2-pip-log (nvidia-cublas==13.1.0.3.*)",
			a:      t211, b: pins(t, "nvidia-cublas==13.1.0.3", "nvidia-cudnn-cu13==9.19.0.56"),
		},
		{
			name:   "CUDA 12 suffixed wheels and CUDA 13 suffix-less wheels are different distributions",
			source: "torch-gbbm-2.9-cycle (12.8 and 13.0 lists)",
			a:      t290cu128, b: t290,
		},
		{
			name:        "a toolkit release the matrix lacks is not compared, never passed",
			source:      "issue 44: unconfirmed stays only where the data lacks pins, and says which",
			a:           pins(t, "cuda-toolkit[cublas,cudart]==13.9.9"),
			b:           pins(t, "nvidia-cublas==13.0.0.19", "nvidia-nvtx==13.0.39"),
			notCompared: []string{"nvidia-cublas (cuda-toolkit[cublas,cudart]==13.9.9 against nvidia-cublas==13.0.0.19): the matrix does not record the component pins of cuda-toolkit 13.9.9"},
		},
		{
			name:   "an unrecorded toolkit is harmless when the other side pins none of its components",
			source: "issue 44",
			a:      pins(t, "cuda-toolkit[cublas]==13.9.9"),
			b:      pins(t, "nvidia-cudnn-cu13==9.20.0.48"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := db.ComparePins(tt.a, tt.b)
			var names []string
			for _, c := range got.Conflicts {
				names = append(names, c.Name)
			}
			slices.Sort(names)
			want := slices.Clone(tt.conflicts)
			slices.Sort(want)
			if strings.Join(names, ",") != strings.Join(want, ",") {
				t.Errorf("conflicts %v, want %v (source %s)", names, want, tt.source)
			}
			if len(got.NotCompared) != len(tt.notCompared) {
				t.Fatalf("not compared %q, want %d entries (source %s)", got.NotCompared, len(tt.notCompared), tt.source)
			}
			for i, w := range tt.notCompared {
				if !strings.Contains(got.NotCompared[i], w) {
					t.Errorf("not compared %q, want it to contain %q", got.NotCompared[i], w)
				}
			}
		})
	}
}

// TestPinsOutside: an exact pin against another framework's range, as a
// torch wheel's pins meet a JAX CUDA plugin's with-cuda extra
// (build/nvidia-requirements.txt at jax-v0.11.0).
func TestPinsOutside(t *testing.T) {
	rng := func(ss ...string) []WheelRange {
		var out []WheelRange
		for _, s := range ss {
			r, err := ParseWheelRange(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	tests := []struct {
		name   string
		pins   []Pin
		ranges []WheelRange
		want   []string // "name range"
	}{
		{"torch 2.6.0 cu124's cuDNN 9.1.0.70 is below jax-cuda12-plugin's >=9.8,<10.0",
			pins(t, "nvidia-cudnn-cu12==9.1.0.70", "nvidia-nccl-cu12==2.21.5"),
			rng("nvidia-cudnn-cu12>=9.8,<10.0", "nvidia-nccl-cu12>=2.18.1"),
			[]string{"nvidia-cudnn-cu12 >=9.8,<10.0"}},
		{"torch 2.9.0 cu130 inside jax-cuda13-plugin's ranges",
			pins(t, "nvidia-cublas==13.0.0.19", "nvidia-cudnn-cu13==9.13.0.50"),
			rng("nvidia-cublas>=13.0.0.19", "nvidia-cudnn-cu13>=9.12.0.46,<10.0"), nil},
		{"a prefix pin is judged by its stem",
			pins(t, "nvidia-cublas==13.1.1.3.*"), rng("nvidia-cublas<13.1"), []string{"nvidia-cublas <13.1"}},
		{"a requirement without a version constrains nothing",
			pins(t, "nvidia-nvvm==13.0.48"), rng("nvidia-nvvm"), nil},
		{"suffix-less and -cu12 names are different distributions",
			pins(t, "nvidia-cublas-cu12==12.8.4.1"), rng("nvidia-cublas>=13.0.0.19"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range PinsOutside(tt.pins, tt.ranges) {
				got = append(got, c.Name+" "+c.Range)
			}
			if strings.Join(got, ";") != strings.Join(tt.want, ";") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParsePinShapes: the spellings CUDA 13 wheels' METADATA uses.
func TestParsePinShapes(t *testing.T) {
	tests := []struct {
		in, want string
		extras   int
		prefix   bool
	}{
		{"cuda-toolkit[nvtx,cublas,cudart]==13.0.2", "cuda-toolkit[cublas,cudart,nvtx]==13.0.2", 3, false},
		{"nvidia-cublas==13.1.0.3.*", "nvidia-cublas==13.1.0.3.*", 0, true},
		{"Nvidia_CUBLAS == 13.0.0.19", "nvidia-cublas==13.0.0.19", 0, false},
		{"cuda-toolkit[ cublas ]==13.0.3", "cuda-toolkit[cublas]==13.0.3", 1, false},
	}
	for _, tt := range tests {
		p, err := ParsePin(tt.in)
		if err != nil {
			t.Fatalf("ParsePin(%q): %v", tt.in, err)
		}
		if p.String() != tt.want || len(p.Extras) != tt.extras || p.Prefix != tt.prefix {
			t.Errorf("ParsePin(%q) = %s (extras %v, prefix %v), want %s", tt.in, p, p.Extras, p.Prefix, tt.want)
		}
	}
	for _, bad := range []string{"cuda-toolkit[cublas==13.0.2", "nvidia-cublas==13.*.1", "nvidia-cublas==13.0+x.*", "cuda-bindings<14,>=13.0.3"} {
		if _, err := ParsePin(bad); err == nil {
			t.Errorf("ParsePin(%q) accepted", bad)
		}
	}
	same := []struct {
		a, b string
		want bool
	}{
		{"nvidia-cublas==13.1.0.3.*", "nvidia-cublas==13.1.0.3", true},
		{"nvidia-cublas==13.1.0.3.*", "nvidia-cublas==13.1.1.3", false},
		{"nvidia-cublas==13.1.*", "nvidia-cublas==13.1.0.3.*", true},
		{"nvidia-cublas==13.1.0.3.*", "nvidia-cublas==13.1", false},
		{"nvidia-cublas==13.1.0.*", "nvidia-cublas==13.1", true}, // 13.1 is 13.1.0
	}
	for _, tt := range same {
		a, b := pins(t, tt.a)[0], pins(t, tt.b)[0]
		if a.Same(b) != tt.want || b.Same(a) != tt.want {
			t.Errorf("%s same as %s: %v, want %v", tt.a, tt.b, a.Same(b), tt.want)
		}
	}
}

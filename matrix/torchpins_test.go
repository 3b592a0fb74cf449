package matrix

import (
	"slices"
	"strings"
	"testing"
)

// TestTorchPinsRecorded: the exact pins read for issue 44 (item 1) are in
// the built-in data as each wheel's METADATA states them, so pin
// comparison covers those variants; a requirement the sources give as a
// range is not recorded as a pin (absent), and pins the variant's cudnn
// and nccl fields agree with.
func TestTorchPinsRecorded(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		torch, cuda string
		n           int      // number of pins
		has         []string // pins recorded
		absent      []string // names not pinned (ranges in the wheel)
		triton      string
	}{
		{"2.10.0", "13.0", 15,
			[]string{"cuda-bindings==13.0.3", "nvidia-cublas==13.1.0.3", "nvidia-cudnn-cu13==9.15.1.9", "nvidia-nccl-cu13==2.28.9", "nvidia-nvshmem-cu13==3.4.5", "nvidia-cufile==1.15.1.6"},
			[]string{"nvidia-cuda-runtime", "cuda-toolkit"}, "==3.6.0"},
		{"2.7.0", "12.6", 14,
			[]string{"nvidia-cuda-runtime-cu12==12.6.77", "nvidia-cudnn-cu12==9.5.1.17", "nvidia-nccl-cu12==2.26.2", "nvidia-cusparselt-cu12==0.6.3", "nvidia-cufile-cu12==1.11.1.6"},
			[]string{"nvidia-nvshmem-cu12", "cuda-bindings"}, "==3.3.0"},
		{"2.5.1", "12.4", 12,
			[]string{"nvidia-cuda-runtime-cu12==12.4.127", "nvidia-cudnn-cu12==9.1.0.70", "nvidia-nccl-cu12==2.21.5", "nvidia-nvjitlink-cu12==12.4.127"},
			[]string{"nvidia-cusparselt-cu12", "nvidia-cufile-cu12"}, "==3.1.0"},
		{"2.4.0", "12.1", 11,
			[]string{"nvidia-cuda-runtime-cu12==12.1.105", "nvidia-cudnn-cu12==9.1.0.70", "nvidia-nccl-cu12==2.20.5"},
			[]string{"nvidia-nvjitlink-cu12", "nvidia-cusparselt-cu12"}, "==3.0.0"},
		{"2.4.1", "12.1", 11,
			[]string{"nvidia-cuda-runtime-cu12==12.1.105", "nvidia-cudnn-cu12==9.1.0.70", "nvidia-nccl-cu12==2.20.5", "nvidia-cusparse-cu12==12.1.0.106"},
			[]string{"nvidia-nvjitlink-cu12", "nvidia-cusparselt-cu12"}, "==3.0.0"},
		{"2.12.0", "13.0", 5,
			[]string{"cuda-toolkit[cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2", "nvidia-cudnn-cu13==9.20.0.48", "nvidia-nccl-cu13==2.29.7"},
			[]string{"nvidia-cublas", "cuda-bindings"}, "==3.7.0"},
	}
	for _, tt := range tests {
		t.Run(tt.torch+" cu"+tt.cuda, func(t *testing.T) {
			i := slices.IndexFunc(db.Torch, func(r Torch) bool { return r.Version.String() == tt.torch })
			if i < 0 {
				t.Fatalf("no torch %s row", tt.torch)
			}
			j := slices.IndexFunc(db.Torch[i].Variants, func(v TorchVariant) bool { return v.CUDA.String() == tt.cuda })
			if j < 0 {
				t.Fatalf("torch %s has no cu%s variant", tt.torch, tt.cuda)
			}
			v := db.Torch[i].Variants[j]
			var got []string
			for _, p := range v.Pins {
				got = append(got, p.String())
			}
			if len(got) != tt.n {
				t.Errorf("%d pins %q, want %d", len(got), got, tt.n)
			}
			for _, h := range tt.has {
				if !slices.Contains(got, h) {
					t.Errorf("pins %q lack %s", got, h)
				}
			}
			for _, a := range tt.absent {
				if slices.ContainsFunc(v.Pins, func(p Pin) bool { return p.Name == a }) {
					t.Errorf("pins %q name %s, which the sources give as a range or not at all", got, a)
				}
			}
			if v.Triton != tt.triton {
				t.Errorf("triton %q, want %q", v.Triton, tt.triton)
			}
			for _, lib := range []struct{ prefix, want string }{{"nvidia-cudnn-cu", v.CuDNN.String()}, {"nvidia-nccl-cu", v.NCCL.String()}} {
				k := slices.IndexFunc(v.Pins, func(p Pin) bool { return strings.HasPrefix(p.Name, lib.prefix) })
				if k < 0 || v.Pins[k].Raw != lib.want {
					t.Errorf("%s pin disagrees with the variant's field %s", lib.prefix, lib.want)
				}
			}
		})
	}
}

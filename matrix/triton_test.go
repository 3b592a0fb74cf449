package matrix

import "testing"

func TestBringsTriton(t *testing.T) {
	tests := []struct {
		name string
		fws  map[string]Framework
		want bool
	}{
		{"torch 1.13 has no triton", map[string]Framework{FrameworkTorch: {Version: "1.13.1"}}, false},
		{"torch 2.0.0 is the first", map[string]Framework{FrameworkTorch: {Version: "2.0.0"}}, true},
		{"torch 2.7.1", map[string]Framework{FrameworkTorch: {Version: "2.7.1"}}, true},
		{"torch beside jax", map[string]Framework{FrameworkTorch: {Version: "2.3.1"}, FrameworkJAX: {Version: "0.4.30"}}, true},
		{"tensorflow alone", map[string]Framework{FrameworkTensorFlow: {Version: "2.15.0"}}, false},
		{"jax alone", map[string]Framework{FrameworkJAX: {Version: "0.4.30"}}, false},
		{"no framework", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Stack{Frameworks: tt.fws}).BringsTriton(); got != tt.want {
				t.Errorf("BringsTriton() = %v, want %v", got, tt.want)
			}
		})
	}
}

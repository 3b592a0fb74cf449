package examples

import (
	"testing"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestExamplesLoad keeps the example files valid.
func TestExamplesLoad(t *testing.T) {
	cfg, err := builder.LoadConfig("gpuimg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CUDA != "12.2" || cfg.Torch != "2.3" || len(cfg.Pip) != 2 || !cfg.Push {
		t.Errorf("gpuimg.yaml = %+v", cfg)
	}
	db, err := matrix.Load("matrix-internal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tc := matrix.MustConstraint("2.3.1.99")
	s, err := db.Resolve(matrix.Constraints{Torch: &tc, GPU: "h100"})
	if err != nil {
		t.Fatal(err)
	}
	if fw := s.Frameworks["torch"]; fw.Version != "2.3.1.99" || fw.IndexURL != "https://pypi.example.com/ml/simple" || s.CUDA != "12.1.1" {
		t.Errorf("resolved %+v", s)
	}
}

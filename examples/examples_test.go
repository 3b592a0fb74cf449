package examples

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/publish"
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

// TestPublishExample keeps publish.yaml valid against the built-in matrix:
// it loads, and expands to variants with the refused combination and the
// excluded ones skipped.
func TestPublishExample(t *testing.T) {
	f, err := publish.LoadFile("publish.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Repository != "registry.example.com/ml/torch" || len(f.Matrix) != 3 || len(f.Exclude) != 1 || len(f.Include) != 1 ||
		len(f.Build.Pip) != 1 || len(f.Validate.GPU) != 2 || len(f.Mirrors) != 1 || len(f.Promote.Tags) != 2 {
		t.Errorf("publish.yaml = %+v", f)
	}
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := publish.Expand(t.Context(), db, f, publish.ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range p.Variants {
		names = append(names, v.Name)
	}
	if len(names) != 9 || !slices.Contains(names, "2.7.1-cu128-py3.12") || !slices.Contains(names, "2.9.1-cu130-py3.12") {
		t.Errorf("variants %q", names)
	}
	var reasons []string
	for _, s := range p.Skipped {
		reasons = append(reasons, s.Reason)
	}
	if len(reasons) != 4 || !strings.HasPrefix(reasons[2], "excluded (publish.yaml:") || !strings.Contains(reasons[0], "cannot run them") {
		t.Errorf("skipped %q", reasons)
	}
}

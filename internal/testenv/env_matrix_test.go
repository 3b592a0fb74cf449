package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestFixtureMatrix: the fixture overlay loads over the built-in matrix
// and lets the multi-platform e2e build resolve torch 2.3 for linux/arm64
// (its twins exist for aarch64), which the built-in data refuses.
func TestFixtureMatrix(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fixture-matrix.yaml")
	if err := os.WriteFile(file, []byte(fixtureMatrix), 0o644); err != nil {
		t.Fatal(err)
	}
	c := matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: func() *matrix.Constraint { c := matrix.MustConstraint("2.3"); return &c }(), Platforms: []string{"linux/amd64", "linux/arm64"}}
	builtin, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := builtin.Resolve(c); err == nil {
		t.Fatal("the built-in matrix resolves torch 2.3 for linux/arm64; the overlay row is not needed")
	}
	db, err := matrix.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Resolve(c); err != nil {
		t.Errorf("with the fixture matrix: %v", err)
	}
}

package builder

import (
	"slices"
	"testing"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestConstrain: the extras' OS packages and the platforms reach the
// resolver's constraints, the other constraints stay, and they steer the
// resolution: an OS package that uses CUDA's libraries gets the runtime
// flavor where torch's CUDA wheels alone would take the base one.
func TestConstrain(t *testing.T) {
	platforms, err := images.ParsePlatforms("linux/amd64", "linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	torch := func(v string) matrix.Constraints {
		t.Helper()
		var c matrix.Constraints
		if err := c.Set(matrix.FieldTorch, v); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := Constrain(torch(">=2.6"), Extras{Apt: []string{"libnccl2", "git"}}, platforms)
	if c.Value(matrix.FieldTorch) != ">=2.6" || !slices.Equal(c.Apt, []string{"libnccl2", "git"}) || !slices.Equal(c.Platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("constraints %+v", c)
	}
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := db.Resolve(Constrain(torch("2.6"), Extras{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	withLibs, err := db.Resolve(Constrain(torch("2.6"), Extras{Apt: []string{"libnccl2"}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Flavor != "base" || withLibs.Flavor != "runtime" {
		t.Errorf("flavors %q without and %q with libnccl2, want base and runtime", plain.Flavor, withLibs.Flavor)
	}
}

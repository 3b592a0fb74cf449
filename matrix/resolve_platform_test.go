package matrix

import (
	"errors"
	"strings"
	"testing"
)

// TestCUDAPlatforms: a platform a framework release has no CUDA wheels
// for is refused with the reason; releases the data does not cover, and
// builds without platforms, are not checked.
func TestCUDAPlatforms(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		c    Constraints
		err  string // "" resolves
	}{
		{"torch 2.4 on arm64", Constraints{Torch: cons("2.4"), Platforms: []string{"linux/arm64"}}, "torch 2.4.1 has no CUDA wheels for linux/arm64 (only linux/amd64)"},
		{"torch 2.3 on amd64 and arm64", Constraints{Torch: cons("2.3"), Platforms: []string{"linux/amd64", "linux/arm64/v8"}}, "has no CUDA wheels for linux/arm64/v8"},
		{"torch 2.4 on amd64", Constraints{Torch: cons("2.4"), Platforms: []string{"linux/amd64"}}, ""},
		{"torch 2.4 without platforms", Constraints{Torch: cons("2.4")}, ""},
		{"torch 2.5 is not recorded", Constraints{Torch: cons("2.5"), Platforms: []string{"linux/arm64"}}, ""},
		{"tensorflow on arm64", Constraints{TensorFlow: cons("2.15"), Platforms: []string{"linux/arm64"}}, "tensorflow 2.15.0 has no CUDA wheels for linux/arm64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Resolve(tt.c)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConflictError
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tt.err) {
				t.Fatalf("err %v, want a conflict with %q", err, tt.err)
			}
		})
	}
	// --torch 2 on arm64 skips the releases without arm64 CUDA wheels.
	s, err := db.Resolve(Constraints{Torch: cons("2"), Platforms: []string{"linux/arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	if v := MustVersion(s.Frameworks[FrameworkTorch].Version); v.Less(MustVersion("2.5")) {
		t.Errorf("--torch 2 on arm64 gave torch %s", v)
	}
}

package matrix

import (
	"strings"
	"testing"
)

// TestFloorsOf: a stack's (or an image's) strict floor is its image CUDA
// release's own, or a wheel's higher one, named as the wheel's (cuda.yaml,
// CUDA Toolkit release notes' driver table: 12.2.0 535.54.03, 12.2.2
// 535.104.05, 12.4.0 550.54.14, 12.4.1 550.54.15, 13.2.1 595.58.03, 13.2.2
// 595.71.05; minor-version compatibility: 12.x 525.60.13).
func TestFloorsOf(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	img := func(v string) FloorPart { return FloorPart{What: "the image's CUDA " + v, CUDA: MustVersion(v)} }
	whl := func(what, v string) FloorPart { return FloorPart{What: what, CUDA: MustVersion(v)} }
	for _, tt := range []struct {
		name           string
		parts          []FloorPart
		strict, compat string
		by             string
	}{
		{"the image's own release, not its minor's newest patch", []FloorPart{img("12.2.0")}, "535.54.03", "525.60.13", "set by the image's CUDA 12.2.0"},
		{"an older wheel does not raise it", []FloorPart{img("12.2.2"), whl("torch 2.3.1 cu121 wheels", "12.1")}, "535.104.05", "525.60.13", "set by the image's CUDA 12.2.2"},
		{"a wheel of the same minor counts at its newest patch", []FloorPart{img("12.4.0"), whl("torch 2.5.1 cu124 wheels", "12.4")}, "550.54.15", "525.60.13", "set by torch 2.5.1 cu124 wheels: CUDA 12.4, counted at its newest patch 12.4.1"},
		// The case 5: torch 2.14.1 cu132 on 13.2.1 needs 13.2.2's floor, and says so.
		{"not the image's", []FloorPart{img("13.2.1"), whl("torch 2.14.1 cu132 wheels", "13.2")}, "595.71.05", "580", "set by torch 2.14.1 cu132 wheels: CUDA 13.2, counted at its newest patch 13.2.2"},
		{"a documented minimum raises both", []FloorPart{img("12.2.2"), {What: "a framework (a test value, not a fact)", CUDA: MustVersion("12.1"), MinDriver: MustVersion("545.23.06")}}, "545.23.06", "545.23.06", "set by a framework (a test value, not a fact): its documented minimum driver"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := db.FloorsOf("the stack", tt.parts)
			if f.Strict.String() != tt.strict || f.Compat.String() != tt.compat || !strings.HasPrefix(f.Detail, tt.by) {
				t.Errorf("FloorsOf = %s / %s (%s); want %s / %s (%s)", f.Strict, f.Compat, f.Detail, tt.strict, tt.compat, tt.by)
			}
		})
	}
}

package matrix

import (
	"strings"
	"testing"
)

// TestResolveEach: the list view (issue 43 item 4) gives, for each
// release, exactly what Resolve gives with the release pinned. Facts:
// cuda.yaml (driver 525.60.13 meets CUDA 11.8.0's floor 520.61.05, not
// 12.8.2's 570.124.06); torch.yaml (2.7.1 has cu118 wheels, 2.8.0 none
// older than cu126).
func TestResolveEach(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	anyRel := &Constraint{}
	c := Constraints{Torch: anyRel, Driver: MustVersion("525.60.13"), GPU: "a100"}
	name, fits, err := db.ResolveEach(c)
	if err != nil || name != FrameworkTorch {
		t.Fatalf("ResolveEach = %s, %v", name, err)
	}
	by := map[string]ReleaseFit{}
	for i, f := range fits {
		by[f.Version] = f
		if i > 0 && MustVersion(fits[i-1].Version).Less(MustVersion(f.Version)) {
			t.Errorf("%s before %s: not newest first", fits[i-1].Version, f.Version)
		}
		if (f.Stack == nil) == (f.Reason == "") {
			t.Errorf("%s: stack %v and reason %q: want exactly one", f.Version, f.Stack, f.Reason)
		}
	}
	for _, tt := range []struct {
		version, cuda, reason string
	}{
		{"2.7.1", "11.8.0", ""},
		{"2.8.0", "", "below the stack's floor"},
	} {
		f, ok := by[tt.version]
		switch {
		case !ok:
			t.Errorf("torch %s not listed", tt.version)
		case tt.cuda != "" && (f.Stack == nil || f.Stack.CUDA != tt.cuda):
			t.Errorf("torch %s: stack %v (%s), want CUDA %s", tt.version, f.Stack, f.Reason, tt.cuda)
		case tt.reason != "" && !strings.Contains(f.Reason, tt.reason):
			t.Errorf("torch %s: reason %q, want %q", tt.version, f.Reason, tt.reason)
		}
	}
	// One truth: the list's stack is Resolve's.
	pin := MustConstraint("2.7.1")
	one := c
	one.Torch = &pin
	s, err := db.Resolve(one)
	if err != nil || s.BaseImage != by["2.7.1"].Stack.BaseImage {
		t.Errorf("Resolve gives %s (%v), the list %s", s.BaseImage, err, by["2.7.1"].Stack.BaseImage)
	}
	for _, bad := range []Constraints{{}, {Torch: anyRel, JAX: anyRel}} {
		if _, _, err := db.ResolveEach(bad); err == nil || !strings.Contains(err.Error(), "one framework") {
			t.Errorf("ResolveEach(%d frameworks) = %v", len(bad.Given()), err)
		}
	}
}

package matrix

import (
	"strings"
	"testing"
)

// TestTargetAccepted: which nvcc targets each CUDA release accepts,
// suffixes included (issue 44): sm_90a from 12.0, sm_100a/sm_120a from
// 12.8, family-specific sm_100f/sm_120f from 12.9, sm_103/sm_121 from
// 12.9, sm_88 and sm_110 from 13.0, sm_101 renamed sm_110 in 13.0, and
// sm_50-sm_72 dropped by 13.0.
func TestTargetAccepted(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cuda, target string
		err          string // "" when accepted
	}{
		{"11.8", "sm_90", ""},
		{"11.8", "sm_90a", "needs CUDA 12.0"},
		{"12.0", "compute_90a", ""},
		{"12.8", "sm_100a", ""},
		{"12.8", "sm_100f", "family-specific) needs CUDA 12.9"},
		{"12.9", "sm_100f", ""},
		{"12.9", "compute_120f", ""},
		{"12.8", "sm_103", "needs CUDA 12.9"},
		{"12.9", "sm_103a", ""},
		{"12.8", "sm_101", ""},
		{"13.0", "sm_101", "renamed sm_101 to sm_110"},
		{"13.0", "sm_101a", "use sm_110a"},
		{"12.9", "sm_110", "needs CUDA 13.0"},
		{"13.0", "sm_110f", ""},
		{"12.9", "sm_88", "needs CUDA 13.0"},
		{"13.0", "compute_88", ""},
		{"13.0", "sm_88a", "no architecture-specific target"},
		{"12.9", "sm_70", ""},
		{"13.0", "sm_70", "no longer accepts sm_70"},
		{"13.0", "sm_72", "no longer accepts"},
		{"13.0", "sm_75", ""},
		{"12.8", "sm_89a", "no architecture-specific target"},
		{"12.8", "sm_99", "does not know architecture sm_99"},
	} {
		t.Run(tt.cuda+"/"+tt.target, func(t *testing.T) {
			ct, err := ParseCodeTarget(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			err = db.TargetAccepted(MustVersion(tt.cuda), ct)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("CUDA %s %s: %v, want accepted", tt.cuda, tt.target, err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("CUDA %s %s: %v, want %q", tt.cuda, tt.target, err, tt.err)
			}
		})
	}
}

// TestParseCodeTarget: the forms cuobjdump, torch and -gencode use, and
// one-line errors for the rest.
func TestParseCodeTarget(t *testing.T) {
	for _, tt := range []struct {
		in, arch, suffix, str string
		ptx                   bool
	}{
		{"sm_80", "sm_80", "", "sm_80", false},
		{"sm_90a", "sm_90", "a", "sm_90a", false},
		{"sm_100f", "sm_100", "f", "sm_100f", false},
		{"compute_120f", "sm_120", "f", "compute_120f", true},
		{"compute_90a", "sm_90", "a", "compute_90a", true},
	} {
		ct, err := ParseCodeTarget(tt.in)
		if err != nil || ct.Arch != tt.arch || ct.Suffix != tt.suffix || ct.PTX != tt.ptx || ct.String() != tt.str {
			t.Errorf("ParseCodeTarget(%q) = %+v, %v", tt.in, ct, err)
		}
	}
	for _, bad := range []string{"", "sm_", "sm_9", "sm_1000", "sm_90b", "lto_90", "sm_9x", "compute_f"} {
		if _, err := ParseCodeTarget(bad); err == nil || !strings.Contains(err.Error(), "give sm_XY or compute_XY") {
			t.Errorf("ParseCodeTarget(%q) = %v, want the forms named", bad, err)
		}
	}
}

// TestVariantArchsAccepted: every SASS and PTX target a torch variant
// records (sm_90a, sm_100f included) is one its CUDA release's nvcc
// accepts, by the archs: rows.
func TestVariantArchsAccepted(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range db.Torch {
		for _, v := range r.Variants {
			for _, a := range append(append([]string(nil), v.Archs...), v.PTX...) {
				ct, err := ParseCodeTarget(a)
				if err == nil {
					err = db.TargetAccepted(v.CUDA, ct)
				}
				if err != nil {
					t.Errorf("torch %s cu%s: %v", r.Version, v.CUDA, err)
				}
			}
		}
	}
}

// TestFindGPUBySuffixedArch: --gpu sm_90a or sm_100f judges the plain
// architecture (the suffix names code, not a GPU), and compute_XY is not
// a GPU.
func TestFindGPUBySuffixedArch(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"sm_90a": "sm_90", "sm_100f": "sm_100", "sm_120": "sm_120", "12.1": "sm_121"} {
		g, err := db.FindGPU(in)
		if err != nil || g.Arch != want {
			t.Errorf("FindGPU(%q) = %+v, %v; want arch %s", in, g, err, want)
		}
	}
	if g, err := db.FindGPU("compute_90"); err == nil {
		t.Errorf("FindGPU(compute_90) = %+v, want an error", g)
	}
}

package matrix

import (
	"strings"
	"testing"
)

// TestVariantRule pins the wheel variant the resolver picks. With a CUDA
// constraint the variant built for the image's CUDA major.minor wins, else
// the nearest older minor of the same major; upstream's stable label, then
// PyPI's default variant, break ties among equally close variants. Without
// a CUDA constraint the preference is unchanged: stable first, newest CUDA
// first, the data's order last.
func TestVariantRule(t *testing.T) {
	v := func(cuda, status, index string, pypi bool, archs ...string) TorchVariant {
		return TorchVariant{CUDA: MustVersion(cuda), Status: status, IndexURL: index, PyPI: pypi, Archs: archs}
	}
	// Releases of a fictional torch on the test world's CUDA 11.8, 12.1,
	// 12.2 and 12.4 images.
	spread := []TorchVariant{
		v("11.8", "stable", "cu118", false, "sm_80"),
		v("12.1", "stable", "cu121", true, "sm_80"),
		v("12.4", "experimental", "cu124", false, "sm_90"),
	}
	stableTie := []TorchVariant{
		v("12.1", "experimental", "cu121-exp", true, "sm_80"),
		v("12.1", "stable", "cu121-stable", false, "sm_80"),
	}
	pypiTie := []TorchVariant{
		v("12.1", "stable", "cu121-first", false, "sm_80"),
		v("12.1", "stable", "cu121-pypi", true, "sm_80"),
	}
	tests := []struct {
		name     string
		variants []TorchVariant
		c        Constraints
		index    string // the chosen variant's index URL
		cuda     string // the image CUDA
		note     string
	}{
		{"exact CUDA match wins over stable", spread, Constraints{CUDA: MustConstraint("12.4")}, "cu124", "12.4.1",
			"cu124 is built for the image's CUDA 12.4: with a CUDA version requested, the variant for it wins"},
		{"else the nearest older minor of the same major", spread, Constraints{CUDA: MustConstraint("12.2")}, "cu121", "12.2.2",
			"no variant is built for the image's CUDA 12.2; cu121 is the nearest older one of the same major"},
		{"another major is never close", spread, Constraints{CUDA: MustConstraint("11.8")}, "cu118", "11.8.0", "cu118 is built for the image's CUDA 11.8"},
		{"a prefix: the newest image and the variant closest to it", spread, Constraints{CUDA: MustConstraint("12")}, "cu124", "12.4.1", "cu124 is built for"},
		{"the closest variant fails on the GPU: the next closest, said so", spread, Constraints{CUDA: MustConstraint("12.4"), GPU: "a10"}, "cu121", "12.4.1",
			"cu121 is not the variant closest to the image's CUDA 12.4: the closer cu124 does not fit the other constraints"},
		{"no CUDA requested keeps today's choice: stable, newest", spread, Constraints{}, "cu121", "12.1.1",
			"cu121 is the newest stable wheel variant, preferred as no CUDA version was requested"},
		{"a tie is broken by stable before PyPI's default", stableTie, Constraints{CUDA: MustConstraint("12.1")}, "cu121-stable", "12.1.1",
			"2 variants are built for CUDA 12.1, the image's; it was preferred because upstream marks it stable"},
		{"then by PyPI's default", pypiTie, Constraints{CUDA: MustConstraint("12.2")}, "cu121-pypi", "12.2.2",
			"it was preferred because it is the variant PyPI installs by default"},
		{"PyPI's default does not count without a CUDA", pypiTie, Constraints{}, "cu121-first", "12.1.1", "newest stable wheel variant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := world(t)
			db.Torch = []Torch{{Version: MustVersion("2.3.1"), Python: MustConstraint(">=3.8"), Variants: tt.variants, Row: Row{Source: "test"}}}
			tt.c.Torch = &Constraint{}
			s, err := db.Resolve(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Frameworks["torch"].IndexURL; got != tt.index || s.CUDA != tt.cuda {
				t.Errorf("chose %s on CUDA %s, want %s on %s", got, s.CUDA, tt.index, tt.cuda)
			}
			if all := strings.Join(s.Notes, "\n"); !strings.Contains(all, tt.note) {
				t.Errorf("no note contains %q:\n%s", tt.note, all)
			}
		})
	}
}

// TestBuiltinVariantRule: the example on the real data. PyTorch
// 2.7.1 publishes cu118 and cu126 (stable) and cu128 (experimental).
func TestBuiltinVariantRule(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cuda, torch string
		wantCUDA    string // image
		wantWheels  string
	}{
		{"12.8", "2.7", "12.8.2", "12.8"}, // cu128 exact, not the stable cu126; 12.8.2 is the supported 12.8 point release
		{"", "2.7", "12.6.3", "12.6"},     // no --cuda: stable first, as before
		{"12.2", "2.3", "12.2.2", "12.1"}, // no cu122: the nearest older, cu121 (README)
		{"11.8", "2.7", "11.8.0", "11.8"},
	} {
		c := Constraints{Torch: cons(tt.torch)}
		if tt.cuda != "" {
			c.CUDA = MustConstraint(tt.cuda)
		}
		s, err := db.Resolve(c)
		if err != nil {
			t.Fatalf("--cuda %q --torch %s: %v", tt.cuda, tt.torch, err)
		}
		if got := s.Frameworks["torch"].CUDA; s.CUDA != tt.wantCUDA || got != tt.wantWheels {
			t.Errorf("--cuda %q --torch %s: CUDA %s with cu%s wheels, want CUDA %s with cu%s", tt.cuda, tt.torch, s.CUDA, got, tt.wantCUDA, tt.wantWheels)
		}
	}
}

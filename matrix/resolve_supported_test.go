package matrix

import (
	"strings"
	"testing"
)

// TestOfferSupported: when the newest framework fits only on an
// end-of-life base, the stack says so and offers the newest stack on a
// supported base (issue 43 item 6). Facts: base_images.yaml (nvidia/cuda
// 11.8.0 is end of life, 12.1.1 and 12.4.1 are supported); cuda.yaml's
// floors (12.1.1 530.30.02, 12.4.1 550.54.15); torch.yaml (torch 2.7.1
// has cu118, cu126, cu128 wheels; 2.6.0 cu124; 2.5.1 cu121).
func TestOfferSupported(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	anyTorch := &Constraint{}
	for _, tt := range []struct {
		name     string
		c        Constraints
		torch    string // the stack's torch: the newest still wins
		altTorch string // the supported alternative's; "" for none
		altCUDA  string
	}{
		{"sagemaker/p5 (driver 535.54.03)", Constraints{Target: "sagemaker/p5", Torch: anyTorch}, "2.7.1", "2.5.1", "12.1.1"},
		{"a driver-550 H100 fleet", Constraints{Driver: MustVersion("550.54.15"), GPU: "h100", Torch: anyTorch}, "2.7.1", "2.6.0", "12.4.1"},
		{"a supported base needs no alternative", Constraints{Torch: anyTorch}, "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := db.Resolve(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if tt.torch != "" && s.Frameworks["torch"].Version != tt.torch {
				t.Errorf("torch %s, want %s", s.Frameworks["torch"].Version, tt.torch)
			}
			alt := s.SupportedAlternative
			if tt.altTorch == "" {
				if alt != nil || s.BaseImageEOL {
					t.Errorf("base %s (eol %v), alternative %v", s.BaseImage, s.BaseImageEOL, alt)
				}
				return
			}
			if !s.BaseImageEOL || alt == nil {
				t.Fatalf("base %s (eol %v): no supported alternative", s.BaseImage, s.BaseImageEOL)
			}
			if alt.BaseImageEOL || alt.Frameworks["torch"].Version != tt.altTorch || alt.CUDA != tt.altCUDA {
				t.Errorf("alternative %s on %s (eol %v), want torch %s on CUDA %s", alt.Short(), alt.BaseImage, alt.BaseImageEOL, tt.altTorch, tt.altCUDA)
			}
			if !hasNote(s, "fits these constraints only on end-of-life bases; the newest stack on a supported one is torch "+tt.altTorch) {
				t.Errorf("no note names the alternative: %q", s.Notes)
			}
			// The label holds the stack, not the advice.
			lv, err := s.LabelValue()
			if err != nil || strings.Contains(lv, `"supported_alternative":`) {
				t.Errorf("label %.80s…, %v", lv, err)
			}
		})
	}
}

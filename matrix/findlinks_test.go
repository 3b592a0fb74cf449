package matrix

import (
	"slices"
	"testing"
)

// TestJAXFindLinks: JAX 0.4.17 to 0.4.29's cuda*_pip extras pin a jaxlib
// only JAX's find-links page serves, so the stack carries the page for
// the builder; from 0.4.30 the plugin wheels are on PyPI and it carries
// none. The cudnn89 jaxlibs of 0.4.17 to 0.4.25, whose extras allow cuDNN
// 9, get nvidia-cudnn-cu12<9 beside the extra (JAXVariant.CuDNNBelow);
// 0.4.26 bounds it itself. The built-in data is what users get.
func TestJAXFindLinks(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	const page = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"
	for _, tt := range []struct {
		jax, links, cudnn string
		pkgs              []string
	}{
		{"0.4.17", page, ">=8.9.4,<9", []string{"jax[cuda12_pip]==0.4.17", "nvidia-cudnn-cu12<9"}},
		{"0.4.25", page, ">=8.9.7.29,<9", []string{"jax[cuda12_pip]==0.4.25", "nvidia-cudnn-cu12<9"}},
		{"0.4.26", page, ">=8.9.2.26", []string{"jax[cuda12_pip]==0.4.26"}},
		{"0.4.29", "", ">=9.1", []string{"jax[cuda12]==0.4.29"}}, // the plugin extra, documented from 0.4.29, comes first
		{"0.4.30", "", ">=9.1", []string{"jax[cuda12]==0.4.30"}},
	} {
		s, err := db.Resolve(Constraints{JAX: cons(tt.jax)})
		if err != nil {
			t.Fatalf("jax %s: %v", tt.jax, err)
		}
		fw := s.Frameworks[FrameworkJAX]
		if !slices.Equal(fw.Packages, tt.pkgs) || fw.FindLinks != tt.links || fw.CuDNN != tt.cudnn {
			t.Errorf("jax %s: packages %v, find links %q, cuDNN %q; want %v, %q, %q", tt.jax, fw.Packages, fw.FindLinks, fw.CuDNN, tt.pkgs, tt.links, tt.cudnn)
		}
	}
	for _, j := range db.JAX {
		for _, v := range j.Variants {
			if v.FindLinks != "" && !j.Version.Less(MustVersion("0.4.30")) {
				t.Errorf("jax %s[%s] has find_links; from 0.4.30 the CUDA wheels are on PyPI", j.Version, v.Extra)
			}
		}
	}
}

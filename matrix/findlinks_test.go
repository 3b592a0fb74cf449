package matrix

import "testing"

// TestJAXFindLinks: JAX 0.4.17 to 0.4.29's cuda*_pip extras pin a jaxlib
// only JAX's find-links page serves, so the stack carries the page for
// the builder; from 0.4.30 the plugin wheels are on PyPI and it carries
// none. The built-in data is what users get.
func TestJAXFindLinks(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	const page = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"
	for _, tt := range []struct {
		jax, pkg, links string
	}{
		{"0.4.17", "jax[cuda12_pip]==0.4.17", page},
		{"0.4.25", "jax[cuda12_pip]==0.4.25", page},
		{"0.4.29", "jax[cuda12]==0.4.29", ""}, // the plugin extra, documented from 0.4.29, comes first
		{"0.4.30", "jax[cuda12]==0.4.30", ""},
	} {
		s, err := db.Resolve(Constraints{JAX: cons(tt.jax)})
		if err != nil {
			t.Fatalf("jax %s: %v", tt.jax, err)
		}
		fw := s.Frameworks[FrameworkJAX]
		if len(fw.Packages) != 1 || fw.Packages[0] != tt.pkg || fw.FindLinks != tt.links {
			t.Errorf("jax %s: packages %v, find links %q; want %s, %q", tt.jax, fw.Packages, fw.FindLinks, tt.pkg, tt.links)
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

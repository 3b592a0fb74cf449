package capture_test

import (
	"slices"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestCaptureDebianRootfs captures the hand-built environment laid over
// the Debian bookworm root file system the tests use (python3 and
// python3-venv installed by debootstrap), with libjansson4 installed by
// dpkg from the loopback apt repository's packages.
func TestCaptureDebianRootfs(t *testing.T) {
	testenv.Require(t, "unpacks the Debian fixture root file system and installs a package into it with dpkg --root", testenv.Slow, testenv.Root)
	root := t.TempDir()
	if err := testenv.HandBuiltRoot(t.Context(), root); err != nil {
		t.Fatal(err)
	}
	r := captureDir(t, root)
	s := r.Spec
	if !slices.Equal(s.Apt, []string{"libjansson4"}) {
		t.Errorf("apt: got %q, want [libjansson4]: debootstrap's base and Python's packages are not the user's", s.Apt)
	}
	if s.Torch != "2.6.0" || s.CUDA != "12.4" || s.Python != "3.11" || r.Facts.OS != "debian12" {
		t.Errorf("stack: torch %q cuda %q python %q os %q", s.Torch, s.CUDA, s.Python, r.Facts.OS)
	}
	if len(r.Facts.OSPackages) < 50 {
		t.Errorf("only %d OS packages read from a Debian root", len(r.Facts.OSPackages))
	}
	kinds := map[string]int{}
	for _, it := range s.Capture.Unreproducible {
		kinds[it.Kind]++
	}
	want := map[string]int{"pip-url": 1, "conda": 2, "cuda-runfile": 1, "unowned-file": 2, "secret-env": 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("unreproducible %s: %d, want %d (%v)", k, kinds[k], n, s.Capture.Unreproducible)
		}
	}
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capture of the Debian root:\n%s", y)
}

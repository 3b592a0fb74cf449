package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryDeps keeps the library packages free of CLI dependencies:
// only internal/cli and cmd/gpuimg may import cobra or pflag.
func TestLibraryDeps(t *testing.T) {
	for _, pkg := range []string{"../../matrix", "../../matrix/upstream", "../../builder", "../../validate", "../../images"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "spf13/cobra") || strings.Contains(dep, "spf13/pflag") {
				t.Errorf("%s depends on %s; library packages must not import CLI packages", pkg, dep)
			}
		}
	}
}

package sbom

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestTrivyReadsSBOM has trivy (an independent reader) list the packages
// of both formats: torch by its bare version, libc6 as a Debian package.
// trivy is not among make tools' pins (it takes about an hour to build on
// two cores); the test runs when bin/trivy exists and says so otherwise.
// trivy reads the packages without its vulnerability database
// (--skip-db-update --offline-scan), but still needs one on disk to
// start a scan: run `bin/trivy image --download-db-only` once.
func TestTrivyReadsSBOM(t *testing.T) {
	testenv.Require(t, "runs trivy on the SBOMs", testenv.Slow)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	trivy := filepath.Join(root, "bin", "trivy")
	if _, err := os.Stat(trivy); err != nil {
		t.Skipf("no %s: build it with GOBIN=%s go install github.com/aquasecurity/trivy/cmd/trivy@VERSION (about an hour on two cores; not in make tools)", trivy, filepath.Dir(trivy))
	}
	sub, inv := fixture()
	for _, f := range Formats {
		var buf bytes.Buffer
		must(t, Write(&buf, f, sub, inv))
		p := filepath.Join(t.TempDir(), "sbom.json")
		must(t, os.WriteFile(p, buf.Bytes(), 0o644))
		out, err := exec.CommandContext(t.Context(), trivy, "sbom", "--skip-db-update", "--offline-scan", "--list-all-pkgs", "--format", "json", "--quiet", p).Output()
		if err != nil {
			t.Fatalf("trivy sbom (%s): %v\n%s", f, err, out)
		}
		var res struct {
			Results []struct {
				Packages []struct{ Name, Version string }
			}
		}
		must(t, json.Unmarshal(out, &res))
		got := map[string]string{}
		for _, r := range res.Results {
			for _, p := range r.Packages {
				got[p.Name] = p.Version
			}
		}
		for name, version := range map[string]string{"torch": "2.3.1", "libc6": "2.36-9+deb12u7"} {
			if got[name] != version {
				t.Errorf("%s: trivy lists %s %q, want %s (all: %v)", f, name, got[name], version, got)
			}
		}
	}
}

package sbom

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// scanned is what bin/sbomread prints: the packages grype's SBOM
// provider and trivy's SBOM decoder read from one file
// (tools/sbomread, built by make tools).
type scanned struct {
	Grype       []scannedPackage `json:"grype"`
	GrypeDistro string           `json:"grype_distro"`
	Trivy       []scannedPackage `json:"trivy"`
}

type scannedPackage struct{ Name, Version, Type, PURL string }

// versions maps each package name to its version.
func versions(ps []scannedPackage) map[string]string {
	m := map[string]string{}
	for _, p := range ps {
		m[p.Name] = p.Version
	}
	return m
}

// scan has grype and trivy read sbom (bin/sbomread); it skips the test
// when the reader has not been built.
func scan(t *testing.T, sbom []byte) scanned {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	reader := filepath.Join(root, "bin", "sbomread")
	if _, err := os.Stat(reader); err != nil {
		t.Skipf("no %s: build it with make bin/sbomread (grype's and trivy's SBOM readers, tools/sbomread; a few minutes the first time)", reader)
	}
	p := filepath.Join(t.TempDir(), "sbom.json")
	must(t, os.WriteFile(p, sbom, 0o644))
	out, err := exec.CommandContext(t.Context(), reader, p).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("sbomread: %v\n%s", err, stderr)
	}
	var s scanned
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("sbomread output: %v\n%s", err, out)
	}
	return s
}

// TestScannersReadSBOM has grype and trivy (independent readers, their
// own code from the Go module proxy) read both formats: torch by its
// bare version, libc6 and libcudart11.0 as Debian packages. grype also
// lists the CUDA libraries found by file (pkg:generic/nvidia/…); trivy
// v0.74.0 drops every component whose purl type it has no scanner for,
// generic included, which docs/sbom.md says.
func TestScannersReadSBOM(t *testing.T) {
	sub, inv := fixture()
	for _, f := range Formats {
		var buf bytes.Buffer
		must(t, Write(&buf, f, sub, inv))
		s := scan(t, buf.Bytes())
		common := map[string]string{"torch": "2.3.1", "libc6": "2.36-9+deb12u7", "libcudart11.0": "11.8.89~11.8.0-5~deb12u1", "nvidia-cudnn-cu12": "8.9.2.26"}
		grype, trivy := versions(s.Grype), versions(s.Trivy)
		for name, v := range common {
			if grype[name] != v {
				t.Errorf("%s: grype reads %s %q, want %s (all: %v)", f, name, grype[name], v, grype)
			}
			if trivy[name] != v {
				t.Errorf("%s: trivy reads %s %q, want %s (all: %v)", f, name, trivy[name], v, trivy)
			}
		}
		for name, v := range map[string]string{"cudart": "11.8.89", "cublasLt": "11.11.3.6"} {
			if grype[name] != v {
				t.Errorf("%s: grype reads %s %q, want %s (all: %v)", f, name, grype[name], v, grype)
			}
		}
		if s.GrypeDistro != "debian 12" {
			t.Errorf("%s: grype reads the distro as %q, want debian 12", f, s.GrypeDistro)
		}
	}
}

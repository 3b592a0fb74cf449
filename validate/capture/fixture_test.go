package capture_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

const (
	fakeAWSKeyID  = testenv.FakeAWSKeyID
	fakeAWSSecret = testenv.FakeAWSSecret
	gitCommit     = testenv.HandBuiltGitCommit
)

// handBuilt lays testenv's hand-built environment over root.
func handBuilt(t *testing.T, root string) {
	t.Helper()
	if err := testenv.HandBuilt(root); err != nil {
		t.Fatal(err)
	}
}

// minimalDpkg writes a dpkg status with a required package, a manual
// one, and one apt installed as its dependency (extended_states).
func minimalDpkg(t *testing.T, root string) {
	t.Helper()
	status := `Package: base-files
Status: install ok installed
Priority: required
Essential: yes
Version: 12.4+deb12u5

Package: git
Status: install ok installed
Priority: optional
Version: 1:2.39.5-0+deb12u1
Depends: libc6 (>= 2.34), git-man (>> 1:2.39.5), git-man (<< 1:2.39.5-.)

Package: libexpat1
Status: install ok installed
Priority: optional
Version: 2.5.0-1+deb12u2

Package: git-man
Status: install ok installed
Priority: optional
Version: 1:2.39.5-0+deb12u1

Package: python3
Status: install ok installed
Priority: optional
Version: 3.11.2-1+b1
Pre-Depends: python3-minimal (= 3.11.2-1+b1)
Depends: python3.11 (>= 3.11.2-1~), libpython3-stdlib (= 3.11.2-1+b1), libexpat1:amd64 | libexpat1-udeb

Package: removed-one
Status: deinstall ok config-files
Priority: optional
Version: 1.0
`
	for p, c := range map[string]string{
		"var/lib/dpkg/status":            status,
		"var/lib/apt/extended_states":    "Package: git-man\nArchitecture: amd64\nAuto-Installed: 1\n",
		"var/lib/dpkg/info/git.list":     "/usr/bin/git\n/usr/local\n",
		"etc/os-release":                 "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
		"usr/lib/python3.11/os.py":       "# os\n",
		"usr/bin/python3.11":             "\x7fELF\n",
		"var/lib/dpkg/info/git-man.list": "/usr/share/man/man1/git.1.gz\n",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

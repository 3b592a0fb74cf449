package capture_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/capture"
)

// rpmTestdata is a real rpm database from go-rpmdb's testdata, in the
// module cache (go mod download puts it there; nothing is copied into
// this repository).
func rpmTestdata(t *testing.T, db string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", "github.com/knqyf263/go-rpmdb").Output()
	if err != nil {
		t.Fatalf("go mod download github.com/knqyf263/go-rpmdb: %v", err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download's answer %s: %v", out, err)
	}
	return filepath.Join(m.Dir, "pkg", "testdata", db)
}

// rpmRoot is a root file system with os-release and the rpm database
// file at dbPath.
func rpmRoot(t *testing.T, osRelease, src, dbPath string) string {
	t.Helper()
	root := t.TempDir()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string][]byte{"etc/os-release": []byte(osRelease), dbPath: b} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestCaptureRPM captures roots whose OS packages are in a real rpm
// database (Fedora 35's SQLite one, CentOS 7's Berkeley DB one, from
// go-rpmdb's testdata): every package is read with its epoch, version and
// release, the leaves go to dnf:, capture: says they need an RPM base,
// and gpuimg build refuses the capture on the Ubuntu base the matrix
// picks, naming the packages. A diff of the capture with its source is
// the same, and with the other root lists packages by name.
func TestCaptureRPM(t *testing.T) {
	tests := []struct {
		name, osRelease, db, path string
		min                       int
		has                       string // a package and its version
	}{
		{"fedora35 sqlite", "ID=fedora\nVERSION_ID=35\n", "fedora35/rpmdb.sqlite", "var/lib/rpm/rpmdb.sqlite", 100, "bash"},
		{"centos7 bdb", "ID=\"centos\"\nVERSION_ID=\"7\"\n", "centos7-plain/Packages", "var/lib/rpm/Packages", 100, "bash"},
	}
	roots := map[string]string{}
	for _, tt := range tests {
		roots[tt.name] = rpmRoot(t, tt.osRelease, rpmTestdata(t, tt.db), tt.path)
		t.Run(tt.name, func(t *testing.T) {
			root := roots[tt.name]
			r := captureDir(t, root)
			var rpms, manual int
			for _, p := range r.Facts.OSPackages {
				if p.Manager != "rpm" || p.Version == "" || !strings.Contains(p.Version, "-") {
					t.Errorf("package %+v: want manager rpm and VERSION-RELEASE", p)
				}
				rpms++
				if p.Manual {
					manual++
				}
			}
			if rpms < tt.min || manual == 0 || manual == rpms {
				t.Errorf("%d packages, %d manual: want at least %d, some manual and not all", rpms, manual, tt.min)
			}
			s := r.Spec
			if len(s.Apt) != 0 || len(s.Dnf) == 0 || slices.Contains(s.Dnf, "gpg-pubkey") {
				t.Errorf("apt %q dnf %q: want the leaves in dnf:", s.Apt, s.Dnf)
			}
			if !slices.ContainsFunc(s.Capture.Stack, func(n string) bool { return strings.Contains(n, "need an RPM base") }) {
				t.Errorf("capture.stack does not say dnf: needs an RPM base: %q", s.Capture.Stack)
			}
			y, err := s.YAML()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "env.yaml")
			if err := os.WriteFile(file, y, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := builder.LoadConfig(file)
			if err != nil {
				t.Fatalf("gpuimg build -f refuses the capture's YAML: %v", err)
			}
			if !slices.Equal(cfg.Dnf, s.Dnf) {
				t.Errorf("dnf: read back %q, want %q", cfg.Dnf, s.Dnf)
			}
			st, err := builtin(t).Resolve(builder.Constrain(mustConstraints(t, cfg), cfg.Extras, nil))
			if err != nil {
				t.Fatal(err)
			}
			_, err = builder.Dockerfile(builder.Definition{Stack: st, Base: "docker.io/" + st.BaseImage + "@sha256:" + strings.Repeat("1", 64), Extras: cfg.Extras})
			if !errors.Is(err, builder.ErrDnfNeedsRPMBase) || !strings.Contains(err.Error(), s.Dnf[0]) {
				t.Errorf("build of the capture on %s: err = %v, want ErrDnfNeedsRPMBase naming %s", st.OS, err, s.Dnf[0])
			}
			if d := capture.Diff(mustRead(t, file, y), r.Facts, capture.DiffOptions{}); !d.Same {
				t.Errorf("the capture differs from its source: %+v", d.Kinds)
			}
			t.Logf("%s: %d rpm packages, dnf: %q\n%s", tt.name, rpms, s.Dnf, y)
		})
	}
	a, b := captureDir(t, roots[tests[0].name]).Facts, captureDir(t, roots[tests[1].name]).Facts
	d := capture.Diff(a, b, capture.DiffOptions{})
	if d.Same || d.Kinds[0].Kind != capture.KindStack || !slices.ContainsFunc(d.Kinds, func(k capture.KindDiff) bool {
		return k.Kind == capture.KindOS && slices.ContainsFunc(k.Changes, func(c capture.Change) bool { return c.Name == "bash" && c.A != c.B })
	}) {
		t.Errorf("fedora35 against centos7: %+v", d.Kinds)
	}
}

func mustRead(t *testing.T, file string, b []byte) *capture.Facts {
	t.Helper()
	f, err := capture.ReadFile(file, b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustConstraints(t *testing.T, cfg *builder.Config) matrix.Constraints {
	t.Helper()
	c, err := cfg.Stack.Constraints()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

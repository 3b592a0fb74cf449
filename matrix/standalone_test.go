package matrix

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolvePythonSource: the resolver takes the OS's own Python where
// any candidate OS packages the minor asked for, and a standalone CPython
// only where none does; the stack says which, and why.
func TestResolvePythonSource(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    Constraints
		// kind is the Python source; os and version (standalone only)
		// what the stack has.
		kind, os, version string
	}{
		{"torch 2.7 on Python 3.13: no Ubuntu LTS with a torch 2.7 CUDA image packages it", Constraints{Torch: cons("2.7"), Python: MustConstraint("3.13")}, PythonStandalone, "ubuntu24.04", "3.13.15"},
		{"torch 2.7 on Python 3.12: noble's own", Constraints{Torch: cons("2.7"), Python: MustConstraint("3.12")}, PythonFromOS, "ubuntu24.04", ""},
		{"CUDA 12.1 on Python 3.12: Rocky Linux 9 packages it, preferred to a standalone on Ubuntu", Constraints{CUDA: MustConstraint("12.1"), Python: MustConstraint("3.12")}, PythonFromOS, "rockylinux9", ""},
		{"CUDA 12.1 on Python 3.12 on Ubuntu: standalone on jammy", Constraints{CUDA: MustConstraint("12.1"), Python: MustConstraint("3.12"), OS: "ubuntu"}, PythonStandalone, "ubuntu22.04", "3.12.14"},
		{"no --python: the OS's default", Constraints{Torch: cons("2.7")}, PythonFromOS, "ubuntu24.04", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := db.Resolve(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			ps := s.PythonSource
			if ps == nil || ps.Kind != tc.kind || s.OS != tc.os || ps.Version != tc.version {
				t.Fatalf("stack on %s, Python %s from %+v; want %s from %s %s", s.OS, s.Python, ps, tc.os, tc.kind, tc.version)
			}
			if !strings.Contains(strings.Join(s.Notes, "\n"), ps.Why) || ps.Why == "" {
				t.Errorf("notes %q do not say why: %q", s.Notes, ps.Why)
			}
			if tc.kind != PythonStandalone {
				if len(ps.Archives) != 0 {
					t.Errorf("an OS Python with archives: %+v", ps.Archives)
				}
				return
			}
			if _, ok := s.Sources["uv-download-metadata"]; !ok {
				t.Errorf("sources %v lack the standalone build's", s.Sources)
			}
			for _, pl := range []string{"linux/amd64", "linux/arm64", "linux/arm64/v8"} {
				a, ok := ps.Archive(pl)
				if !ok || !strings.HasPrefix(a.Name, "cpython-"+tc.version+"+"+ps.Release+"-") || len(a.SHA256) != 64 {
					t.Errorf("%s archive %+v %v", pl, a, ok)
				}
			}
			if !strings.Contains(ps.Why, "packages "+strings.Join(versionStrings(db, s.OS), ", ")) {
				t.Errorf("why %q does not name what %s packages", ps.Why, s.OS)
			}
		})
	}
}

func versionStrings(db *DB, osName string) []string {
	for _, o := range db.OS {
		if o.Name == osName {
			var out []string
			for _, v := range o.Pythons {
				out = append(out, v.String())
			}
			return out
		}
	}
	return nil
}

// TestResolveStandaloneRefused: a standalone Python must fit the
// frameworks and have an archive for every platform; otherwise the
// conflict says which.
func TestResolveStandaloneRefused(t *testing.T) {
	mf := filepath.Join(t.TempDir(), "amd64only.yaml")
	if err := os.WriteFile(mf, []byte(`sources:
  - id: test-pbs
    title: a test row
    url: https://example.com/
standalone_pythons:
  - version: "3.13.15"
    release: "20260814"
    source: test-pbs
    archives:
      - platform: linux/amd64
        name: cpython-3.13.15+20260814-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz
        sha256: aaca2af2ab4d7b68a712660d1334c0cfd5ec13c0312ccd30c29122d8d0342320
`), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Load(mf)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    Constraints
		want string
	}{
		{"no arm64 archive", Constraints{Torch: cons("2.7"), Python: MustConstraint("3.13"), Platforms: []string{"linux/arm64"}}, "has no archive for linux/arm64"},
		{"torch 2.7 takes no Python 3.8", Constraints{Torch: cons("2.7"), Python: MustConstraint("3.8")}, "torch 2.7.1 needs Python >=3.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := db.Resolve(tc.c)
			var ce *ConflictError
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.want) {
				t.Fatalf("stack on %s Python %s, err %v; want a conflict saying %q", s.OS, s.Python, err, tc.want)
			}
		})
	}
	if s, err := db.Resolve(Constraints{Torch: cons("2.7"), Python: MustConstraint("3.13"), Platforms: []string{"linux/amd64"}}); err != nil || s.PythonSource.Kind != PythonStandalone {
		t.Errorf("linux/amd64 only: %v %v", s.PythonSource, err)
	}
}

// TestStandaloneRows: standalone_pythons rows are checked as they load.
func TestStandaloneRows(t *testing.T) {
	const good = "cpython-3.13.15+20260814-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz"
	const sha = "aaca2af2ab4d7b68a712660d1334c0cfd5ec13c0312ccd30c29122d8d0342320"
	for _, tc := range []struct {
		name, version, release, platform, file, sha256, want string
	}{
		{"fine", "3.13.15", "20260814", "linux/amd64", good, sha, ""},
		{"minor only", "3.13", "20260814", "linux/amd64", good, sha, "version must be x.y.z"},
		{"release not a tag", "3.13.15", "2026-08-14", "linux/amd64", good, sha, "must be python-build-standalone's tag"},
		{"bad platform", "3.13.15", "20260814", "amd64", good, sha, `platform "amd64" must look like linux/amd64`},
		{"a URL for a name", "3.13.15", "20260814", "linux/amd64", "https://example.com/" + good, sha, "must be the release asset's file name"},
		{"short sha256", "3.13.15", "20260814", "linux/amd64", good, sha[:40], "must be 64 lowercase hex digits"},
		{"upper-case sha256", "3.13.15", "20260814", "linux/amd64", good, strings.ToUpper(sha), "must be 64 lowercase hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFile("t.yaml", []byte(`sources:
  - id: s
    title: t
    url: https://example.com/
standalone_pythons:
  - version: "`+tc.version+`"
    release: "`+tc.release+`"
    source: s
    archives:
      - platform: `+tc.platform+`
        name: `+tc.file+`
        sha256: `+tc.sha256+`
`))
			if err != nil {
				t.Fatal(err)
			}
			db, err := loadOnly(f)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("good row refused: %v", err)
			case tc.want == "" && len(db.StandalonePythons) != 1:
				t.Fatalf("rows %+v", db.StandalonePythons)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.yaml:6")):
				t.Fatalf("err %v, want one at t.yaml:6 saying %q", err, tc.want)
			}
		})
	}
}

func TestStandaloneArchiveURL(t *testing.T) {
	a := StandaloneArchive{Name: "cpython-3.13.15+20260814-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz"}
	for base, want := range map[string]string{
		StandalonePythonURL:                 "https://github.com/astral-sh/python-build-standalone/releases/download/20260814/cpython-3.13.15%2B20260814-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz",
		"http://127.0.0.1:8080/pbs/":        "http://127.0.0.1:8080/pbs/20260814/cpython-3.13.15%2B20260814-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz",
		"https://mirror.example.com/python": "https://mirror.example.com/python/20260814/cpython-3.13.15%2B20260814-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz",
	} {
		if got := a.URL(base, "20260814"); got != want {
			t.Errorf("URL(%s) = %s, want %s", base, got, want)
		}
	}
}

// TestBuiltinStandalonePythons: the built-in rows cover 3.8 to 3.14 on
// both platforms, each from its source, newest first.
func TestBuiltinStandalonePythons(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, minor := range []string{"3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"} {
		sp, ok := db.StandaloneFor(MustVersion(minor))
		if !ok || len(sp.Archives) != 2 || db.Sources[sp.Source].URL == "" {
			t.Errorf("%s: %+v %v", minor, sp, ok)
		}
	}
	for i := 1; i < len(db.StandalonePythons); i++ {
		if db.StandalonePythons[i-1].Version.Less(db.StandalonePythons[i].Version) {
			t.Errorf("not newest first: %s before %s", db.StandalonePythons[i-1].Version, db.StandalonePythons[i].Version)
		}
	}
}

package matrix

import (
	"errors"
	"strings"
	"testing"
)

// TestAptKeepsAptFamily: --apt names apt packages, so when gpuimg picks
// the OS it stays with apt; the stack the built-in data gives without
// --apt for these constraints is rockylinux9, and with --apt the error
// names it and the way to get it (on a matrix without standalone
// Pythons; with them, an Ubuntu image with a standalone Python fits). With
// --os the packages are that OS's.
func TestAptKeepsAptFamily(t *testing.T) {
	builtin, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	noStandalone := *builtin
	noStandalone.StandalonePythons = nil
	db := &noStandalone
	c := Constraints{CUDA: MustConstraint("12.4"), Torch: cons("2.5"), Python: MustConstraint("3.12")}
	plain, err := db.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	if PackageManager(plain.OS) == "apt" {
		t.Skipf("the data now gives %s without --apt; this case no longer exercises the rule", plain.OS)
	}
	c.Apt = []string{"libgl1"}
	_, err = db.Resolve(c)
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "no Ubuntu image fits; "+plain.OS+" does, but it installs packages with dnf and --apt libgl1 names apt packages") || !strings.Contains(ce.Reason, "give --os "+plain.OS) {
		t.Fatalf("--apt libgl1: err %v, want a conflict naming %s and --os", err, plain.OS)
	}
	for _, a := range ce.Alternatives {
		if PackageManager(a.Stack.OS) != "apt" {
			t.Errorf("alternative (without %v) is on %s, not an apt OS", a.Dropped, a.Stack.OS)
		}
	}
	if s, err := builtin.Resolve(c); err != nil || PackageManager(s.OS) != "apt" || s.PythonSource == nil || s.PythonSource.Kind != PythonStandalone {
		t.Errorf("--apt libgl1 with standalone Pythons: %s %+v %v, want an apt OS with a standalone Python", s.OS, s.PythonSource, err)
	}
	c.OS = plain.OS
	if s, err := db.Resolve(c); err != nil || s.OS != plain.OS {
		t.Errorf("--os %s --apt libgl1: %v %v, want %s (its packages are dnf names then)", plain.OS, s.OS, err, plain.OS)
	}
	// Where an apt OS fits, --apt changes nothing.
	c = Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3"), Apt: []string{"git"}}
	if s, err := db.Resolve(c); err != nil || PackageManager(s.OS) != "apt" {
		t.Errorf("--cuda 12.2 --torch 2.3 --apt git: %s %v", s.OS, err)
	}
}

func TestPackageManager(t *testing.T) {
	for name, want := range map[string]string{"ubuntu22.04": "apt", "ubuntu24.04": "apt", "rockylinux8": "dnf", "rockylinux9": "dnf", "ubi8": "dnf", "ubi9": "dnf", "alpine": ""} {
		if got := PackageManager(name); got != want {
			t.Errorf("PackageManager(%s) = %q, want %q", name, got, want)
		}
	}
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range db.OS {
		if PackageManager(o.Name) == "" {
			t.Errorf("OS %s has no package manager", o.Name)
		}
	}
}

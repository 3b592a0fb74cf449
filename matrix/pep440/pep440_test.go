package pep440

import (
	"testing"
	"time"
)

// TestOrderBeyond32Bits: numbers above 2^32 order as numbers (the matrix's
// own version type once read dev5000000000 as dev0).
func TestOrderBeyond32Bits(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"2.5.0.dev5000000000", "2.5.0.dev1", 1},
		{"2.5.0rc5000000000", "2.5.0rc4999999999", 1},
		{"1!0.1", "2026.12", 1},
		{"2.3.1+cu121", "2.3.1", 1},
		{"8.9.2.26", "8.9.2.3", 1},
		{"535.104.05", "535.104.5", 0},
		{"1.0.post1", "1.0", 1},
		{"18446744073709551615", "18446744073709551614", 1},
	} {
		a, b := MustParse(c.a), MustParse(c.b)
		if got := a.Compare(b); got != c.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if _, err := Parse("18446744073709551616"); err == nil {
		t.Error("a number above 2^64-1 parsed; it must be refused (see testdata/README.md)")
	}
}

func TestParseSpecifiers(t *testing.T) {
	for _, c := range []struct {
		in      string
		ok      bool
		version string
		want    bool
	}{
		{">=3.9, <3.14", true, "3.13.1", true},
		{">=3.9,<3.14", true, "3.14.0", false},
		{"", true, "3.10", true},
		{"==2.3.*", true, "2.3.1+cu121", true},
		{"~=2.3", true, "3.0", false},
		{">=2.3 || <1", false, "", false}, // Masterminds syntax is not PEP 440
		{"2.3", false, "", false},
		{">=3.9 <3.14", false, "", false}, // clauses need commas
		{"===2.3.1+cu121", true, "2.3.1+CU121", true},
	} {
		ss, err := ParseSpecifiers(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseSpecifiers(%q) error = %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if c.ok && ss.ContainsString(c.version) != c.want {
			t.Errorf("%q contains %q = %v, want %v", c.in, c.version, !c.want, c.want)
		}
	}
}

func TestIsFinal(t *testing.T) {
	for s, want := range map[string]bool{"2.7.1": true, "2.7.1+cu128": true, "1!2.0": true, "2.8.0rc1": false, "2.8.0.dev20250101": false, "1.0.post1": false} {
		if got := MustParse(s).IsFinal(); got != want {
			t.Errorf("IsFinal(%s) = %v, want %v", s, got, want)
		}
	}
}

// FuzzParseSpecifiers: specifier sets and versions from package indexes;
// what parses reads back from its String to the same answer, a version
// round-trips through its normalized form, and the cost is linear in the
// input (2 s + 20 µs a byte).
func FuzzParseSpecifiers(f *testing.F) {
	for _, s := range []string{">=3.9, <3.14", "==2.3.*", "~=2.2.post3", "===foobar", "!=1!2.0.*", ">1.0.dev1", "<=2.0a1"} {
		f.Add(s, "2.3.1+cu121")
	}
	f.Fuzz(func(t *testing.T, spec, version string) {
		start := time.Now()
		if ss, err := ParseSpecifiers(spec); err == nil {
			again, err := ParseSpecifiers(ss.String())
			if err != nil || again.ContainsString(version) != ss.ContainsString(version) {
				t.Fatalf("%q and its String %q disagree on %q (%v)", spec, ss.String(), version, err)
			}
		}
		if v, err := Parse(version); err == nil {
			w, err := Parse(v.String())
			if err != nil || w.Compare(v) != 0 || w.String() != v.String() {
				t.Fatalf("version %q does not round-trip through %q: %v", version, v.String(), err)
			}
		}
		if took, limit := time.Since(start), 2*time.Second+time.Duration(len(spec)+len(version))*20*time.Microsecond; took > limit {
			t.Fatalf("%d bytes took %v (limit %v)", len(spec)+len(version), took, limit)
		}
	})
}

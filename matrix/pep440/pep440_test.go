package pep440

import "testing"

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

package matrix

import (
	"strings"
	"testing"
)

func TestConstraintCheck(t *testing.T) {
	tests := []struct {
		c       string
		match   []string
		nomatch []string
	}{
		{"12", []string{"12.0.0", "12.2.2", "12.9.1"}, []string{"11.8.0", "13.0.0", "1.2"}},
		{"12.2", []string{"12.2.0", "12.2.2"}, []string{"12.20.0", "12.1.1", "12.3.0"}},
		{"12.x", []string{"12.4.1"}, []string{"13.0.0"}},
		{"2.3.*", []string{"2.3.1"}, []string{"2.4.0"}},
		{"==12.2.2", []string{"12.2.2"}, []string{"12.2.1", "12.2.20"}},
		{"=2.3", []string{"2.3.0", "2.3.1"}, []string{"2.4.0"}},
		{"!=2.4", []string{"2.3.1", "2.5.0"}, []string{"2.4.0", "2.4.1"}},
		{">=2.3,<2.5", []string{"2.3.0", "2.4.1"}, []string{"2.2.2", "2.5.0", "2.5.1"}},
		{">= 2.3, < 2.5", []string{"2.3.0", "2.4.1"}, []string{"2.5.0"}},
		{">=2.3 <2.5", []string{"2.4.0"}, []string{"2.5.0"}},
		{">2.3", []string{"2.4.0", "3.0"}, []string{"2.3.0", "2.3.9", "2.2"}},
		{">8.9.2", []string{"8.9.3", "9.0"}, []string{"8.9.2.26", "8.9.2"}},
		{"<=12.4", []string{"12.4.1", "12.0.0", "11.8.0"}, []string{"12.5.0"}},
		{"<12.4", []string{"12.3.2"}, []string{"12.4.0", "12.4.1"}},
		{"~2.3", []string{"2.3.0", "2.3.9"}, []string{"2.4.0", "2.2.9"}},
		{"~2.3.1", []string{"2.3.1", "2.3.5"}, []string{"2.3.0", "2.4.0"}},
		{"~2", []string{"2.0", "2.14.1"}, []string{"3.0", "1.13.1"}},
		{"~=2.3", []string{"2.3.0", "2.9.9"}, []string{"3.0.0", "2.2"}},
		{"~=2.3.1", []string{"2.3.1", "2.3.9"}, []string{"2.4.0", "2.3.0"}},
		{"^2.3", []string{"2.3.0", "2.99"}, []string{"3.0", "2.2"}},
		{"^0.4.26", []string{"0.4.26", "0.4.38"}, []string{"0.5.0", "0.4.25"}},
		{"^0.0.3", []string{"0.0.3"}, []string{"0.0.4"}},
		{"*", []string{"0", "99.99"}, nil},
		{">=11.0,<11.9 || >=12.0,<12.3", []string{"11.8.0", "12.2.2"}, []string{"11.9", "12.3.0", "10.2"}},
		{"11.8 || 12", []string{"11.8.0", "12.6.3"}, []string{"11.7.1", "13.0.0"}},
		{">=3.8,<3.13", []string{"3.8", "3.12"}, []string{"3.13", "3.7"}},
		// The library's syntax beyond what gpuimg read before.
		{">=12.x", []string{"12.0", "13.1"}, []string{"11.8"}}, // documented: >= 1.2.x is >= 1.2.0
		{"=> 2.3", []string{"2.3.0", "3.0"}, []string{"2.2.9"}},
		{"^2", []string{"2.0", "2.99.1"}, []string{"1.9", "3.0"}},
		{"~> 2.3", []string{"2.3.5"}, []string{"2.4.0"}},
		{"2.3 - 2.5", []string{"2.3.0", "2.5.9"}, []string{"2.2.9", "2.6.0"}},
		{"11.8 - 12.4 || 13", []string{"11.8.0", "12.4.1", "13.0"}, []string{"11.7.1", "12.5.0"}},
		{"v12.x", []string{"12.4"}, []string{"13.0"}},
		{"2.x || 12", []string{"2.9", "12.1"}, []string{"3.0", "11.8"}},
		// Four-part builds: the library checks three parts, the adapter the fourth.
		{">=8.9.2.26", []string{"8.9.2.26", "8.9.2.30", "8.9.3", "9.0"}, []string{"8.9.2.25", "8.9.2", "8.9.1.99"}},
		{">8.9.2.26", []string{"8.9.2.27", "8.9.3"}, []string{"8.9.2.26", "8.9.2"}},
		{"<8.9.2.26", []string{"8.9.2.25", "8.9.2", "8.8"}, []string{"8.9.2.26", "8.9.3"}},
		{"<=8.9.2.26", []string{"8.9.2.26", "8.9.1.99"}, []string{"8.9.2.27", "8.9.3"}},
		{"8.9.2.26", []string{"8.9.2.26"}, []string{"8.9.2.25", "8.9.2", "8.9.3.26"}},
		{"==8.9.2.26", []string{"8.9.2.26"}, []string{"8.9.2.27"}},
		{"!=8.9.2.26", []string{"8.9.2.25", "8.9.3", "9"}, []string{"8.9.2.26", "9.0.0rc1"}},
		{"~8.9.2.26", []string{"8.9.2.26", "8.9.7.29"}, []string{"8.9.2.25", "8.10.0"}},
		{"^8.9.2.26", []string{"8.9.2.26", "8.10.1"}, []string{"8.9.2.25", "9.0"}},
		{"~=8.9.2.26", []string{"8.9.2.26", "8.9.2.99"}, []string{"8.9.2.25", "8.9.3"}},
		{"8.9.2.x", []string{"8.9.2", "8.9.2.26"}, []string{"8.9.3.1"}},
		{"8.9.2.20 - 8.9.2.30", []string{"8.9.2.25", "8.9.2.30"}, []string{"8.9.2.19", "8.9.2.31"}},
		// pip's spellings.
		{"~=0.4", []string{"0.4.0", "0.9"}, []string{"1.0", "0.3.9"}},
		{"== 2.3", []string{"2.3.1"}, []string{"2.4"}},
		// PEP 440 pre-releases match only a group that names one.
		{"2.5", []string{"2.5.0", "2.5.1"}, []string{"2.5.0rc1", "2.5.1.dev3"}},
		{"*", []string{"2.5.0"}, []string{"2.5.0rc1"}},
		{"~=2.3", []string{"2.4.0"}, []string{"2.4.0rc1"}},
		{">=2.5.0rc1", []string{"2.5.0rc1", "2.5.0rc2", "2.5.0", "2.6"}, []string{"2.5.0b3", "2.5.0.dev20240801", "2.4.9"}},
		{">=2.5.0a1,<2.5.0", []string{"2.5.0a1", "2.5.0b1", "2.5.0rc9"}, []string{"2.5.0", "2.5.0.dev1"}},
		{">=2.5.0.dev2", []string{"2.5.0.dev5000000000", "2.5.0"}, []string{"2.5.0.dev1"}}, // above 2^32 (issue 43)
		{"~=2.5.0rc1", []string{"2.5.0rc1", "2.5.0", "2.5.3"}, []string{"2.6.0rc1", "2.6.0", "2.5.0b1"}},
		{"2.5.0rc1", []string{"2.5.0rc1", "2.5.0-rc.1", "2.5.0RC1"}, []string{"2.5.0rc2", "2.5.0"}},
		// Versions may carry a local label; the order ignores it.
		{">=2.3,<2.4", []string{"2.3.1+cu121"}, []string{"2.4.0+cpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.c, func(t *testing.T) {
			c, err := ParseConstraint(tt.c)
			if err != nil {
				t.Fatalf("ParseConstraint(%q): %v", tt.c, err)
			}
			for _, v := range tt.match {
				if !c.Check(MustVersion(v)) {
					t.Errorf("%q should match %s", tt.c, v)
				}
			}
			for _, v := range tt.nomatch {
				if c.Check(MustVersion(v)) {
					t.Errorf("%q should not match %s", tt.c, v)
				}
			}
		})
	}
}

func TestConstraintErrors(t *testing.T) {
	tests := map[string]string{
		"":            "empty",
		"||":          "empty alternative",
		"12 ||":       "empty alternative",
		">=":          "empty version",
		">=abc":       "not a number",
		"~=2":         "at least two parts",
		"<*":          "wildcard",
		">=*":         "wildcard",
		"~=2.x":       "no wildcard",
		"2.3.1+cu1":   "local label",
		"==2.3+cpu":   "local label",
		",":           "empty term",
		"- 2.5":       "hyphen range",
		"2.3 -":       "hyphen range",
		">=2 - 3":     "bare versions",
		"2.3.x.1":     "not a number",
		"2.5rc1.x":    "plain numbers",
		"1.2.3.4.x":   "at most 4",
		"8.9.2.26rc1": "at most three parts",
		"1.0.post1":   "not a number",
	}
	for in, want := range tests {
		_, err := ParseConstraint(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConstraint(%q) error = %v, want it to mention %q", in, err, want)
		}
	}
}

func TestZeroConstraintMatchesAll(t *testing.T) {
	var c Constraint
	if !c.Check(MustVersion("1.2.3")) || !c.IsZero() || c.String() != "*" {
		t.Fatal("zero Constraint must match everything and print as *")
	}
}

// FuzzParseConstraint checks that parsing never panics, that what parses
// prints back unchanged and parses again to the same meaning, and that a
// version parsed from the same input round-trips.
func FuzzParseConstraint(f *testing.F) {
	for _, s := range []string{"12", "12.2.2", ">=2.3,<2.5", "~=2.3", "^0.4", "!=2.4", "11.8 || 12", "<=12.4", "*", "12.x", ">= 3.8, < 3.13", "535.104.05", "8.9.2.26", "~=8.9.2.26", "2.5.0rc1", "2.3.1+cu121", "2.3 - 2.5", "^2", ">=2.5.0.dev1"} {
		f.Add(s, "12.2.2")
	}
	f.Fuzz(func(t *testing.T, s, vs string) {
		c, err := ParseConstraint(s)
		if err == nil {
			c2, err := ParseConstraint(c.String())
			if err != nil {
				t.Fatalf("%q parsed but its String %q does not: %v", s, c.String(), err)
			}
			if v, err := ParseVersion(vs); err == nil && c.Check(v) != c2.Check(v) {
				t.Fatalf("%q and its reparse disagree on %s", s, vs)
			}
		}
		v, err := ParseVersion(s)
		if err == nil {
			w, err := ParseVersion(v.String())
			if err != nil || w.Compare(v) != 0 {
				t.Fatalf("version %q does not round-trip: %v", s, err)
			}
			c, err := ParseConstraint(v.String())
			switch {
			case strings.Contains(v.String(), "+"):
				// A local label names a build; constraints refuse it.
				if err == nil || !strings.Contains(err.Error(), "local label") {
					t.Fatalf("version %q with a local label parsed as a constraint (%v)", s, err)
				}
			case err != nil:
				t.Fatalf("version %q does not parse as a constraint: %v", s, err)
			case !c.Check(v):
				t.Fatalf("version %q does not match itself as a constraint", s)
			}
			if same := v; v.Compare(same) != 0 {
				t.Fatalf("version %q does not equal itself", s)
			}
		}
	})
}

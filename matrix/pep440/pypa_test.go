package pep440

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// pypa holds pypa/packaging's own test tables, vendored by
// testdata/extract_pypa.py (see testdata/README.md for the commit).
type pypa struct {
	Commit  string `json:"commit"`
	Version struct {
		Ordered       []string    `json:"ordered"`
		Invalid       []string    `json:"invalid"`
		Normalized    [][2]string `json:"normalized"`
		Public        [][2]string `json:"public"`
		BaseVersion   [][2]string `json:"base_version"`
		Local         [][]any     `json:"local"`
		IsPreRelease  [][]any     `json:"is_prerelease"`
		IsDevRelease  [][]any     `json:"is_devrelease"`
		IsPostRelease [][]any     `json:"is_postrelease"`
	} `json:"version"`
	Specifier struct {
		Contains      [][]any  `json:"contains"`
		Valid         []string `json:"valid"`
		Invalid       []string `json:"invalid"`
		Prereleases   [][]any  `json:"prereleases"`
		Arbitrary     [][]any  `json:"arbitrary"`
		ArbitraryNorm [][]any  `json:"arbitrary_normalization"`
	} `json:"specifier"`
	SpecifierSet struct {
		Arbitrary           [][]any `json:"arbitrary"`
		ExclusionaryBridges [][]any `json:"exclusionary_bridges"`
		PostReleaseBoundary [][]any `json:"post_release_boundary"`
	} `json:"specifier_set"`
}

func loadPypa(t *testing.T) pypa {
	t.Helper()
	b, err := os.ReadFile("testdata/pypa-packaging.json")
	if err != nil {
		t.Fatal(err)
	}
	var p pypa
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("testdata/pypa-packaging.json: %v", err)
	}
	if p.Commit == "" || len(p.Version.Ordered) == 0 || len(p.Specifier.Contains) == 0 {
		t.Fatal("testdata/pypa-packaging.json lacks its commit or tables")
	}
	return p
}

// item is a table's version: a string, or {"version": "1.1"} where the
// test passed a packaging Version object (compared in its normalized form).
func item(x any) string {
	if m, ok := x.(map[string]any); ok {
		return m["version"].(string)
	}
	return x.(string)
}

// known lists the cases of pypa/packaging's tables gpuimg answers
// differently, each with the reason. A listed case that starts to agree
// fails the test, so the list stays true.
var known = map[string]string{}

// check reports a case: it must agree with packaging unless known lists it.
func check(t *testing.T, id string, got, want any) {
	t.Helper()
	agree := fmt.Sprint(got) == fmt.Sprint(want)
	reason, listed := known[id]
	switch {
	case listed && agree:
		t.Errorf("%s: now agrees with pypa/packaging; remove it from known (%s)", id, reason)
	case !listed && !agree:
		t.Errorf("%s: got %v, pypa/packaging says %v", id, got, want)
	}
}

func TestPypaVersionOrder(t *testing.T) {
	p := loadPypa(t)
	vs := make([]Version, len(p.Version.Ordered))
	for i, s := range p.Version.Ordered {
		v, err := Parse(s)
		if err != nil {
			t.Fatalf("valid version %q: %v", s, err)
		}
		vs[i] = v
	}
	for i := range vs {
		for j := range vs {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			check(t, fmt.Sprintf("order %s %s", vs[i].Original(), vs[j].Original()), vs[i].Compare(vs[j]), want)
		}
	}
}

func TestPypaVersionInvalid(t *testing.T) {
	p := loadPypa(t)
	for _, s := range p.Version.Invalid {
		_, err := Parse(s)
		check(t, "invalid version "+s, err != nil, true)
	}
}

func TestPypaVersionParts(t *testing.T) {
	p := loadPypa(t)
	for _, c := range p.Version.Normalized {
		check(t, "normalized "+c[0], mustParse(t, c[0]).String(), c[1])
	}
	for _, c := range p.Version.Public {
		check(t, "public "+c[0], mustParse(t, c[0]).Public(), c[1])
	}
	for _, c := range p.Version.BaseVersion {
		check(t, "base_version "+c[0], mustParse(t, c[0]).BaseVersion(), c[1])
	}
	for _, c := range p.Version.Local {
		want := ""
		if c[1] != nil {
			want = c[1].(string)
		}
		check(t, "local "+c[0].(string), mustParse(t, c[0].(string)).Local(), want)
	}
	for _, c := range p.Version.IsPreRelease {
		check(t, "is_prerelease "+c[0].(string), mustParse(t, c[0].(string)).IsPreRelease(), c[1])
	}
	for _, c := range p.Version.IsDevRelease {
		check(t, "is_devrelease "+c[0].(string), mustParse(t, c[0].(string)).IsDevRelease(), c[1])
	}
	for _, c := range p.Version.IsPostRelease {
		check(t, "is_postrelease "+c[0].(string), mustParse(t, c[0].(string)).IsPostRelease(), c[1])
	}
}

func TestPypaSpecifierValidity(t *testing.T) {
	p := loadPypa(t)
	for _, s := range p.Specifier.Valid {
		_, err := ParseSpecifier(s)
		check(t, "valid specifier "+s, err, nil)
	}
	for _, s := range p.Specifier.Invalid {
		_, err := ParseSpecifier(s)
		check(t, "invalid specifier "+s, err != nil, true)
	}
}

func TestPypaSpecifierContains(t *testing.T) {
	p := loadPypa(t)
	for _, c := range p.Specifier.Contains { // version, specifier, expected
		s, err := ParseSpecifier(c[1].(string))
		if err != nil {
			t.Errorf("specifier %q: %v", c[1], err)
			continue
		}
		check(t, fmt.Sprintf("%s in %s", c[0], c[1]), s.ContainsString(c[0].(string)), c[2])
	}
	for _, c := range p.Specifier.Prereleases { // specifier, version, spec_pre, contains_pre, expected
		if c[2] != nil || c[3] != nil {
			continue // gpuimg never sets the prereleases switch
		}
		s, err := ParseSpecifier(c[0].(string))
		if err != nil {
			t.Errorf("specifier %q: %v", c[0], err)
			continue
		}
		check(t, fmt.Sprintf("%s in %s", c[1], c[0]), s.ContainsString(c[1].(string)), c[4])
	}
	for _, c := range p.Specifier.Arbitrary { // version, specifier, expected
		s := mustSpecifier(t, c[1].(string))
		check(t, fmt.Sprintf("%s in %s", c[0], c[1]), s.ContainsString(c[0].(string)), c[2])
	}
	for _, c := range p.Specifier.ArbitraryNorm { // specifier, version, expected
		s := mustSpecifier(t, c[0].(string))
		check(t, fmt.Sprintf("%v in %s", c[1], c[0]), s.ContainsString(item(c[1])), c[2])
	}
}

func TestPypaSpecifierSetContains(t *testing.T) {
	p := loadPypa(t)
	run := func(spec, version any, want any) {
		ss, err := ParseSpecifiers(spec.(string))
		if err != nil {
			t.Errorf("specifier set %q: %v", spec, err)
			return
		}
		check(t, fmt.Sprintf("%v in set %s", version, spec), ss.ContainsString(item(version)), want)
	}
	for _, c := range p.SpecifierSet.Arbitrary { // version, set, expected
		run(c[1], c[0], c[2])
	}
	for _, c := range p.SpecifierSet.ExclusionaryBridges { // set, prereleases, version, expected
		if c[1] == nil {
			run(c[0], c[2], c[3])
		}
	}
	for _, c := range p.SpecifierSet.PostReleaseBoundary { // set, version, expected
		run(c[0], c[1], c[2])
	}
}

func mustSpecifier(t *testing.T, s string) Specifier {
	t.Helper()
	c, err := ParseSpecifier(s)
	if err != nil {
		t.Fatalf("specifier %q: %v", s, err)
	}
	return c
}

func mustParse(t *testing.T, s string) Version {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Errorf("valid version %q: %v", s, err)
	}
	return v
}

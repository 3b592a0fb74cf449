package pep508

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// pypaMarkers holds pypa/packaging's tests/test_markers.py tables,
// vendored in ../pep440/testdata (see its README for the commit).
type pypaMarkers struct {
	Marker struct {
		Valid               []string `json:"valid"`
		Invalid             []string `json:"invalid"`
		Evaluates           [][]any  `json:"evaluates"`
		VersionLikeEquality [][]any  `json:"version_like_equality"`
	} `json:"marker"`
}

func loadPypa(t *testing.T) pypaMarkers {
	t.Helper()
	b, err := os.ReadFile("../pep440/testdata/pypa-packaging.json")
	if err != nil {
		t.Fatal(err)
	}
	var p pypaMarkers
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Marker.Valid) == 0 || len(p.Marker.Evaluates) == 0 {
		t.Fatal("no marker tables in the vendored data")
	}
	return p
}

// hostEnv stands for packaging's default_environment() on the Linux host
// its tables assume (os_name "posix"), with extra "" as Marker.evaluate
// sets it.
func hostEnv() Env { return LinuxEnv("x86_64", "3.12.4").With("extra", "") }

// envOf is hostEnv with a table's overrides.
func envOf(x any) Env {
	e := hostEnv()
	if m, ok := x.(map[string]any); ok {
		for k, v := range m {
			e = e.With(k, v.(string))
		}
	}
	return e
}

func TestPypaMarkerParse(t *testing.T) {
	p := loadPypa(t)
	for _, s := range p.Marker.Valid {
		if _, err := ParseMarker(s); err != nil {
			t.Errorf("valid marker: %v", err)
		}
	}
	for _, s := range p.Marker.Invalid {
		if _, err := ParseMarker(s); err == nil {
			t.Errorf("invalid marker %q parsed", s)
		}
	}
}

func TestPypaMarkerEvaluate(t *testing.T) {
	p := loadPypa(t)
	cases := append(append([][]any{}, p.Marker.Evaluates...), p.Marker.VersionLikeEquality...)
	for _, c := range cases { // marker, environment overrides, expected
		m, err := ParseMarker(c[0].(string))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		got, err := m.Evaluate(envOf(c[1]))
		if err != nil || got != c[2].(bool) {
			t.Errorf("%s with %v = %v, %v; pypa/packaging says %v", c[0], c[1], got, err, c[2])
		}
	}
}

// TestPypaMarkerOperatorEvaluation is test_markers.py's TestOperatorEvaluation,
// written out (its cases are asserts, not a table).
func TestPypaMarkerOperatorEvaluation(t *testing.T) {
	for _, c := range []struct {
		marker string
		env    map[string]any
		want   bool
		err    bool
	}{
		{`"2.7.9" < python_full_version`, map[string]any{"python_full_version": "2.7.10"}, true, false},
		{`"2.7.9" < python_full_version`, map[string]any{"python_full_version": "2.7.8"}, false, false},
		{`"b" < python_full_version`, map[string]any{"python_full_version": "c"}, false, false},
		{`"b" < python_full_version`, map[string]any{"python_full_version": "a"}, false, false},
		{`'2.7.0' ~= os_name`, nil, false, true},
		{`os_name === 'posix'`, nil, false, true},
		{`sys_platform === 'linux'`, nil, false, true},
		{`python_full_version > "3.6.2"`, map[string]any{"python_full_version": "3.11.0a5"}, true, false},
	} {
		got, err := mustMarker(t, c.marker).Evaluate(envOf(c.env))
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s with %v = %v, %v; want %v, error %v", c.marker, c.env, got, err, c.want, c.err)
		}
	}
}

func mustMarker(t *testing.T, s string) Marker {
	t.Helper()
	m, err := ParseMarker(s)
	if err != nil {
		t.Fatal(fmt.Errorf("parse: %w", err))
	}
	return m
}

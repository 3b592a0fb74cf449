package upstream

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestWheelNamePypa runs pypa/packaging's parse_wheel_filename tables
// (tests/test_utils.py), vendored in matrix/pep440/testdata with their
// commit.
func TestWheelNamePypa(t *testing.T) {
	b, err := os.ReadFile("../../matrix/pep440/testdata/pypa-packaging.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Wheel struct {
			Valid   [][]any  `json:"valid"` // filename, name, {"version"}, build, tags
			Invalid []string `json:"invalid"`
		} `json:"wheel_filename"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Wheel.Valid) == 0 || len(p.Wheel.Invalid) == 0 {
		t.Fatal("no wheel_filename tables in the vendored data")
	}
	for _, c := range p.Wheel.Valid {
		name := c[0].(string)
		w, err := parseWheelName(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		version := c[2].(map[string]any)["version"].(string)
		build := ""
		if bt := c[3].([]any); len(bt) == 2 {
			build = jsonNumber(bt[0]) + bt[1].(string)
		}
		if w.Dist != c[1].(string) || w.PEP440.String() != version || w.Build != build {
			t.Errorf("%s: got name %q version %q build %q, packaging says %v %s %v", name, w.Dist, w.PEP440, w.Build, c[1], version, c[3])
		}
	}
	for _, name := range p.Wheel.Invalid {
		if w, err := parseWheelName(name); err == nil {
			t.Errorf("%q parsed as %+v; packaging refuses it", name, w)
		}
	}
}

func jsonNumber(x any) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// TestWheelNameSpec: names the binary distribution format allows that
// gpuimg once refused (issue 43), and names it must refuse.
func TestWheelNameSpec(t *testing.T) {
	for _, c := range []struct {
		name, dist, version, local string
		ok                         bool
	}{
		{"torch-1!2.7.1+cu128-cp312-cp312-manylinux_2_28_x86_64.whl", "torch", "1!2.7.1", "cu128", true},
		{"café_ml-1.0-py3-none-any.whl", "café-ml", "1.0", "", true},
		{"Torch-2.7.1.post2-cp312-cp312-linux_x86_64.whl", "torch", "2.7.1.post2", "", true},
		{"torch-2.7.1-1-cp312-cp312-linux_aarch64.whl", "torch", "2.7.1", "", true},
		{"torch-2.7.1-cp312-cp312-.whl", "", "", "", false},
		{"torch-2..7-cp312-cp312-linux_x86_64.whl", "", "", "", false},
		{"tor ch-2.7-cp312-cp312-linux_x86_64.whl", "", "", "", false},
		{strings.Repeat("a", 300) + "-1.0-py3-none-any.whl", "", "", "", false},
	} {
		w, err := parseWheelName(c.name)
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok %v", c.name, err, c.ok)
			continue
		}
		if c.ok && (w.Dist != c.dist || w.Version != c.version || w.Local != c.local) {
			t.Errorf("%s: got %q %q %q", c.name, w.Dist, w.Version, w.Local)
		}
	}
}

// TestSimplePageSkipsBadName: one malformed wheel name is skipped and
// named; the page's other wheels are still read (issue 43: it failed the
// whole page).
func TestSimplePageSkipsBadName(t *testing.T) {
	page := `<a href="torch-2.7.1%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl">a</a>
<a href="torch-1%212.7.1%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl">epoch</a>
<a href="caf%C3%A9_ml-1.0-py3-none-any.whl">unicode</a>
<a href="torch-2.7.1-cp312-.whl">bad</a>`
	ws, skipped, err := parseSimplePage("https://download.example/whl/torch/", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.Dist+" "+w.Version)
	}
	if want := []string{"torch 2.7.1", "torch 1!2.7.1", "café-ml 1.0"}; !slices.Equal(names, want) {
		t.Errorf("wheels %q, want %q", names, want)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "torch-2.7.1-cp312-.whl") {
		t.Errorf("skipped %q, want the one malformed link", skipped)
	}
	if _, _, err := parseSimplePage("https://download.example/whl/torch/", []byte(`<a href="x-.whl">x</a>`)); err == nil {
		t.Error("a page whose only wheel link is malformed was read as a project page")
	}
}

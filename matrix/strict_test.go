package matrix

import (
	"errors"
	"strings"
	"testing"
)

func TestOneDocument(t *testing.T) {
	tests := []struct {
		yaml, err string
	}{
		{"", ""},
		{"a: 1\n", ""},
		{"---\na: 1\n", ""},
		{"a: 1\n---\n", ""},
		{"a: 1\n...\n", ""},
		{"# only a comment\n---\n# and another\n", ""},
		{"a: 1\n---\nb: 2\n", "f.yaml: line 3: a second YAML document (after ---)"},
		{"---\n---\na: 1\n---\n\nb: 2\n", "f.yaml: line 6: a second YAML document"},
		{"a: [\n", "f.yaml: "},
	}
	for _, tt := range tests {
		err := OneDocument("f.yaml", []byte(tt.yaml))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)) {
			t.Errorf("OneDocument(%q) = %v, want %q", tt.yaml, err, tt.err)
		}
	}
}

// TestDecodeStrictProblems: publish.yaml and the other files read through
// DecodeStrict get every problem, one a line, and the second-document
// error.
func TestDecodeStrictProblems(t *testing.T) {
	type inner struct {
		N int `yaml:"n"`
	}
	type file struct {
		Name  string  `yaml:"name"`
		Rows  []inner `yaml:"rows"`
		Ratio float64 `yaml:"ratio"`
	}
	var f file
	err := DecodeStrict("p.yaml", []byte("name: [x]\nrows:\n  - n: many\n  - m: 1\nratio: high\nextra: 1\n"), &f)
	var p Problems
	if !errors.As(err, &p) || len(p) != 5 {
		t.Fatalf("DecodeStrict = %v, want 5 Problems", err)
	}
	for _, want := range []string{
		"p.yaml: line 1: name must be a single value, not a list",
		"line 3: rows[].n must be a whole number, not \"many\"",
		`line 4: unknown key "m" in rows[]; known keys: n`,
		"line 5: ratio must be a number, not \"high\"",
		`line 6: unknown key "extra" in the file`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	if err := DecodeStrict("p.yaml", []byte("name: a\n---\nname: b\n"), &f); err == nil || !strings.Contains(err.Error(), "p.yaml: line 3: a second YAML document") {
		t.Errorf("second document: %v", err)
	}
}

func TestLocalLabelError(t *testing.T) {
	for _, tt := range []struct{ in, release, label, cuda string }{
		{"2.3.1+cu121", "2.3.1", "cu121", "12.1"},
		{">=2.3+cu118", "2.3", "cu118", "11.8"},
		{"2.3.1+CU126", "2.3.1", "cu126", "12.6"},
		{"2.5.0+cu130", "2.5.0", "cu130", "13.0"},
		{"2.3.1+cpu", "2.3.1", "cpu", ""},
		{"2.3.1+rocm6.1", "2.3.1", "rocm6.1", ""},
	} {
		_, err := ParseConstraint(tt.in)
		var ll *LocalLabelError
		if !errors.As(err, &ll) || ll.Release != tt.release || ll.Label != tt.label {
			t.Errorf("ParseConstraint(%q) = %v (%+v), want a LocalLabelError for %s +%s", tt.in, err, ll, tt.release, tt.label)
			continue
		}
		cuda, ok := ParseCUDATag(ll.Label)
		if cuda != tt.cuda || ok != (tt.cuda != "") {
			t.Errorf("ParseCUDATag(%q) = %q, %v; want %q", ll.Label, cuda, ok, tt.cuda)
		}
	}
	for _, bad := range []string{"cu", "cu1", "cuda12", "cu12a", ""} {
		if c, ok := ParseCUDATag(bad); ok {
			t.Errorf("ParseCUDATag(%q) = %q", bad, c)
		}
	}
}

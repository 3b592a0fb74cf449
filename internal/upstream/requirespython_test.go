package upstream

import (
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestPythonConstraint: Requires-Python means what PEP 440 says in the
// matrix's syntax too (==3.10 is 3.10.0 only; >3.10 holds for 3.10.1).
func TestPythonConstraint(t *testing.T) {
	for _, c := range []struct {
		in        string
		yes, no   []string
		wantError bool
	}{
		{in: ">=3.10", yes: []string{"3.10", "3.13.1"}, no: []string{"3.9.18"}},
		{in: ">=3.9, <3.14", yes: []string{"3.13.7"}, no: []string{"3.14.0"}},
		{in: ">3.10", yes: []string{"3.10.1", "3.11"}, no: []string{"3.10.0"}},
		{in: "<=3.10", yes: []string{"3.10.0", "3.9"}, no: []string{"3.10.1"}},
		{in: "==3.10", yes: []string{"3.10.0"}, no: []string{"3.10.1"}},
		{in: "==3.10.*", yes: []string{"3.10.12"}, no: []string{"3.11"}},
		{in: ">=3.8,!=3.9.*", yes: []string{"3.10"}, no: []string{"3.9.2"}},
		{in: "!=3.10", yes: []string{"3.10.1"}, no: []string{"3.10.0"}},
		{in: "~=3.10", yes: []string{"3.12"}, no: []string{"4.0", "3.9"}},
		{in: "", wantError: true},
		{in: ">=3.10rc1", wantError: true},
		{in: "===3.10", wantError: true},
		{in: ">=3.10 || <3", wantError: true},
	} {
		got, err := pythonConstraint(c.in)
		if (err != nil) != c.wantError {
			t.Errorf("%q: err = %v, want error %v", c.in, err, c.wantError)
			continue
		}
		for _, v := range c.yes {
			if !got.Check(matrix.MustVersion(v)) {
				t.Errorf("%q (as %s) refuses Python %s", c.in, got, v)
			}
		}
		for _, v := range c.no {
			if got.Check(matrix.MustVersion(v)) {
				t.Errorf("%q (as %s) holds for Python %s", c.in, got, v)
			}
		}
	}
}

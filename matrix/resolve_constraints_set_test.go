package matrix

import (
	"strings"
	"testing"
)

func TestConstraintsSet(t *testing.T) {
	for _, tt := range []struct {
		f      Field
		value  string
		check  func(c Constraints) bool
		errHas string
	}{
		{FieldCUDA, "12.2", func(c Constraints) bool {
			return c.CUDA.Check(MustVersion("12.2.2")) && !c.CUDA.Check(MustVersion("12.3.0"))
		}, ""},
		{FieldCUDA, ">=twelve", nil, "constraint"},
		{FieldTorch, "latest", func(c Constraints) bool { return c.Torch != nil && c.Torch.IsZero() }, ""},
		{FieldTorch, "yes", func(c Constraints) bool { return c.Torch != nil && c.Torch.IsZero() }, ""},
		{FieldJAX, "0.4.30", func(c Constraints) bool { return c.JAX != nil && c.JAX.Check(MustVersion("0.4.30")) }, ""},
		{FieldFlavor, "devel", func(c Constraints) bool { return c.Flavor == "devel" }, ""},
		{FieldFlavor, "slim", nil, `flavor "slim" is not runtime, devel or base`},
		{FieldDriver, "535.104.05", func(c Constraints) bool { return c.Driver.String() == "535.104.05" }, ""},
		{FieldDriver, "new", nil, "version"},
		{FieldGPU, " h100 ", func(c Constraints) bool { return c.GPU == "h100" }, ""},
		{FieldPython, "", nil, "empty Python"},
	} {
		var c Constraints
		err := c.Set(tt.f, tt.value)
		switch {
		case tt.errHas != "":
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("Set(%s, %q) = %v, want an error with %q", tt.f, tt.value, err, tt.errHas)
			}
		case err != nil || !tt.check(c):
			t.Errorf("Set(%s, %q) = %v, %+v", tt.f, tt.value, err, c)
		}
	}
	for _, f := range Fields() {
		if g, ok := FieldByKey(f.Key()); !ok || g != f {
			t.Errorf("FieldByKey(%q) = %v %v", f.Key(), g, ok)
		}
	}
	if _, ok := FieldByKey("cuda_short"); ok {
		t.Error("cuda_short is no constraint")
	}
}

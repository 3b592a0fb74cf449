package matrix

import (
	"errors"
	"strings"
	"testing"
)

// TestFieldInfo: every stack field has its name, a key of its own, help,
// and an example value that parses as the field.
func TestFieldInfo(t *testing.T) {
	keys := map[string]Field{}
	for _, f := range SpecFields() {
		if f.String() == "" || f.Usage() == "" || f.Example() == "" {
			t.Errorf("%d: name %q, usage %q, example %q", f, f.String(), f.Usage(), f.Example())
		}
		if g, dup := keys[f.Key()]; dup {
			t.Errorf("%s and %s share the key %q", g, f, f.Key())
		}
		keys[f.Key()] = f
		var c Constraints
		if err := c.Set(f, f.Example()); err != nil || c.Value(f) == "" {
			t.Errorf("%s's example %q: %v, value %q", f, f.Example(), err, c.Value(f))
		}
	}
	if got := len(SpecFields()); got != len(Fields())+1 || SpecFields()[len(Fields())] != FieldTarget {
		t.Errorf("SpecFields %v: want Fields then target", SpecFields())
	}
	if _, ok := FieldByKey("target"); ok {
		t.Error("target is no constraint field (a conflict never names it)")
	}
	for _, tt := range []struct {
		f    Field
		host bool
	}{{FieldCUDA, false}, {FieldFlavor, false}, {FieldGPU, true}, {FieldDriver, true}, {FieldTarget, true}} {
		if tt.f.Host() != tt.host {
			t.Errorf("%s.Host() = %v", tt.f, !tt.host)
		}
	}
	if f := Field(99); f.String() != "Field(99)" || f.Key() != "field(99)" || f.Usage() != "" || f.Host() {
		t.Errorf("out of range: %q %q", f, f.Key())
	}
}

// TestSpecConstraints: a Spec is parsed once; a bad value is a FieldError
// naming the field, wrapping Set's error.
func TestSpecConstraints(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spec  Spec
		check func(Constraints) bool
		field Field
		err   string
	}{
		{"empty", Spec{}, func(c Constraints) bool { return len(c.Given()) == 0 && c.Target == "" }, 0, ""},
		{"every field", Spec{FieldCUDA: "12.2", FieldCuDNN: "9", FieldTorch: "latest", FieldTensorFlow: "2.15", FieldJAX: "0.4.30",
			FieldPython: "3.11", FieldOS: "ubuntu22.04", FieldFlavor: "devel", FieldGPU: "a10g, l4", FieldDriver: "535.104.05", FieldTarget: "sagemaker/p5"},
			func(c Constraints) bool {
				return len(c.Given()) == len(Fields()) && c.Torch.IsZero() && c.GPU == "a10g,l4" && c.Target == "sagemaker/p5" &&
					c.Driver.String() == "535.104.05" && c.Value(FieldTensorFlow) == "2.15"
			}, 0, ""},
		{"bad cuda", Spec{FieldCUDA: ">=twelve", FieldFlavor: "slim"}, nil, FieldCUDA, "cuda: "},
		{"bad flavor", Spec{FieldCUDA: "12.2", FieldFlavor: "slim"}, nil, FieldFlavor, `flavor: flavor "slim" is not runtime, devel or base`},
		{"blank", Spec{FieldPython: " "}, nil, FieldPython, "python: empty Python"},
		{"empty GPU entry", Spec{FieldGPU: "h100,"}, nil, FieldGPU, `gpu: GPU list "h100," has an empty entry`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.spec.Constraints()
			if tt.err == "" {
				if err != nil || !tt.check(c) {
					t.Errorf("%+v, %v", c, err)
				}
				return
			}
			fe, ok := errors.AsType[*FieldError](err)
			if !ok || fe.Field != tt.field || fe.Value != tt.spec[tt.field] || !strings.HasPrefix(err.Error(), tt.err) || !errors.Is(err, fe.Err) {
				t.Errorf("err = %v, want a FieldError for %s starting %q", err, tt.field, tt.err)
			}
		})
	}
}

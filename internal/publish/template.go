package publish

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/matrix"
)

// FieldCUDAShort is the template field for the image CUDA's major and minor
// without the dot (124 for CUDA 12.4.1), as in PyTorch's cu124.
const FieldCUDAShort = "cuda_short"

// WheelCUDAShortField is the template field for the CUDA a framework's
// wheels were built for, major and minor without the dot:
// torch_cuda_short is 126 for torch 2.7.1+cu126 wheels, whatever the
// image's CUDA (cuda_short) is. A tag like "2.7.1-cu126" means the
// wheel's CUDA, as PyTorch's own variant names do.
func WheelCUDAShortField(framework string) string { return framework + "_cuda_short" }

// templateFields are the fields a tag template may name: every axis name,
// cuda_short and each framework's wheel CUDA (torch_cuda_short). Where the resolved stack has the value (cuda, cudnn,
// python, os, flavor, torch, tensorflow, jax, gpu) the field is the
// resolved one ("2.7.1", not the "2.7" written in the matrix); driver is
// the axis value as written.
func templateFields() []string {
	out := append(axisNames(), FieldCUDAShort)
	for _, fw := range matrix.FrameworkNames() {
		out = append(out, WheelCUDAShortField(fw))
	}
	return out
}

// Template is a tag template: literal text and {field}s.
type Template struct {
	// Text is the template as written.
	Text string
	// Line is where it was written, for messages (0 if not from a file).
	Line  int
	parts []tmplPart
}

type tmplPart struct {
	text  string
	field bool
}

// ParseTemplate parses a tag template. An unknown {field}, an unclosed
// brace, or literal text that cannot be part of an OCI tag is an error.
func ParseTemplate(s string) (Template, error) {
	t := Template{Text: s}
	known := templateFields()
	rest := s
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, tmplPart{text: rest})
			break
		}
		if rest[open] == '}' {
			return Template{}, fmt.Errorf("tag template %s: '}' without '{'", bound.Quote(s))
		}
		if open > 0 {
			t.parts = append(t.parts, tmplPart{text: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 || strings.Contains(rest[open+1:open+max(end, 1)], "{") {
			return Template{}, fmt.Errorf("tag template %s: '{' without '}'", bound.Quote(s))
		}
		field := rest[open+1 : open+end]
		if !slices.Contains(known, field) {
			return Template{}, fmt.Errorf("tag template %s: unknown field {%s}; known fields: %s", bound.Quote(s), field, strings.Join(known, ", "))
		}
		t.parts = append(t.parts, tmplPart{text: field, field: true})
		rest = rest[open+end+1:]
	}
	// Check the literal text: with every field a plain "0", the tag must
	// be valid.
	sample := map[string]string{}
	for _, f := range known {
		sample[f] = "0"
	}
	r, err := t.Render(sample)
	if err != nil {
		return Template{}, err
	}
	if err := CheckTag(r); err != nil {
		return Template{}, fmt.Errorf("tag template %s: %w", bound.Quote(s), err)
	}
	return t, nil
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping the line for errors.
func (t *Template) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return fmt.Errorf("line %d: want a tag template (\"{torch}-cu{cuda_short}\"), got %s", n.Line, kindName(n))
	}
	p, err := ParseTemplate(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	p.Line = n.Line
	*t = p
	return nil
}

// Fields returns the fields the template names, in order.
func (t Template) Fields() []string {
	var out []string
	for _, p := range t.parts {
		if p.field {
			out = append(out, p.text)
		}
	}
	return out
}

// Render fills the fields. A field the template names but fields lacks (or
// has empty) is an error naming it.
func (t Template) Render(fields map[string]string) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if !p.field {
			b.WriteString(p.text)
			continue
		}
		v := fields[p.text]
		if v == "" {
			return "", fmt.Errorf("tag template %s: {%s} has no value for this stack", bound.Quote(t.Text), p.text)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// CheckTag reports whether tag is a valid OCI tag: go-containerregistry's
// rules (letters, digits, _ . -, at most 128 characters) and the
// distribution spec's first character (a letter, digit or _).
func CheckTag(tag string) error {
	if _, err := name.NewTag("example.com/r:"+tag, name.StrictValidation); err != nil || strings.Contains(tag, ":") {
		return fmt.Errorf("%s is not a valid image tag (letters, digits, _ . -, at most 128 characters)", bound.Quote(tag))
	}
	if c := tag[0]; c == '.' || c == '-' {
		return fmt.Errorf("%s is not a valid image tag: it must not start with %q", bound.Quote(tag), c)
	}
	return nil
}

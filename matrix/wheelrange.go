package matrix

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// WheelRange is a version range a framework's CUDA extra asks for, as its
// METADATA writes it: nvidia-cudnn-cu13>=9.12.0.46,<10.0 (jax-cuda13-plugin's
// with-cuda extra). Unlike a Pin it leaves pip a choice; it conflicts with
// another framework's exact pin of the same distribution that it does not
// contain (PinsOutside).
type WheelRange struct {
	// Name is the distribution name, normalized as PEP 503 does.
	Name string
	// Spec is the PEP 440 specifier set; empty means any version.
	Spec pep440.Specifiers
}

func (r WheelRange) String() string { return r.Name + r.Spec.String() }

var wheelRangeRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$`)

// ParseWheelRange parses name followed by PEP 440 specifiers
// (nvidia-cublas>=13.0.0.19, nvidia-cudnn-cu12>=9.8,<10.0, nvidia-nvvm).
func ParseWheelRange(s string) (WheelRange, error) {
	m := wheelRangeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return WheelRange{}, fmt.Errorf("requirement %q must be a name and PEP 440 specifiers, as in nvidia-cudnn-cu13>=9.12.0.46,<10.0", s)
	}
	r := WheelRange{Name: normName(m[1])}
	if spec := strings.ReplaceAll(m[2], " ", ""); spec != "" {
		ss, err := pep440.ParseSpecifiers(spec)
		if err != nil {
			return WheelRange{}, fmt.Errorf("requirement %q: %w", s, err)
		}
		r.Spec = ss
	}
	return r, nil
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping the line for errors.
func (r *WheelRange) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a requirement (name>=version), got %s", n.Line, kindName(n.Kind))
	}
	q, err := ParseWheelRange(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = q
	return nil
}

// MarshalYAML writes the requirement as it is read.
func (r WheelRange) MarshalYAML() (any, error) { return r.String(), nil }

// MarshalText writes the requirement as name and specifiers (JSON).
func (r WheelRange) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// PinsOutside lists the exact pins of pins that reqs also constrain and
// do not admit, in pins' order: pip cannot satisfy both. A prefix pin
// (==13.1.1.3.*) is judged by its stem. This is the rule for a framework
// that pins (torch) sharing an environment with one that asks for ranges
// (the JAX CUDA plugins).
func PinsOutside(pins []Pin, reqs []WheelRange) []PinConflict {
	var out []PinConflict
	for _, p := range pins {
		for _, r := range reqs {
			if r.Name != p.Name || r.Spec.IsZero() || r.Spec.ContainsString(p.Raw) {
				continue
			}
			out = append(out, PinConflict{Name: p.Name, A: p, Range: r.Spec.String()})
		}
	}
	return out
}

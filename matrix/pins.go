package matrix

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// Pin is one exact requirement a framework's wheel (or the pip extra
// gpuimg installs) makes, as its METADATA Requires-Dist writes it:
// nvidia-cudnn-cu12==8.9.2.26. Frameworks that share one Python
// environment must agree on every package both pin exactly: pip installs
// one version of each distribution.
type Pin struct {
	// Name is the distribution name, normalized as PEP 503 does
	// (lowercase, runs of -_. as one -).
	Name    string
	Version Version
	// Raw is the version as written (8.6.1.post1), for messages: Version
	// cannot hold every PEP 440 spelling a pin may use.
	Raw string
}

func (p Pin) String() string { return p.Name + "==" + p.Raw }

var pinRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][0-9A-Za-z.+!_-]*)$`)

var nameRuns = regexp.MustCompile(`[-_.]+`)

// ParsePin parses name==version. Pins are compared as PEP 440 versions
// (Same); Version is set when the version is also one Version holds.
func ParsePin(s string) (Pin, error) {
	m := pinRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Pin{}, fmt.Errorf("pin %q must be name==version, as in nvidia-cudnn-cu12==8.9.2.26", s)
	}
	p := Pin{Name: strings.ToLower(nameRuns.ReplaceAllString(m[1], "-")), Raw: m[2]}
	if v, err := ParseVersion(m[2]); err == nil {
		p.Version = v
	}
	return p, nil
}

// Same reports whether two pins of one package ask for the same version:
// equal as PEP 440 versions (8.6.1.post1 and 8.6.1-1 are one version,
// 9.1.0.70 and 9.1.0.70+x are not), or, where one is not PEP 440, equal
// as written.
func (p Pin) Same(q Pin) bool {
	if p.Raw == q.Raw {
		return true // the common case, without parsing
	}
	a, errA := pep440.Parse(p.Raw)
	b, errB := pep440.Parse(q.Raw)
	if errA == nil && errB == nil {
		return a.Compare(b) == 0
	}
	return p.Raw == q.Raw
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping the line for errors.
func (p *Pin) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a pin (name==version), got %s", n.Line, kindName(n.Kind))
	}
	q, err := ParsePin(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*p = q
	return nil
}

// MarshalYAML writes the pin as it is read.
func (p Pin) MarshalYAML() (any, error) { return p.String(), nil }

// MarshalText writes the pin as name==version (JSON).
func (p Pin) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// Unserved is a pin of a framework's CUDA extra that no package index
// serves, for every Python or for the Pythons of Python: pip cannot
// install the extra there.
type Unserved struct {
	Pin Pin `yaml:"pin" json:"pin"`
	// Python limits the fact to these CPython versions (no cp311 wheels);
	// empty means every Python.
	Python Constraint `yaml:"python" json:"python"`
	// Why says what is missing, with the public report of it.
	Why string `yaml:"why" json:"why"`
}

// PinConflict is a package two frameworks pin to different versions.
type PinConflict struct {
	Name string
	A, B Pin
}

// PinConflicts lists the packages that both a and b pin exactly, to
// different versions, in a's order. pip cannot install a and b into one
// environment when the list is not empty (one version of a distribution
// per environment). This is the one rule for agreeing pins.
func PinConflicts(a, b []Pin) []PinConflict {
	var out []PinConflict
	for _, p := range a {
		i := slices.IndexFunc(b, func(q Pin) bool { return q.Name == p.Name })
		if i >= 0 && !p.Same(b[i]) {
			out = append(out, PinConflict{Name: p.Name, A: p, B: b[i]})
		}
	}
	return out
}

// unservedFor returns the pins of us that no index serves for Python py;
// a zero py asks for the pins unserved for every Python.
func unservedFor(us []Unserved, py Version) []Unserved {
	var out []Unserved
	for _, u := range us {
		if u.Python.IsZero() || (!py.IsZero() && u.Python.Check(py)) {
			out = append(out, u)
		}
	}
	return out
}

// describeConflicts names conflicting pins for a message, cuDNN and NCCL
// first (the libraries users know), at most three and a count of the rest:
// "nvidia-cudnn-cu12 (8.9.2.26 and 8.9.4.25), ... and 8 more".
func describeConflicts(cs []PinConflict) string {
	cs = slices.Clone(cs)
	rank := func(name string) int {
		switch {
		case strings.Contains(name, "cudnn"):
			return 0
		case strings.Contains(name, "nccl"):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(cs, func(a, b PinConflict) int { return rank(a.Name) - rank(b.Name) })
	const most = 3
	var parts []string
	for i, c := range cs {
		if i == most {
			parts = append(parts, fmt.Sprintf("%d more", len(cs)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s and %s)", c.Name, c.A.Raw, c.B.Raw))
	}
	return strings.Join(parts, ", ")
}

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
// nvidia-cudnn-cu12==8.9.2.26, or, in the shape of CUDA 13 wheels,
// cuda-toolkit[cublas,cudart]==13.0.2 (a metapackage whose extras pin the
// suffix-less component wheels, nvidia-cublas==13.1.0.3.*). Frameworks
// that share one Python environment must agree on every package both pin
// exactly: pip installs one version of each distribution.
type Pin struct {
	// Name is the distribution name, normalized as PEP 503 does
	// (lowercase, runs of -_. as one -).
	Name string
	// Extras are the extras asked for (cuda-toolkit[cublas,cudart]),
	// normalized and sorted; empty for most pins.
	Extras  []string
	Version Version
	// Raw is the version as written (8.6.1.post1), for messages: Version
	// cannot hold every PEP 440 spelling a pin may use.
	Raw string
	// Prefix marks a prefix pin, ==13.1.0.3.*: any version whose release
	// starts with Raw's (cuda-toolkit pins its components so).
	Prefix bool
}

func (p Pin) String() string {
	s := p.Name
	if len(p.Extras) > 0 {
		s += "[" + strings.Join(p.Extras, ",") + "]"
	}
	s += "==" + p.Raw
	if p.Prefix {
		s += ".*"
	}
	return s
}

var pinRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([A-Za-z0-9._,\s-]*)\])?\s*==\s*([0-9][0-9A-Za-z.+!_-]*?)(\.\*)?$`)

var nameRuns = regexp.MustCompile(`[-_.]+`)

// ParsePin parses name==version, name[extra,...]==version and the
// prefix pin name==version.*. Pins are compared as PEP 440 versions
// (Same); Version is set when the version is also one Version holds.
func ParsePin(s string) (Pin, error) {
	m := pinRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || (m[4] != "" && strings.ContainsAny(m[3], "+!")) {
		return Pin{}, fmt.Errorf("pin %q must be name==version, as in nvidia-cudnn-cu12==8.9.2.26 or cuda-toolkit[cublas]==13.0.2", s)
	}
	p := Pin{Name: normName(m[1]), Raw: m[3], Prefix: m[4] != ""}
	for e := range strings.SplitSeq(m[2], ",") {
		if e = strings.TrimSpace(e); e != "" {
			p.Extras = append(p.Extras, normName(e))
		}
	}
	slices.Sort(p.Extras)
	p.Extras = slices.Compact(p.Extras)
	if v, err := ParseVersion(m[3]); err == nil {
		p.Version = v
	}
	return p, nil
}

// normName normalizes a distribution or extra name as PEP 503 does.
func normName(s string) string { return strings.ToLower(nameRuns.ReplaceAllString(s, "-")) }

// Same reports whether two pins of one package ask for the same version:
// equal as PEP 440 versions (8.6.1.post1 and 8.6.1-1 are one version,
// 9.1.0.70 and 9.1.0.70+x are not), or, where one is not PEP 440, equal
// as written.
//
// A prefix pin agrees with every version in it: nvidia-cublas==13.1.0.3.*
// with nvidia-cublas==13.1.0.3, and with 13.1.* both ways.
func (p Pin) Same(q Pin) bool {
	if p.Raw == q.Raw {
		return true // the common case, without parsing
	}
	if p.Prefix || q.Prefix {
		return prefixAgrees(p, q)
	}
	a, errA := pep440.Parse(p.Raw)
	b, errB := pep440.Parse(q.Raw)
	if errA == nil && errB == nil {
		return a.Compare(b) == 0
	}
	return p.Raw == q.Raw
}

// prefixAgrees says whether two pins, one or both of them prefix pins,
// admit a common version: the shorter release is a prefix of the longer.
func prefixAgrees(p, q Pin) bool {
	a, b := strings.Split(p.Raw, "."), strings.Split(q.Raw, ".")
	if (!p.Prefix && len(a) < len(b)) || (!q.Prefix && len(b) < len(a)) {
		// An exact pin shorter than the prefix: 13.1 is not in 13.1.0.3.*
		// unless its missing segments are zeros (PEP 440 pads them).
		a, b = pad(a, len(b)), pad(b, len(a))
	}
	n := min(len(a), len(b))
	for i := range n {
		x, errX := pep440.Parse(a[i])
		y, errY := pep440.Parse(b[i])
		if errX != nil || errY != nil {
			if a[i] != b[i] {
				return false
			}
			continue
		}
		if x.Compare(y) != 0 {
			return false
		}
	}
	return true
}

// pad extends release segments with zeros to n.
func pad(s []string, n int) []string {
	for len(s) < n {
		s = append(s, "0")
	}
	return s
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

// PinConflict is a package two frameworks pin to different versions, or
// one pins outside the range the other asks for (Range set, B zero).
type PinConflict struct {
	Name string
	A, B Pin
	// Range is the other framework's specifiers A falls outside
	// (>=9.8,<10.0), when the conflict is with a range.
	Range string
}

// other is what the second framework asks for, for messages.
func (c PinConflict) other() string {
	if c.Range != "" {
		return c.Range
	}
	return c.B.Raw
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
		parts = append(parts, fmt.Sprintf("%s (%s and %s)", c.Name, c.A.Raw, c.other()))
	}
	return strings.Join(parts, ", ")
}

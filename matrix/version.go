package matrix

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxParts bounds how many dot-separated numbers a version may have.
// cuDNN builds (8.9.2.26) need four; nothing in the matrix needs more.
const maxParts = 4

// Version is a dotted numeric version as NVIDIA and the Python ecosystem
// publish them: 12.2.2 (CUDA), 535.104.05 (driver), 8.9.2.26 (cuDNN),
// 3.10 (Python). It is not semver: components are compared numerically,
// missing components count as zero, and the original spelling is kept for
// display (535.104.05 keeps its leading zero).
//
// The zero Version is "unset" and reports IsZero.
type Version struct {
	raw   string
	parts []int
}

// ParseVersion parses a dotted numeric version with one to four parts.
// A leading "v" is accepted. A pip local version label (+cu121) is rejected:
// it is not part of the version order.
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	orig := s
	s = strings.TrimPrefix(s, "v")
	if s == "" {
		return Version{}, errors.New("empty version")
	}
	fields := strings.Split(s, ".")
	if len(fields) > maxParts {
		return Version{}, fmt.Errorf("version %q has %d parts; at most %d are allowed", orig, len(fields), maxParts)
	}
	parts := make([]int, len(fields))
	for i, f := range fields {
		if f == "" {
			return Version{}, fmt.Errorf("version %q has an empty part", orig)
		}
		if len(f) > 9 {
			return Version{}, fmt.Errorf("version %q: part %q is too long", orig, f)
		}
		for _, c := range f {
			if c < '0' || c > '9' {
				return Version{}, fmt.Errorf("version %q: part %q is not a number", orig, f)
			}
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return Version{}, fmt.Errorf("version %q: %w", orig, err)
		}
		parts[i] = n
	}
	return Version{raw: s, parts: parts}, nil
}

// MustVersion is ParseVersion for literals known to be valid; it panics otherwise.
func MustVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String returns the version as it was written (without a leading "v").
func (v Version) String() string { return v.raw }

// IsZero reports whether v is unset.
func (v Version) IsZero() bool { return len(v.parts) == 0 }

// Len returns the number of parts written (12.2 has 2, 12.2.2 has 3).
func (v Version) Len() int { return len(v.parts) }

// Part returns part i (0-based), or 0 if the version has fewer parts.
func (v Version) Part(i int) int {
	if i < len(v.parts) {
		return v.parts[i]
	}
	return 0
}

// Major returns the first part.
func (v Version) Major() int { return v.Part(0) }

// Minor returns the second part, or 0.
func (v Version) Minor() int { return v.Part(1) }

// Trunc returns the version cut to its first n parts (12.2.2 → 12.2 for n=2).
// Missing parts are filled with zeros.
func (v Version) Trunc(n int) Version {
	parts := make([]int, n)
	strs := make([]string, n)
	for i := range n {
		parts[i] = v.Part(i)
		strs[i] = strconv.Itoa(parts[i])
	}
	// Keep the original spelling of the kept parts (leading zeros).
	if orig := strings.Split(v.raw, "."); len(orig) >= n {
		copy(strs, orig[:n])
	}
	return Version{raw: strings.Join(strs, "."), parts: parts}
}

// Compare returns -1, 0 or +1 as v is less than, equal to, or greater than w.
// Missing parts count as zero, so 12.2 equals 12.2.0.
func (v Version) Compare(w Version) int {
	n := max(len(v.parts), len(w.parts))
	for i := range n {
		a, b := v.Part(i), w.Part(i)
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
	}
	return 0
}

// Less reports whether v sorts before w.
func (v Version) Less(w Version) bool { return v.Compare(w) < 0 }

// HasPrefix reports whether the first p.Len() parts of v equal p:
// 12.2.2 has prefix 12 and 12.2, not 12.20.
func (v Version) HasPrefix(p Version) bool {
	for i := range p.parts {
		if v.Part(i) != p.parts[i] {
			return false
		}
	}
	return true
}

// bumpAt returns the smallest version that sorts after every version with
// prefix v[:n]: bumpAt(12.2, 2) = 12.3, bumpAt(2, 1) = 3.
func (v Version) bumpAt(n int) Version {
	parts := make([]int, n)
	strs := make([]string, n)
	for i := range n {
		parts[i] = v.Part(i)
	}
	parts[n-1]++
	for i := range n {
		strs[i] = strconv.Itoa(parts[i])
	}
	return Version{raw: strings.Join(strs, "."), parts: parts}
}

// MarshalText implements encoding.TextMarshaler.
func (v Version) MarshalText() ([]byte, error) { return []byte(v.raw), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (v *Version) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*v = Version{}
		return nil
	}
	p, err := ParseVersion(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

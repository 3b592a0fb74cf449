package pep440

import (
	"fmt"
	"strings"

	pep "github.com/aquasecurity/go-pep440-version"
)

// maxLen bounds the length of a version or specifier string read from a
// package index or a METADATA file.
const maxLen = 256

// Version is a PEP 440 version. The zero Version is "unset"; it sorts
// before every other version.
type Version struct {
	v   pep.Version
	pub pep.Version // v without its local label, for ComparePublic
	set bool
}

// Parse parses a PEP 440 version, in any spelling PEP 440 normalizes
// (1.0-DEV, v1.0, 1.0.post-1 …). Surrounding white space is ignored.
func Parse(s string) (Version, error) {
	if len(s) > maxLen {
		return Version{}, fmt.Errorf("version of %d bytes: longer than %d", len(s), maxLen)
	}
	// Python's str.strip: any Unicode white space around the version.
	s = strings.TrimSpace(s)
	if !isASCII(s) {
		// The library matches letters case-insensitively with Unicode
		// folding (1.0+\u0130); PEP 440 versions are ASCII.
		return Version{}, fmt.Errorf("version %q is not ASCII", s)
	}
	v, err := pep.Parse(s)
	if err != nil {
		return Version{}, fmt.Errorf("version %q is not a PEP 440 version: %w", s, err)
	}
	pub := v
	if v.Local() != "" {
		if pub, err = pep.Parse(v.Public()); err != nil {
			return Version{}, fmt.Errorf("version %q: public part: %w", s, err)
		}
	}
	return Version{v: v, pub: pub, set: true}, nil
}

// MustParse is Parse for literals known to be valid; it panics otherwise.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// IsZero reports whether v is unset.
func (v Version) IsZero() bool { return !v.set }

// String is the normalized form (1.0-DEV → 1.0.dev0, 1!2.0rc1+Ubuntu.1 →
// 1!2.0rc1+ubuntu.1); "" for the zero Version.
func (v Version) String() string {
	if !v.set {
		return ""
	}
	return v.v.String()
}

// Original is the version as written.
func (v Version) Original() string { return v.v.Original() }

// Public is the normalized version without its local label.
func (v Version) Public() string { return v.v.Public() }

// BaseVersion is the epoch and release (1!2.0 of 1!2.0rc1.post2+x).
func (v Version) BaseVersion() string { return v.v.BaseVersion() }

// Local is the normalized local label ("cu121" of 2.3.1+cu121), "" if none.
func (v Version) Local() string { return v.v.Local() }

// IsPreRelease reports a pre-release or a dev release (1.0a1, 1.0.dev0,
// 1.0.post1.dev0), as packaging's Version.is_prerelease does.
func (v Version) IsPreRelease() bool { return v.v.IsPreRelease() }

// IsDevRelease reports a dev release (1.0.dev0, 1.0a1.dev2).
func (v Version) IsDevRelease() bool { return strings.Contains(v.Public(), ".dev") }

// IsPostRelease reports a post-release (1.0.post1, 1.0-1).
func (v Version) IsPostRelease() bool { return v.v.IsPostRelease() }

// IsFinal reports a final release: no pre-, post- or dev-release part
// (a local label is allowed: 2.3.1+cu121 is final).
func (v Version) IsFinal() bool { return v.set && !v.IsPreRelease() && !v.IsPostRelease() }

// Compare returns -1, 0 or +1 as v sorts before, equal to or after w in
// PEP 440's order (local labels included: 1.0 < 1.0+a). The zero Version
// sorts first.
func (v Version) Compare(w Version) int {
	switch {
	case !v.set && !w.set:
		return 0
	case !v.set:
		return -1
	case !w.set:
		return 1
	}
	return v.v.Compare(w.v)
}

// ComparePublic is Compare without the local labels (2.3.1+cu121 equals
// 2.3.1), the order in which a package index's releases are listed.
func (v Version) ComparePublic(w Version) int {
	if !v.set || !w.set {
		return v.Compare(w)
	}
	return v.pub.Compare(w.pub)
}

// MarshalText implements encoding.TextMarshaler (the normalized form).
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

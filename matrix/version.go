package matrix

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// maxParts bounds how many dot-separated numbers a version may have.
// cuDNN and TensorRT builds (8.9.2.26) need four; nothing in the matrix needs more.
const maxParts = 4

// Version is a version as NVIDIA and the Python ecosystem publish them:
// 12.2.2 (CUDA), 535.104.05 (driver), 2.3.1 (a framework), 8.9.2.26
// (cuDNN), 3.10 (Python), 2.5.0rc1 (a PEP 440 pre-release).
//
// The first three parts, the pre-release and the local label are held in a
// [semver.Version] from github.com/Masterminds/semver/v3, which orders them.
// What that library cannot represent is kept beside it, on purpose:
//
//   - a fourth part (cuDNN and TensorRT build numbers: the 26 of 8.9.2.26),
//     which orders after the first three;
//   - the spelling as written, so 535.104.05 keeps its leading zero and 12.2
//     keeps having two parts (Len), which prefix matches depend on;
//   - PEP 440 pre-release spellings (2.5.0rc1, 2.5.0a1, 2.5.0.dev20240801),
//     translated to a semver pre-release that sorts the way PEP 440 does;
//   - PEP 440 local labels (2.3.1+cu121), held as semver build metadata,
//     which the order ignores, as PEP 440 ignores them against public versions.
//
// Missing parts count as zero, so 12.2 equals 12.2.0.
// The zero Version is "unset" and reports IsZero.
//
// The order is PEP 440's for every version Version holds, numbers up to
// 2^64-1 included (2.5.0.dev5000000000 sorts after 2.5.0.dev1);
// TestVersionOrderIsPEP440 checks it against package pep440 on
// pypa/packaging's own table. Python package versions gpuimg reads from
// outside (wheel names, METADATA, Requires-Python, Requires-Dist, pip's
// list) are read with package pep440 itself, which holds every PEP 440
// spelling (epochs, post-releases) and is slower.
type Version struct {
	raw   string          // as written, without a leading "v"
	n     int             // numeric parts written (1 to 4)
	sv    *semver.Version // the first three parts, pre-release and local label
	build int             // the fourth part (8.9.2.26 → 26), or 0
	_     [0]func()       // not comparable with ==: use Compare
}

// pep440Suffix matches what PEP 440 allows after the release numbers that
// gpuimg understands: one pre-release (a, b, rc and their long spellings) or
// one dev release, then an optional local label. Post releases and a
// pre-release combined with a dev release are not supported.
var pep440Suffix = regexp.MustCompile(`(?i)^(?:[-_.]?(alpha|beta|preview|pre|rc|a|b|c)[-_.]?([0-9]*)|[-_.]?(dev)[-_.]?([0-9]*))?(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$`)

// preRank maps a PEP 440 pre-release kind to the first identifier of its
// semver pre-release. PEP 440 orders dev < a < b < rc; semver orders numeric
// identifiers before letters and letters as ASCII, so "0" (dev), "a", "b" and
// "rc" keep PEP 440's order through the library's Compare.
var preRank = map[string]string{
	"dev": "0", "a": "a", "alpha": "a", "b": "b", "beta": "b",
	"rc": "rc", "c": "rc", "pre": "rc", "preview": "rc",
}

// ParseVersion parses a version with one to four numeric parts, optionally
// followed by a PEP 440 pre-release (2.5.0rc1) or dev release
// (2.5.0.dev20240801) and a local label (2.3.1+cu121). A leading "v" is
// accepted.
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	orig := s
	s = strings.TrimPrefix(s, "v")
	if s == "" {
		return Version{}, errors.New("empty version")
	}
	// The release numbers end at the first character that is neither a
	// digit nor a dot followed by a digit.
	end := 0
	for end < len(s) && (isDigit(s[end]) || s[end] == '.' && (end+1 == len(s) || isDigit(s[end+1]) || s[end+1] == '.')) {
		end++
	}
	release, suffix := s[:end], s[end:]
	// An empty suffix, the common case, matches with every group empty.
	m := make([]string, pep440Suffix.NumSubexp()+1)
	if suffix != "" {
		m = pep440Suffix.FindStringSubmatch(suffix)
	}
	if m == nil || release == "" {
		// Not a suffix gpuimg knows: report the part that is not a number.
		release, m = s, nil
	}
	fields := strings.Split(release, ".")
	if len(fields) > maxParts {
		return Version{}, fmt.Errorf("version %s has %d parts; at most %d are allowed", bound.Quote(orig), len(fields), maxParts)
	}
	nums := make([]uint64, 3)
	build := 0
	for i, f := range fields {
		if f == "" {
			return Version{}, fmt.Errorf("version %s has an empty part", bound.Quote(orig))
		}
		for j := range len(f) {
			if !isDigit(f[j]) {
				return Version{}, fmt.Errorf("version %s: part %s is not a number", bound.Quote(orig), bound.Quote(f))
			}
		}
		if len(f) > 9 {
			return Version{}, fmt.Errorf("version %s: part %s is too long", bound.Quote(orig), bound.Quote(f))
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return Version{}, fmt.Errorf("version %s: %w", bound.Quote(orig), err)
		}
		if i < 3 {
			nums[i] = uint64(n)
		} else {
			build = n
		}
	}
	if m == nil { // unreachable: a bad suffix makes a part not a number
		return Version{}, fmt.Errorf("version %s is not a version", bound.Quote(orig))
	}
	var pre, local string
	var err error
	switch {
	case m[1] != "":
		pre, err = preNumber(orig, preRank[strings.ToLower(m[1])], m[2])
	case m[3] != "":
		pre, err = preNumber(orig, preRank["dev"], m[4])
	}
	if err != nil {
		return Version{}, err
	}
	if m[5] != "" {
		local = strings.NewReplacer("-", ".", "_", ".").Replace(strings.ToLower(m[5]))
	}
	if pre != "" && len(fields) > 3 {
		// A four-part pre-release would need its pre-release ordered after
		// the fourth part, which the library's order cannot express.
		return Version{}, fmt.Errorf("version %s: a pre-release needs a version of at most three parts", bound.Quote(orig))
	}
	return Version{raw: s, n: len(fields), sv: semver.New(nums[0], nums[1], nums[2], pre, local), build: build}, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// preNumber is the semver pre-release for a PEP 440 pre-release kind
// (rank) and number: "rc" means rc0 and "rc01" means rc1. A number above
// 2^64-1 is refused, never read as 0.
func preNumber(orig, rank, num string) (string, error) {
	if num == "" {
		return rank + ".0", nil
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return "", fmt.Errorf("version %q: pre-release number %s is above 2^64-1", orig, num)
	}
	return rank + "." + strconv.FormatUint(n, 10), nil
}

// MustVersion is ParseVersion for literals known to be valid; it panics otherwise.
func MustVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// zeroSemver stands for the zero Version, which orders as 0.
var zeroSemver = semver.New(0, 0, 0, "", "")

// semver returns the library's view of v: its first three parts, the
// pre-release and the local label. The zero Version is 0.0.0.
func (v Version) semver() *semver.Version {
	if v.sv == nil {
		return zeroSemver
	}
	return v.sv
}

// String returns the version as it was written (without a leading "v").
func (v Version) String() string { return v.raw }

// IsZero reports whether v is unset.
func (v Version) IsZero() bool { return v.sv == nil }

// Len returns the number of numeric parts written (12.2 has 2, 12.2.2 has 3).
func (v Version) Len() int { return v.n }

// Part returns numeric part i (0-based), or 0 if the version has fewer parts.
func (v Version) Part(i int) int {
	switch i {
	case 0:
		return int(v.semver().Major())
	case 1:
		return int(v.semver().Minor())
	case 2:
		return int(v.semver().Patch())
	case 3:
		return v.build
	}
	return 0
}

// Major returns the first part.
func (v Version) Major() int { return v.Part(0) }

// Minor returns the second part, or 0.
func (v Version) Minor() int { return v.Part(1) }

// MajorMinor is the first two dot-separated parts of a version as written
// ("3.11.4" → "3.11", "2.9.0+cu128" → "2.9"), without parsing it; a
// string with no dot is returned as it is.
func MajorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// Trunc returns the version cut to its first n numeric parts (12.2.2 → 12.2
// for n=2), without a pre-release or local label. Missing parts are filled
// with zeros; n is at most 4.
func (v Version) Trunc(n int) Version {
	if n <= 0 {
		return Version{}
	}
	n = min(n, maxParts)
	if v.n == n && v.releaseEnd() == len(v.raw) {
		return v // already n parts, nothing to cut
	}
	strs := make([]string, n)
	for i := range n {
		strs[i] = strconv.Itoa(v.Part(i))
	}
	// Keep the original spelling of the kept parts (leading zeros) when
	// all of them were written.
	if orig := strings.Split(v.raw[:v.releaseEnd()], "."); v.n >= n {
		copy(strs, orig[:n])
	}
	return MustVersion(strings.Join(strs, "."))
}

// releaseEnd returns the length of the numeric part of v.raw.
func (v Version) releaseEnd() int {
	i := 0
	for i < len(v.raw) && (isDigit(v.raw[i]) || v.raw[i] == '.' && i+1 < len(v.raw) && isDigit(v.raw[i+1])) {
		i++
	}
	return i
}

// Compare returns -1, 0 or +1 as v is less than, equal to, or greater than w,
// in PEP 440's order of their public versions: missing parts count as zero,
// so 12.2 equals 12.2.0; dev < a < b < rc < the release (2.5.0rc1 < 2.5.0);
// local labels are ignored. The zero Version equals 0.
func (v Version) Compare(w Version) int {
	if c := v.semver().Compare(w.semver()); c != 0 {
		return c
	}
	return cmp.Compare(v.build, w.build)
}

// Less reports whether v sorts before w.
func (v Version) Less(w Version) bool { return v.Compare(w) < 0 }

// HasPrefix reports whether the first p.Len() parts of v equal p:
// 12.2.2 has prefix 12 and 12.2, not 12.20.
func (v Version) HasPrefix(p Version) bool {
	for i := range p.n {
		if v.Part(i) != p.Part(i) {
			return false
		}
	}
	return true
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

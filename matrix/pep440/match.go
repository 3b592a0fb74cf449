package pep440

import (
	"slices"
	"strconv"
	"strings"
)

// The operators below follow PEP 440's text as packaging.python.org's
// "Version specifiers" gives it, and are checked against pypa/packaging's
// tables. They are gpuimg's own, on the library's Version order, because
// the library's specifier functions disagree with 51 of those cases
// (prefix matching with padding and epochs, ~= with a pre-release or
// leading zeros, and the exclusive < and > around post-releases and
// local labels); testdata/README.md lists them.

// match reports whether v satisfies c (c is not ===).
func (c Specifier) match(v Version) bool {
	switch c.op {
	case "==":
		return c.equal(v)
	case "!=":
		return !c.equal(v)
	case "~=":
		return v.ComparePublic(c.v) >= 0 && prefixMatch(v, compatiblePrefix(c.v))
	case "<=":
		return v.ComparePublic(c.v) <= 0
	case ">=":
		return v.ComparePublic(c.v) >= 0
	case "<":
		return lessThan(v, c.v)
	case ">":
		return greaterThan(v, c.v)
	}
	return false
}

// equal is == without the negation of !=: a prefix match for V.*, else
// equality after zero padding, of the public version unless V has a local
// label.
func (c Specifier) equal(v Version) bool {
	if c.wild {
		return prefixMatch(v, release(c.v))
	}
	if c.v.Local() == "" {
		return v.ComparePublic(c.v) == 0
	}
	return v.Compare(c.v) == 0
}

// segments is an epoch and a release: [epoch, r1, r2, ...].
type segments []uint64

// release reads v's epoch and release from its base version (1!2.0).
func release(v Version) segments {
	base := v.BaseVersion()
	epoch := uint64(0)
	if e, rest, ok := strings.Cut(base, "!"); ok {
		epoch, _ = strconv.ParseUint(e, 10, 64)
		base = rest
	}
	out := segments{epoch}
	for f := range strings.SplitSeq(base, ".") {
		n, _ := strconv.ParseUint(f, 10, 64) // the library parsed each as a uint64
		out = append(out, n)
	}
	return out
}

// prefixMatch reports whether v's epoch and release, padded with zeros,
// begin with prefix (==2.0.* holds for 2, 2.0.1 and 2.0rc1).
func prefixMatch(v Version, prefix segments) bool {
	r := release(v)
	for len(r) < len(prefix) {
		r = append(r, 0)
	}
	return slices.Equal(r[:len(prefix)], prefix)
}

// compatiblePrefix is ~=V's prefix: V's epoch and release without its
// last number (~=2.2.post3 is >=2.2.post3, ==2.*).
func compatiblePrefix(v Version) segments {
	r := release(v)
	return r[:len(r)-1]
}

// lessThan is <V: v before V, but not a pre-release of V itself unless V
// is a pre-release (<3.1 does not hold for 3.1.dev0; <1.0.post1 holds for
// 1.0.dev0 but not 1.0.post1.dev0).
func lessThan(v, spec Version) bool {
	if spec.IsPreRelease() {
		return v.ComparePublic(spec) < 0
	}
	return v.ComparePublic(MustParse(spec.Public()+".dev0")) < 0
}

// greaterThan is >V: v after V, but not a post-release of V unless V is a
// post-release (>1.0 does not hold for 1.0.post1; >1.0.dev1 holds for
// 1.0.post0), nor V with a local label (>1.0 does not hold for 1.0+local).
func greaterThan(v, spec Version) bool {
	if v.ComparePublic(spec) <= 0 {
		return false
	}
	if !spec.IsPostRelease() && v.IsPostRelease() && !spec.IsDevRelease() {
		if MustParse(withoutPostDev(v)).Compare(spec) == 0 {
			return false
		}
	}
	return true
}

// withoutPostDev is v's public version cut before its post-release
// (1.0a1 of 1.0a1.post2.dev3).
func withoutPostDev(v Version) string {
	s, _, _ := strings.Cut(v.Public(), ".post")
	return s
}

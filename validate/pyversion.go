package validate

import "github.com/gpuimg/gpuimg/matrix/pep440"

// samePublic reports whether an installed distribution's version and the
// version a label or pin names are one release by PEP 440: the public
// versions are equal (2.7.1+cu128 and 2.7.1, 2.3 and 2.3.0, 2.15.0-1 and
// 2.15.0.post1). Where either is not PEP 440 they must be equal as written.
func samePublic(installed, want string) bool {
	a, errA := pep440.Parse(installed)
	b, errB := pep440.Parse(want)
	if errA != nil || errB != nil {
		return baseVersion(installed) == want
	}
	return a.ComparePublic(b) == 0
}

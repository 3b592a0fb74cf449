package testenv

import (
	"context"
	"strings"
)

// TwoPythons are the CPython versions in TwoPythonsRootfs.
var TwoPythons = []string{"3.13", "3.14"}

// TwoPythonsRootfs returns a tar of a minimal Debian sid root filesystem
// with two CPython versions (TwoPythons, with venv), made with debootstrap
// and cached under CacheDir. Debian's stable release has one Python;
// unstable carries two while it moves from one to the next, which is what
// a benchmark of switching Python versions on the same base needs. The
// cache keeps the first one made: sid changes daily.
func TwoPythonsRootfs(ctx context.Context) (string, error) {
	var include []string
	for _, v := range TwoPythons {
		include = append(include, "python"+v, "python"+v+"-venv")
	}
	return minbaseRootfs(ctx, "sid", include, "making a Debian sid root filesystem with Python "+strings.Join(TwoPythons, " and "),
		"debootstrap --variant=minbase, once (2 to 3 minutes; cached in %s)")
}

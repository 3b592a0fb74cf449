package upstream

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// requirement is one Requires-Dist line (PEP 508), reduced to what the
// updater reads.
type requirement struct {
	Name   string   // normalized
	Extras []string // extras of the required distribution ([with-cuda])
	Specs  []spec   // version specifiers, in order
	Set    pep440.Specifiers
	Marker string // environment marker, "" if none
}

type spec struct{ Op, Version string }

var (
	reqNameRE  = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$`)
	extraRE    = regexp.MustCompile(`extra\s*==\s*["']([^"']+)["']`)
	linuxNotRE = regexp.MustCompile(`(sys_platform|platform_system)\s*(!=\s*["'](linux|Linux)["']|==\s*["'](win32|darwin|Windows|Darwin)["'])`)
)

// parseRequirement reads a PEP 508 requirement such as
// `jax-cuda12-plugin[with-cuda]<=0.4.30,>=0.4.30; extra == "cuda12"` or
// the older `torch (==2.0.0)`. URL requirements (name @ url) are refused.
func parseRequirement(s string) (requirement, error) {
	body, marker, _ := strings.Cut(s, ";")
	m := reqNameRE.FindStringSubmatch(strings.TrimSpace(body))
	if m == nil {
		return requirement{}, fmt.Errorf("requirement %q has no distribution name", s)
	}
	r := requirement{Name: normalizeName(m[1]), Marker: strings.TrimSpace(marker)}
	if m[2] != "" {
		for e := range strings.SplitSeq(strings.Trim(m[2], "[]"), ",") {
			if e = strings.TrimSpace(e); e != "" {
				r.Extras = append(r.Extras, normalizeName(e))
			}
		}
	}
	rest := strings.TrimSpace(m[3])
	if strings.HasPrefix(rest, "@") {
		return requirement{}, fmt.Errorf("requirement %q is a URL requirement", s)
	}
	rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(rest, "("), ")"))
	if rest == "" {
		return r, nil
	}
	set, err := pep440.ParseSpecifiers(rest)
	if err != nil {
		return requirement{}, fmt.Errorf("requirement %q: %w", s, err)
	}
	for _, c := range set.Clauses() {
		r.Specs = append(r.Specs, spec{Op: c.Op(), Version: c.Version()})
	}
	r.Set = set
	return r, nil
}

// extra is the extra the marker limits the requirement to ("" if none),
// normalized.
func (r requirement) extra() string {
	if m := extraRE.FindStringSubmatch(r.Marker); m != nil {
		return normalizeName(m[1])
	}
	return ""
}

// onLinux reports whether the marker can hold on Linux (a requirement
// limited to Windows or macOS does not).
func (r requirement) onLinux() bool { return !linuxNotRE.MatchString(r.Marker) }

// pin is the version of an == specifier (or the lower bound of a
// >=X,<=X pair), without a local label; "" if none.
func (r requirement) pin() string {
	var lo, hi string
	for _, s := range r.Specs {
		switch s.Op {
		case "==", "===":
			v, _, _ := strings.Cut(s.Version, "+")
			if !strings.Contains(v, "*") {
				return v
			}
		case ">=":
			lo = s.Version
		case "<=":
			hi = s.Version
		}
	}
	if lo != "" && lo == hi {
		return lo
	}
	return ""
}

// lowerBound is the version of the >= (or ==, ~=) specifier, "" if none.
func (r requirement) lowerBound() string {
	for _, s := range r.Specs {
		switch s.Op {
		case ">=", "~=", "==", "===":
			v, _, _ := strings.Cut(s.Version, "+")
			return strings.TrimSuffix(v, ".*")
		}
	}
	return ""
}

// exactPin is r as a matrix.Pin when it pins one version of a wheel other
// frameworks may pin too (nvidia-*, tensorrt*): what two frameworks in one
// environment must agree on (matrix.PinConflicts).
func exactPin(r requirement) (matrix.Pin, bool) {
	if !strings.HasPrefix(r.Name, "nvidia-") && !strings.HasPrefix(r.Name, "tensorrt") {
		return matrix.Pin{}, false
	}
	v := r.pin()
	if v == "" {
		return matrix.Pin{}, false
	}
	p, err := matrix.ParsePin(r.Name + "==" + v)
	return p, err == nil
}

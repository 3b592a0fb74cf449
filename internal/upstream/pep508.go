package upstream

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/matrix/pep440"
	"github.com/gpuimg/gpuimg/matrix/pep508"
)

// requirement is one Requires-Dist line (PEP 508), reduced to what the
// updater reads.
type requirement struct {
	Name   string   // normalized
	Extras []string // extras of the required distribution ([with-cuda])
	Specs  []spec   // version specifiers, in order
	Set    pep440.Specifiers
	Marker pep508.Marker // environment marker; the zero Marker if none
}

type spec struct{ Op, Version string }

var reqNameRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$`)

// parseRequirement reads a PEP 508 requirement such as
// `jax-cuda12-plugin[with-cuda]<=0.4.30,>=0.4.30; extra == "cuda12"` or
// the older `torch (==2.0.0)`. URL requirements (name @ url) are refused.
func parseRequirement(s string) (requirement, error) {
	body, marker, _ := strings.Cut(s, ";")
	m := reqNameRE.FindStringSubmatch(strings.TrimSpace(body))
	if m == nil {
		return requirement{}, fmt.Errorf("requirement %q has no distribution name", s)
	}
	mk, err := pep508.ParseMarker(strings.TrimSpace(marker))
	if err != nil {
		return requirement{}, fmt.Errorf("requirement %q: %w", s, err)
	}
	r := requirement{Name: normalizeName(m[1]), Marker: mk}
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

// linuxX86 is the target the matrix's pins describe when the Python is
// not known (PyPI's JSON API gives one Requires-Dist for every wheel):
// CPython on Linux x86_64.
func linuxX86() pep508.Env { return pep508.LinuxEnv("x86_64", "") }

// extras are the extras the marker names (extra == "cuda12"),
// normalized.
func (r requirement) extras() []string {
	var out []string
	for _, e := range r.Marker.Extras() {
		out = append(out, normalizeName(e))
	}
	return out
}

// forExtra reports whether pip installs r for extra on env: the marker
// names extra and holds there. "" asks for a requirement of no extra.
func (r requirement) forExtra(env pep508.Env, extra string) (bool, error) {
	if extra != "" && !slices.Contains(r.extras(), extra) {
		return false, nil
	}
	return r.Marker.Evaluate(env.With("extra", extra))
}

// holds reports whether pip installs r for extra on env. A marker whose
// outcome the target does not decide (it names platform_release, or a
// Python version when the Python is not known) is skipped with a warning
// naming it: unknown is not "installed". Other marker errors are format
// errors of u.
func (o *options) holds(src Source, u string, r requirement, env pep508.Env, extra string) (bool, error) {
	ok, err := r.forExtra(env, extra)
	var unknown *pep508.UnknownError
	switch {
	case errors.As(err, &unknown):
		o.progress(src, fmt.Sprintf("warning: %s: %s skipped: %v", u, r.Name, err))
		return false, nil
	case err != nil:
		return false, &FormatError{URL: u, Err: err}
	}
	return ok, nil
}

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
// frameworks may pin too (nvidia-*, tensorrt*, and in the shape of CUDA 13
// wheels the cuda-toolkit metapackage with its extras, whose component
// pins matrix.DB.ComparePins expands): what two frameworks in one
// environment must agree on.
func exactPin(r requirement) (matrix.Pin, bool) {
	if !strings.HasPrefix(r.Name, "nvidia-") && !strings.HasPrefix(r.Name, "tensorrt") && r.Name != "cuda-toolkit" {
		return matrix.Pin{}, false
	}
	v := r.pin()
	if v == "" {
		return matrix.Pin{}, false
	}
	name := r.Name
	if len(r.Extras) > 0 {
		name += "[" + strings.Join(r.Extras, ",") + "]"
	}
	p, err := matrix.ParsePin(name + "==" + v)
	return p, err == nil
}

// tritonReq is r's specifiers when r is the triton requirement ("==3.2.0",
// "~=3.8.0"); "" otherwise.
func tritonReq(r requirement) string {
	if r.Name != "triton" {
		return ""
	}
	return r.Set.String()
}

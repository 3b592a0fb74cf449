package matrix

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// The NVIDIA container runtime's requirement check, as its two halves run
// it. The line numbers are those of the files at the commits named; the
// table test (TestRuntimeRuleTable, require_test.go) cites them case by
// case and docs/validate.md gives the same table.
//
// nvidia-container-toolkit d34b3046758cb1a5db606b2a39519c731bbf9f56,
// internal/config/image/cuda_image.go (the hook,
// cmd/nvidia-container-runtime-hook, passes each value it returns as one
// --require=VALUE, main.go L145-147):
//
//   - L113-116, L136-146: NVIDIA_DISABLE_REQUIRE, when strconv.ParseBool
//     reads it as true, turns every requirement off;
//   - L118-124: every NVIDIA_REQUIRE_* variable but NVIDIA_REQUIRE_JETPACK*
//     is a requirement, an empty one too (it always holds);
//   - L98-105, L125-132, L193-221: an image that sets CUDA_VERSION and
//     leaves NVIDIA_REQUIRE_CUDA unset or empty is "legacy", and the hook
//     adds cuda>=MAJOR.MINOR of CUDA_VERSION, read by Masterminds/semver's
//     NewVersion; a CUDA_VERSION that does not read fails the hook
//     (container_config.go L208-211: "failed to get requirements"), so no
//     container of the image starts.
//
// libnvidia-container, src/cli/dsl.c at
// 5823754b8577d16fabf25a6ef6a1d58f7ff1e5dd, src/cli/configure.c at
// e27a4a75805021ffdfa9b56403921f50eb3b83d2 and src/cli/cli.h at
// 2e347c194079961526befcfb9d77d4aed7410afc:
//
//   - configure.c L332-360: each requirement is evaluated for each
//     visible GPU (and MIG parent), or once with no device when none is
//     visible; the first that does not hold stops the container;
//   - cli.h L41, configure.c L93-96: at most 32 requirements ("too many
//     requirements");
//   - dsl.c L143-158: space-separated alternatives, tried in order until
//     one holds (L156-157); inside one, comma-separated terms, evaluated in
//     order until one is false (L153-154); empty alternatives (L144-145)
//     and terms (L147-148) are skipped, but an alternative of commas only
//     ends the search with the answer so far;
//   - dsl.c L149-152: a term the evaluator cannot read, reached, is an
//     "invalid expression" and refuses the container on any driver; a term
//     that is never reached is never read (cuda>=12.0 bogus>=1 starts where
//     cuda>=12.0 holds);
//   - dsl.c L159-170: no alternative held: "unsatisfied condition";
//   - dsl.c L100-114 (evaluate_rule): PROPERTY is what comes before the
//     first of < > = ! (none: invalid), OP the run of those characters,
//     read as the first of = != < <= > >= (L26-33) that starts with the
//     run (so cuda!12.0 reads as cuda!=12.0; =>, ==, <> are invalid), VALUE
//     the rest (empty: invalid);
//   - dsl.c L117-127, configure.c L48-53: PROPERTY is cuda, driver, arch
//     or brand, case-insensitively; any other is invalid;
//   - dsl.c L119-122: a false term whose "PROPERTY OP VALUE" text is 128
//     bytes or more is invalid (the error buffer);
//   - dsl.c L35-79 (dsl_compare_version), for cuda (the CUDA the driver
//     reports, major.minor), driver (535.104.05) and arch (the GPU's
//     compute capability, 9.0): both sides digits and dots only (L41-44),
//     compared number by number (L46-63), missing numbers as zero
//     (L64-77); a number that does not start where expected (.5) or
//     reaches 2^64-1 is invalid (L47-50);
//   - dsl.c L81-89 (dsl_compare_string), for brand (NVML's brand name):
//     = and != only, case-insensitively; any other operator is invalid;
//   - configure.c L181-223: arch and brand hold when no GPU is visible
//     (a container that asks for no GPU).
//
// gpuimg judges a container that is given a GPU: without --gpu the GPU's
// compute capability is unknown, and NVML's brand is always unknown (the
// matrix does not record it); an answer that depends on them is a warning.

// Requirement is one NVIDIA_REQUIRE_* value as libnvidia-container splits
// it: alternatives (separated by spaces, empty ones dropped), each a list
// of terms (separated by commas, empty ones dropped) that must all hold.
// An alternative may have no terms (",,").
type Requirement struct {
	Raw  string
	Alts [][]Condition
}

// Condition is one term of a requirement (cuda>=12.2) as evaluate_rule
// reads it (dsl.c L100-127).
type Condition struct {
	// Raw is the term as written.
	Raw string
	// Property is as written; the rules ignore its case.
	Property string
	// Op is one of = != < <= > >=: the operator the runtime reads.
	Op    string
	Value string
	// Invalid, when set, says why the runtime calls the term an invalid
	// expression when it reaches it, on any driver and GPU.
	Invalid string
	// overflow: a number of Value past the first reaches 2^64-1; the
	// runtime calls the term invalid if it compares that far.
	overflow bool
}

func (c Condition) String() string { return c.Raw }

// prop is the property with ASCII letters in lower case: the rules are
// looked up with str_case_equal, strcasecmp in the C locale.
func (c Condition) prop() string {
	b := []byte(c.Property)
	for i, x := range b {
		if 'A' <= x && x <= 'Z' {
			b[i] = x + 'a' - 'A'
		}
	}
	return string(b)
}

// dslOps are dsl.c's operators in its table's order (L26-33).
var dslOps = [...]string{"=", "!=", "<", "<=", ">", ">="}

// dslExprMax is the size of dsl.c's error buffer (EXPR_MAX, L15).
const dslExprMax = 128

// maxRequirements is how many --require libnvidia-container takes (cli.h
// L41, configure.c L93-96).
const maxRequirements = 32

// ParseRequirement splits an NVIDIA_REQUIRE_* value as libnvidia-container
// does. It never fails: a term the runtime cannot read is kept with its
// Invalid reason, as the runtime only finds it out when it reaches it.
func ParseRequirement(s string) Requirement {
	r := Requirement{Raw: s}
	for alt := range strings.SplitSeq(s, " ") {
		if alt == "" {
			continue
		}
		conds := []Condition{}
		for expr := range strings.SplitSeq(alt, ",") {
			if expr != "" {
				conds = append(conds, parseCondition(expr))
			}
		}
		r.Alts = append(r.Alts, conds)
	}
	return r
}

// parseCondition reads one term as evaluate_rule does (dsl.c L100-127).
func parseCondition(expr string) Condition {
	c := Condition{Raw: expr}
	n := strings.IndexAny(expr, "<>=!")
	switch {
	case n == 0:
		c.Invalid = "no property before the operator"
		return c
	case n < 0:
		c.Property = expr
		c.Invalid = "no operator (= != < <= > >=)"
		return c
	}
	c.Property = expr[:n]
	rest := expr[n:]
	m := 0
	for m < len(rest) && strings.IndexByte("<>=!", rest[m]) >= 0 {
		m++
	}
	run := rest[:m]
	c.Value = rest[m:]
	for _, op := range dslOps {
		if strings.HasPrefix(op, run) {
			c.Op = op
			break
		}
	}
	switch {
	case c.Op == "":
		c.Invalid = fmt.Sprintf("operator %q is not one of = != < <= > >=", run)
	case c.Value == "":
		c.Invalid = "no value after the operator"
	}
	if c.Invalid != "" {
		return c
	}
	switch c.prop() {
	case "cuda", "driver", "arch":
		if why, overflow := dslVersionProblem(c.Value); why != "" {
			c.Invalid = fmt.Sprintf("%s takes a version of digits and dots: %s", c.prop(), why)
		} else {
			c.overflow = overflow
		}
	case "brand":
		if c.Op != "=" && c.Op != "!=" {
			c.Invalid = "brand compares with = or != only"
		}
	default:
		c.Invalid = fmt.Sprintf("property %q is not one of cuda, driver, arch, brand", c.Property)
	}
	return c
}

// asciiEqualFold is strcasecmp(a, b) == 0 in the C locale.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// dslVersionProblem is why dsl_compare_version refuses v whatever the
// other side (a version of digits and dots): other characters (L43-44),
// a leading dot or a first number of 2^64-1 or more (L49-50, reached on
// the first comparison). overflow says a later number is that large,
// which fails only if the comparison reaches it.
func dslVersionProblem(v string) (why string, overflow bool) {
	if i := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		return fmt.Sprintf("%q has %q", v, v[i:i+1]), false
	}
	nums, ok := dslNumbers(v)
	if !ok || len(nums) == 0 {
		return fmt.Sprintf("%q starts with a dot", v), false
	}
	if nums[0] == math.MaxUint64 {
		return fmt.Sprintf("%q has a number of 2^64-1 or more", v), false
	}
	return "", slices.Contains(nums[1:], uint64(math.MaxUint64))
}

// dslNumbers are the numbers of a version of digits and dots as
// dsl_compare_version walks it (runs of dots are one separator; numbers
// that reach 2^64-1 read as 2^64-1); ok is false when it starts with a dot.
func dslNumbers(v string) (nums []uint64, ok bool) {
	for v != "" {
		n, rest, ok := strtoumax(v)
		if !ok {
			return nums, false
		}
		nums = append(nums, n)
		v = strings.TrimLeft(rest, ".")
	}
	return nums, true
}

// strtoumax reads the leading digits of v: ok is false when there are
// none; a number past 2^64-1 reads as 2^64-1, as strtoumax clamps it.
func strtoumax(v string) (n uint64, rest string, ok bool) {
	i := 0
	for i < len(v) && '0' <= v[i] && v[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, v, false
	}
	n, err := strconv.ParseUint(v[:i], 10, 64)
	if err != nil {
		n = math.MaxUint64
	}
	return n, v[i:], true
}

// dslCompareVersion is dsl_compare_version (dsl.c L35-79): 1 true, 0
// false, -1 an error.
func dslCompareVersion(v1, op, v2 string) int {
	digitsDots := func(s string) bool { return strings.Trim(s, "0123456789.") == "" }
	if !digitsDots(v1) || !digitsDots(v2) {
		return -1
	}
	b := func(x bool) int {
		if x {
			return 1
		}
		return 0
	}
	for v1 != "" && v2 != "" {
		n1, r1, ok := strtoumax(v1)
		if !ok || n1 == math.MaxUint64 {
			return -1
		}
		n2, r2, ok := strtoumax(v2)
		if !ok || n2 == math.MaxUint64 {
			return -1
		}
		if n1 != n2 {
			switch op {
			case "=":
				return 0
			case "!=":
				return 1
			case "<", "<=":
				return b(n1 < n2)
			default:
				return b(n1 > n2)
			}
		}
		v1, v2 = strings.TrimLeft(r1, "."), strings.TrimLeft(r2, ".")
	}
	v1, v2 = strings.TrimLeft(v1, ".0"), strings.TrimLeft(v2, ".0")
	switch op {
	case "!=":
		return b(v1 != "" || v2 != "")
	case "=":
		return b(v1 == "" && v2 == "")
	case "<=", ">=":
		if v1 == "" && v2 == "" {
			return 1
		}
	}
	if op == "<" || op == "<=" {
		return b(v1 == "" && v2 != "")
	}
	return b(v1 != "" && v2 == "")
}

// termResult is the set of answers evaluate_rule can give for one term.
type termResult uint8

const (
	termTrue termResult = 1 << iota
	termFalse
	termInvalid
)

// Outcome is libnvidia-container's answer to one requirement on one GPU.
type Outcome uint8

// Outcomes: the container starts, or the runtime refuses it, with one of
// dsl_evaluate's two errors.
const (
	// Holds: dsl_evaluate returns 0 and the container starts.
	Holds Outcome = 1 << iota
	// Unsatisfied: no alternative held (dsl.c L159-170).
	Unsatisfied
	// Invalid: the runtime reached a term it cannot read (dsl.c L149-152).
	Invalid
)

// Outcomes is a set of Outcome: more than one when the answer depends on
// a fact gpuimg does not know (the GPU's brand or compute capability, or
// the CUDA of a driver older than the matrix records).
type Outcomes uint8

// Has says whether o is among the outcomes.
func (os Outcomes) Has(o Outcome) bool { return uint8(os)&uint8(o) != 0 }

// Refused says whether the runtime refuses the container whatever gpuimg
// does not know.
func (os Outcomes) Refused() bool { return os != 0 && !os.Has(Holds) }

// Sure says whether the answer does not depend on what gpuimg does not
// know.
func (os Outcomes) Sure() bool { return os == Outcomes(Holds) || os.Refused() }

// RuntimeHost is what the runtime compares a requirement with. Zero
// fields are unknown.
type RuntimeHost struct {
	Driver Version
	// CUDA is the CUDA version the driver reports (major.minor).
	CUDA Version
	// CUDABelow, when CUDA is unknown, is a CUDA (major.minor) the
	// driver's is older than: the oldest release whose floor the driver
	// is below.
	CUDABelow Version
	// Arch is the GPU's compute capability, 9.0.
	Arch string
	// Brand is NVML's brand name of the GPU (Tesla, GeForce, …).
	Brand string
	// GPU names the GPU in messages; it is not compared.
	GPU string
}

// have is the host's value of property p as the runtime formats it, ""
// when unknown.
func (h RuntimeHost) have(p string) string {
	switch p {
	case "cuda":
		if !h.CUDA.IsZero() {
			return fmt.Sprintf("%d.%d", h.CUDA.Major(), h.CUDA.Minor()) // "%u.%u" (libnvidia-container src/driver.c)
		}
	case "driver":
		if !h.Driver.IsZero() {
			return h.Driver.String()
		}
	case "arch":
		return h.Arch
	case "brand":
		return h.Brand
	}
	return ""
}

// eval is what evaluate_rule can answer for c on h (dsl.c L100-127).
func (c Condition) eval(h RuntimeHost) termResult {
	if c.Invalid != "" {
		return termInvalid
	}
	// A false term whose text fills the error buffer is invalid (L119-122).
	falseIs := termFalse
	if len(c.Property)+1+len(c.Op)+1+len(c.Value) >= dslExprMax {
		falseIs = termInvalid
	}
	have := h.have(c.prop())
	if have == "" {
		out := termTrue | falseIs
		if c.prop() == "cuda" && !h.CUDABelow.IsZero() && dslCompareVersion(fmt.Sprintf("%d.%d", h.CUDABelow.Major(), h.CUDABelow.Minor()), "<=", c.Value) == 1 {
			// The driver reports less than CUDABelow <= VALUE.
			out = termTrue
			if c.Op == ">=" || c.Op == ">" || c.Op == "=" {
				out = falseIs
			}
		}
		if c.overflow {
			out |= termInvalid
		}
		return out
	}
	var r int
	if c.prop() == "brand" {
		r = 0
		if asciiEqualFold(have, c.Value) == (c.Op == "=") {
			r = 1
		}
	} else {
		r = dslCompareVersion(have, c.Op, c.Value)
	}
	switch r {
	case 1:
		return termTrue
	case 0:
		return falseIs
	}
	return termInvalid
}

// Outcomes are libnvidia-container's possible answers for r on h
// (dsl_evaluate, dsl.c L130-177). An unknown brand is tried as each brand
// the requirement names and as one it does not; any other unknown fact
// makes each term on it either true or false.
func (r Requirement) Outcomes(h RuntimeHost) Outcomes {
	if h.Brand != "" {
		return r.walk(h)
	}
	var brands []string
	for _, alt := range r.Alts {
		for _, c := range alt {
			if c.prop() == "brand" && c.Invalid == "" && !slices.ContainsFunc(brands, func(b string) bool { return asciiEqualFold(b, c.Value) }) {
				brands = append(brands, c.Value)
			}
		}
	}
	if len(brands) == 0 || len(brands) > 64 {
		return r.walk(h)
	}
	var out Outcomes
	for _, b := range append(brands, "\x00none") {
		h.Brand = b
		out |= r.walk(h)
	}
	return out
}

// walk runs dsl_evaluate's loops backwards, so that each term is
// evaluated once however many answers an unknown fact allows: at[t] is
// the answer from term t of the alternative on, next the answer from the
// next alternative on.
func (r Requirement) walk(h RuntimeHost) Outcomes {
	next := Outcomes(Unsatisfied) // past the last alternative: ret is false
	if len(r.Alts) == 0 {
		return Outcomes(Holds) // ret starts true (L136)
	}
	for a, alt := range slices.Backward(r.Alts) {
		// Every term held (L156-157): ret is the last term's, true; in an
		// alternative of commas only it is still what it was: true for
		// the first alternative, false after one that failed.
		cur := Outcomes(Unsatisfied)
		if len(alt) > 0 || a == 0 {
			cur = Outcomes(Holds)
		}
		for _, c := range slices.Backward(alt) {
			res := c.eval(h)
			var o Outcomes
			if res&termInvalid != 0 {
				o |= Outcomes(Invalid)
			}
			if res&termTrue != 0 {
				o |= cur
			}
			if res&termFalse != 0 {
				o |= next
			}
			cur = o
		}
		next = cur
	}
	return next
}

// InvalidTerms are the terms the runtime calls invalid expressions when
// it reaches them, on any driver and GPU, with why.
func (r Requirement) InvalidTerms() []string {
	var out []string
	for _, alt := range r.Alts {
		for _, c := range alt {
			if c.Invalid != "" {
				out = append(out, fmt.Sprintf("%s (%s)", c.Raw, c.Invalid))
			} else if len(c.Property)+len(c.Op)+len(c.Value)+2 >= dslExprMax {
				out = append(out, fmt.Sprintf("%s (%d bytes: when false, too long for the runtime's 128-byte message buffer)", c.Raw, len(c.Raw)))
			}
		}
	}
	return out
}

// CUDAFloor is the lowest CUDA (major.minor, as a driver reports it) that
// lets an alternative of r hold through its cuda>=, cuda> or cuda=
// terms: cuda>=12.2 gives 12.2, cuda>12.2 and cuda>=12.2.1 give 12.3 (a
// driver reports 12.2 or 12.3, never 12.2.1), cuda>=12.0 cuda>=12.4 gives
// 12.0 (alternatives: the first that holds is enough). Alternatives that
// cannot hold (an invalid term, or an alternative of commas only after
// the first, which also ends the search) are left out, and so are those
// bounded by the driver instead (NVIDIA's brand=tesla,driver>=470,
// driver<471: judged against a driver, not here). ok is false when an
// alternative bounds neither, so that any CUDA passes, or when none is
// left.
func (r Requirement) CUDAFloor() (v Version, ok bool) {
	var low []uint64
	for a, alt := range r.Alts {
		if len(alt) == 0 {
			if a == 0 {
				return Version{}, false
			}
			break
		}
		var lb []uint64
		driverBound, never := false, false
		for _, c := range alt {
			if c.Invalid != "" {
				never = true
				break
			}
			switch c.prop() {
			case "driver":
				if c.Op == ">=" || c.Op == ">" || c.Op == "=" {
					driverBound = true
				}
			case "cuda":
				f, possible, bounds := cudaTermFloor(c)
				if !possible {
					never = true
				} else if bounds && (lb == nil || less2(lb, f)) {
					lb = f
				}
			}
		}
		switch {
		case never:
		case lb != nil:
			if low == nil || less2(lb, low) {
				low = lb
			}
		case !driverBound:
			return Version{}, false
		}
	}
	if low == nil {
		return Version{}, false
	}
	v, err := ParseVersion(fmt.Sprintf("%d.%d", low[0], low[1]))
	return v, err == nil
}

func less2(a, b []uint64) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// cudaTermFloor is the lowest major.minor for which cuda OP VALUE holds,
// when OP bounds it from below; possible is false when no major.minor
// makes it hold (cuda=12.2.1).
func cudaTermFloor(c Condition) (floor []uint64, possible, bounds bool) {
	nums, _ := dslNumbers(c.Value)
	nums = append(nums, 0, 0)
	maj, mnr, rest := nums[0], nums[1], slices.ContainsFunc(nums[2:], func(n uint64) bool { return n != 0 })
	switch c.Op {
	case ">=":
		if rest {
			mnr++
		}
	case ">":
		mnr++
	case "=":
		if rest {
			return nil, false, false
		}
	default:
		return nil, true, false
	}
	if mnr == 0 && (c.Op == ">" || rest) && nums[1] == math.MaxUint64 {
		return nil, false, false // the minor wrapped round
	}
	return []uint64{maj, mnr}, true, true
}

// ParseRequireCUDA is the CUDA floor (Requirement.CUDAFloor) of an
// NVIDIA_REQUIRE_CUDA value ("cuda>=12.2 brand=tesla,driver>=470,…"); ok
// is false when any CUDA can pass it or no alternative can hold.
func ParseRequireCUDA(req string) (v Version, ok bool) {
	return ParseRequirement(req).CUDAFloor()
}

// RuntimeReq is one requirement the NVIDIA container toolkit's hook hands
// libnvidia-container (--require=VALUE).
type RuntimeReq struct {
	// Var is the variable it comes from: an NVIDIA_REQUIRE_* variable, or
	// CUDA_VERSION for the legacy rule.
	Var   string
	Value string
	// Legacy: the toolkit's own cuda>=MAJOR.MINOR for an image that sets
	// CUDA_VERSION and no NVIDIA_REQUIRE_CUDA.
	Legacy bool
}

// What names the requirement in messages: NVIDIA_REQUIRE_CUDA=cuda>=12.2,
// or the legacy rule's origin.
func (q RuntimeReq) What(env map[string]string) string {
	if q.Value == "" && !q.Legacy {
		return q.Var + " (empty)"
	}
	if q.Legacy {
		return fmt.Sprintf("%s (the NVIDIA container toolkit's own requirement for an image that sets CUDA_VERSION=%s and no NVIDIA_REQUIRE_CUDA)", q.Value, env["CUDA_VERSION"])
	}
	return q.Var + "=" + q.Value
}

// RuntimeEnv are the requirements the NVIDIA container toolkit's hook
// passes to libnvidia-container for an image whose environment is env
// (cuda_image.go GetRequirements): every NVIDIA_REQUIRE_* value but
// NVIDIA_REQUIRE_JETPACK*, sorted by variable name, then, for a legacy
// image (CUDA_VERSION set, NVIDIA_REQUIRE_CUDA unset or empty),
// cuda>=MAJOR.MINOR of CUDA_VERSION. disabled says NVIDIA_DISABLE_REQUIRE
// turns the check off (true as strconv.ParseBool reads it). err is set
// when CUDA_VERSION does not read as a version: the hook fails and no
// container of the image starts.
func RuntimeEnv(env map[string]string) (reqs []RuntimeReq, disabled bool, err error) {
	if v, ok := env["NVIDIA_DISABLE_REQUIRE"]; ok {
		if b, _ := strconv.ParseBool(v); b {
			return nil, true, nil
		}
	}
	for k, v := range env {
		if strings.HasPrefix(k, "NVIDIA_REQUIRE_") && !strings.HasPrefix(k, "NVIDIA_REQUIRE_JETPACK") {
			reqs = append(reqs, RuntimeReq{Var: k, Value: v})
		}
	}
	slices.SortFunc(reqs, func(a, b RuntimeReq) int { return strings.Compare(a.Var, b.Var) })
	if cv := env["CUDA_VERSION"]; cv != "" && env["NVIDIA_REQUIRE_CUDA"] == "" {
		mm, err := LegacyCUDARequire(cv)
		if err != nil {
			return reqs, false, err
		}
		reqs = append(reqs, RuntimeReq{Var: "CUDA_VERSION", Value: mm, Legacy: true})
	}
	return reqs, false, nil
}

// RuntimeEnviron is the part of an environment ("KEY=VALUE" as
// os.Environ gives it, later ones winning) that RuntimeEnv reads:
// NVIDIA_REQUIRE_*, CUDA_VERSION and NVIDIA_DISABLE_REQUIRE. Inside a
// container it is the image's.
func RuntimeEnviron(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "NVIDIA_REQUIRE_") || k == "CUDA_VERSION" || k == "NVIDIA_DISABLE_REQUIRE" {
			env[k] = v
		}
	}
	return env
}

// LegacyCUDARequire is the requirement the NVIDIA container toolkit adds
// for an image that sets CUDA_VERSION=cudaVersion and no
// NVIDIA_REQUIRE_CUDA: cuda>=MAJOR.MINOR, read as its legacyVersion and
// parseMajorMinorVersion do (cuda_image.go L193-221, Masterminds/semver's
// NewVersion, the version the toolkit and gpuimg both use; major and
// minor must fit in 32 bits).
func LegacyCUDARequire(cudaVersion string) (string, error) {
	sv, err := semver.NewVersion(cudaVersion)
	if err != nil {
		return "", fmt.Errorf("CUDA_VERSION=%q is not a version the NVIDIA container toolkit reads: %w", cudaVersion, err)
	}
	if sv.Major() > math.MaxUint32 || sv.Minor() > math.MaxUint32 {
		return "", fmt.Errorf("CUDA_VERSION=%q: the NVIDIA container toolkit reads major and minor as 32-bit numbers", cudaVersion)
	}
	return fmt.Sprintf("cuda>=%d.%d", sv.Major(), sv.Minor()), nil
}

// ReportedCUDA is the CUDA version driver d reports (nvidia-smi's "CUDA
// Version", NVML's nvmlSystemGetCudaDriverVersion): the newest CUDA
// release whose driver floor d meets, as major.minor, with that release.
// 535.54.03 reports 12.2 (12.2.0's floor), 550.54.14 reports 12.4. ok is
// false when d is below every recorded floor. The answer never overstates
// a driver: drivers of a branch that has no toolkit of its own report one
// minor more (R565 reports 12.7, for which NVIDIA ships no toolkit), which
// changes no answer for an image of a released CUDA.
func (db *DB) ReportedCUDA(d Version) (cuda Version, from CUDARelease, ok bool) {
	for _, r := range db.CUDA { // newest first
		if !r.MinDriver.IsZero() && r.MinDriver.Compare(d) <= 0 {
			return r.Version.Trunc(2), r, true
		}
	}
	return Version{}, CUDARelease{}, false
}

// oldestFloor is the oldest CUDA release with a driver floor.
func (db *DB) oldestFloor() (CUDARelease, bool) {
	var out CUDARelease
	for _, r := range db.CUDA {
		if !r.MinDriver.IsZero() && (out.Version.IsZero() || r.Version.Less(out.Version)) {
			out = r
		}
	}
	return out, !out.Version.IsZero()
}

// firstDriverFor is the lowest driver that reports CUDA cuda (major.minor)
// or newer: the lowest floor of the releases of that minor and later; ok
// is false without a db or a version.
func (db *DB) firstDriverFor(cuda Version) (Version, bool) {
	var low Version
	if db == nil || cuda.IsZero() {
		return low, false
	}
	for _, r := range db.CUDA {
		if r.MinDriver.IsZero() || r.Version.Trunc(2).Less(cuda.Trunc(2)) {
			continue
		}
		if low.IsZero() || r.MinDriver.Less(low) {
			low = r.MinDriver
		}
	}
	return low, !low.IsZero()
}

// ComputeCapability is arch (sm_90, sm_120) as NVML and the runtime's
// arch property write it: 9.0, 12.0; "" when arch is not sm_ and digits.
func ComputeCapability(arch string) string {
	n, ok := strings.CutPrefix(arch, "sm_")
	if !ok || len(n) < 2 || strings.Trim(n, "0123456789") != "" {
		return ""
	}
	return strings.TrimLeft(n[:len(n)-1], "0") + "." + n[len(n)-1:]
}

// JudgeRuntime is the finding called name for whether the NVIDIA
// container runtime starts an image whose environment is env on driver d,
// with each of gpus (none: any GPU, whose architecture and brand are then
// unknown): pass when every requirement the toolkit passes holds
// (RuntimeEnv: NVIDIA_REQUIRE_*, and cuda>=MAJOR.MINOR of CUDA_VERSION for
// an image without NVIDIA_REQUIRE_CUDA), fail when the runtime refuses
// the container whatever gpuimg does not know, warn when the answer
// depends on it (the GPU's brand). It is the one rule matrix check,
// validate --driver, validate --target, images import --target and
// publish's validation use.
func (db *DB) JudgeRuntime(name string, env map[string]string, d Version, gpus []GPU) Finding {
	h := RuntimeHost{Driver: d}
	reports := fmt.Sprintf("driver %s reports CUDA unknown (below every driver floor the matrix records)", d)
	if cuda, from, ok := db.ReportedCUDA(d); ok {
		h.CUDA = cuda
		reports = fmt.Sprintf("driver %s reports CUDA %s (the newest release whose floor it meets: CUDA %s, %s)", d, cuda, from.Version, from.MinDriver)
	} else if oldest, ok := db.oldestFloor(); ok {
		h.CUDABelow = oldest.Version.Trunc(2)
		reports = fmt.Sprintf("driver %s reports a CUDA older than %s (it is below the floor of every CUDA release the matrix records; the oldest, CUDA %s, needs %s)", d, h.CUDABelow, oldest.Version, oldest.MinDriver)
	}
	var hosts []RuntimeHost
	for _, g := range gpus {
		gh := h
		gh.Arch = ComputeCapability(g.Arch)
		gh.GPU = g.Name
		hosts = append(hosts, gh)
	}
	if len(hosts) == 0 {
		hosts = []RuntimeHost{h}
	}
	return db.JudgeRuntimeOn(name, env, reports, hosts)
}

// JudgeRuntimeOn is JudgeRuntime on hosts whose facts are given (one per
// GPU, as a probe reads them from NVML); reports says where the reported
// CUDA came from and starts the message.
func (db *DB) JudgeRuntimeOn(name string, env map[string]string, reports string, hosts []RuntimeHost) Finding {
	d := hosts[0].Driver
	reqs, disabled, err := RuntimeEnv(env)
	switch {
	case disabled:
		return Finding{Name: name, Status: Pass, Message: fmt.Sprintf("NVIDIA_DISABLE_REQUIRE=%s: the NVIDIA container runtime checks no requirement, so it starts the image on driver %s", env["NVIDIA_DISABLE_REQUIRE"], d)}
	case err != nil:
		return Finding{Name: name, Status: Fail, Message: fmt.Sprintf("%v: its hook fails (\"failed to get requirements\") and no container of the image starts on any driver; set CUDA_VERSION to MAJOR.MINOR.PATCH or set NVIDIA_REQUIRE_CUDA", err)}
	case len(reqs) == 0:
		return Finding{Name: name, Status: Pass, Message: fmt.Sprintf("the image sets no NVIDIA_REQUIRE_* and no CUDA_VERSION: the NVIDIA container runtime starts it on driver %s", d)}
	case len(reqs) > maxRequirements:
		return Finding{Name: name, Status: Fail, Message: fmt.Sprintf("the image has %d requirements (NVIDIA_REQUIRE_* variables and CUDA_VERSION's): libnvidia-container takes at most %d (\"too many requirements\") and starts no container of it; merge them", len(reqs), maxRequirements)}
	}
	var held, unsure, notes []string
	var unknownFacts []string
	for _, q := range reqs {
		what := q.What(env)
		r := ParseRequirement(q.Value)
		bad := r.InvalidTerms()
		for _, h := range hosts {
			on := ""
			if h.GPU != "" {
				on = " on " + h.GPU
			}
			o := r.Outcomes(h)
			switch {
			case o.Refused() && !o.Has(Unsatisfied):
				return Finding{Name: name, Status: Fail, Message: fmt.Sprintf("%s; %s: the NVIDIA container runtime reaches a term it cannot read%s, calls it an invalid expression and refuses to start the image; fix the value or remove it (invalid: %s)", reports, what, on, strings.Join(bad, "; "))}
			case o.Refused():
				inv := ""
				if o.Has(Invalid) {
					inv = fmt.Sprintf(" (or, depending on the GPU, an invalid expression: %s)", strings.Join(bad, "; "))
				}
				return Finding{Name: name, Status: Fail, Message: fmt.Sprintf("%s; %s does not hold%s, so the NVIDIA container runtime refuses to start the image (unsatisfied condition)%s%s", reports, what, on, inv, db.requireHint(r, d))}
			case !o.Sure():
				unsure = append(unsure, fmt.Sprintf("%s%s holds only if %s", what, on, r.unknownAlts(h)))
				unknownFacts = append(unknownFacts, h.unknowns(r)...)
			default:
				held = append(held, what+on)
				if len(bad) > 0 {
					notes = append(notes, fmt.Sprintf("%s never reaches %s, which it would call an invalid expression: fix it, or drivers on which the alternatives before it fail refuse the image", what, strings.Join(bad, "; ")))
				}
			}
		}
	}
	note := ""
	if len(notes) > 0 {
		note = " (" + strings.Join(slices.Compact(notes), "; ") + ")"
	}
	if len(unsure) > 0 {
		slices.Sort(unknownFacts)
		return Finding{Name: name, Status: Warn, Message: fmt.Sprintf("%s; %s, which gpuimg cannot tell (%s): the NVIDIA container runtime may refuse the image%s", reports, strings.Join(unsure, "; "), strings.Join(slices.Compact(unknownFacts), "; "), note)}
	}
	return Finding{Name: name, Status: Pass, Message: fmt.Sprintf("%s; %s holds, so the NVIDIA container runtime starts the image%s", reports, strings.Join(held, ", "), note)}
}

// unknowns names the facts of h that r compares and gpuimg does not know.
func (h RuntimeHost) unknowns(r Requirement) []string {
	var u []string
	for _, p := range r.properties() {
		if h.have(p) != "" {
			continue
		}
		switch p {
		case "cuda":
			u = append(u, "the CUDA the driver reports")
		case "driver":
			u = append(u, "the driver")
		case "arch":
			u = append(u, "the GPU's architecture: name it with --gpu")
		case "brand":
			u = append(u, "the GPU's NVML brand, which the matrix does not record")
		}
	}
	return u
}

// properties are the properties r's readable terms compare, lower case.
func (r Requirement) properties() []string {
	var ps []string
	for _, alt := range r.Alts {
		for _, c := range alt {
			if c.Invalid == "" && !slices.Contains(ps, c.prop()) {
				ps = append(ps, c.prop())
			}
		}
	}
	return ps
}

// unknownAlts names the alternatives that may hold on h: those with a
// term on a fact gpuimg does not know and no term that is false.
func (r Requirement) unknownAlts(h RuntimeHost) string {
	var alts []string
	for _, alt := range r.Alts {
		maybe, open := true, false
		for _, c := range alt {
			res := c.eval(h)
			if res&termTrue == 0 {
				maybe = false
				break
			}
			if res != termTrue {
				open = true
			}
		}
		if maybe && open {
			s := make([]string, len(alt))
			for i, c := range alt {
				s[i] = c.Raw
			}
			alts = append(alts, strings.Join(s, ","))
		}
	}
	return "one of " + strings.Join(alts, " | ") + " holds"
}

// requireHint says how to get past a requirement that fails on driver d:
// the lowest driver that reports the CUDA of its CUDA floor, a build for
// the driver, or turning the check off.
func (db *DB) requireHint(r Requirement, d Version) string {
	up := "update the driver"
	if need, ok := r.CUDAFloor(); ok {
		if f, ok := db.firstDriverFor(need); ok {
			up = fmt.Sprintf("update the driver to %s or newer (the first that reports CUDA %s)", f, need.Trunc(2))
		}
	}
	return fmt.Sprintf("; %s, rebuild for this driver (gpuimg build --driver %s --compat), or set NVIDIA_DISABLE_REQUIRE=true", up, d)
}

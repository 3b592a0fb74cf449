package matrix

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The NVIDIA container runtime's requirement check, as libnvidia-container
// runs it (src/cli/dsl.c, src/cli/configure.c; nvidia-container-toolkit's
// hook passes every NVIDIA_REQUIRE_* variable of the image except
// NVIDIA_REQUIRE_JETPACK* as one --require each, none when
// NVIDIA_DISABLE_REQUIRE is true, internal/config/image/cuda_image.go):
//
//   - the variables are ANDed; inside one value, space-separated terms are
//     alternatives (OR) and comma-separated conditions inside a term must
//     all hold (AND);
//   - a condition is PROPERTY OP VALUE with OP one of = != < <= > >= and
//     PROPERTY one of cuda, driver, arch, brand (case-insensitive); any
//     other property, operator or an empty value is an "invalid expression"
//     and the container does not start;
//   - cuda is the CUDA version the driver reports (NVML's
//     nvmlSystemGetCudaDriverVersion, major.minor, what nvidia-smi prints),
//     driver the driver version (535.104.05), arch the GPU's compute
//     capability (9.0), brand NVML's brand name (Tesla, GeForce, …;
//     compared case-insensitively, = and != only); versions compare part by
//     part as numbers, missing parts as zero;
//   - with GPUs visible, each GPU is checked; arch and brand hold for any
//     GPU when none is visible.

// Requirement is one parsed NVIDIA_REQUIRE_* value: alternatives, each a
// list of conditions that must all hold. A Requirement with no
// alternatives always holds.
type Requirement struct {
	Raw  string
	Alts [][]Condition
}

// Condition is one PROPERTY OP VALUE of a requirement (cuda>=12.2).
type Condition struct {
	Property string // cuda, driver, arch or brand, lower case
	Op       string // = != < <= > >=
	Value    string
}

func (c Condition) String() string { return c.Property + c.Op + c.Value }

// ParseRequirement parses an NVIDIA_REQUIRE_* value with the runtime's
// grammar; an error is what makes the runtime refuse every container with
// it ("invalid expression").
func ParseRequirement(s string) (Requirement, error) {
	r := Requirement{Raw: s}
	for alt := range strings.SplitSeq(s, " ") {
		var conds []Condition
		for expr := range strings.SplitSeq(alt, ",") {
			if expr == "" {
				continue
			}
			c, err := parseCondition(expr)
			if err != nil {
				return Requirement{}, err
			}
			conds = append(conds, c)
		}
		if len(conds) > 0 {
			r.Alts = append(r.Alts, conds)
		}
	}
	return r, nil
}

func parseCondition(expr string) (Condition, error) {
	n := strings.IndexAny(expr, "<>=!")
	if n <= 0 {
		return Condition{}, fmt.Errorf("%q is not PROPERTY OP VALUE (cuda>=12.2)", expr)
	}
	rest := expr[n:]
	m := 0
	for m < len(rest) && strings.ContainsRune("<>=!", rune(rest[m])) {
		m++
	}
	c := Condition{Property: strings.ToLower(expr[:n]), Op: rest[:m], Value: rest[m:]}
	if !slices.Contains([]string{"=", "!=", "<", "<=", ">", ">="}, c.Op) {
		return Condition{}, fmt.Errorf("%q: operator %q is not one of = != < <= > >=", expr, c.Op)
	}
	if c.Value == "" {
		return Condition{}, fmt.Errorf("%q has no value", expr)
	}
	switch c.Property {
	case "cuda", "driver", "arch":
		if strings.Trim(c.Value, "0123456789.") != "" {
			return Condition{}, fmt.Errorf("%q: %s takes a version of digits and dots", expr, c.Property)
		}
	case "brand":
		if c.Op != "=" && c.Op != "!=" {
			return Condition{}, fmt.Errorf("%q: brand compares with = or != only", expr)
		}
	default:
		return Condition{}, fmt.Errorf("%q: property %q is not one of cuda, driver, arch, brand", expr, c.Property)
	}
	return c, nil
}

// Truth is a three-valued answer: the runtime's answer can depend on a
// fact gpuimg does not know (the GPU's brand, or its architecture when no
// GPU is named).
type Truth int8

// Truth values.
const (
	False   Truth = -1
	Unknown Truth = 0
	True    Truth = 1
)

// RuntimeHost is what the runtime compares a requirement with. Zero
// fields are unknown.
type RuntimeHost struct {
	Driver Version
	// CUDA is the CUDA version the driver reports (major.minor).
	CUDA Version
	// Arch is the GPU's compute capability, 9.0.
	Arch string
	// Brand is NVML's brand name of the GPU (Tesla, GeForce, …).
	Brand string
	// GPU names the GPU in messages; it is not compared.
	GPU string
}

// Eval is the requirement's truth on host h.
func (r Requirement) Eval(h RuntimeHost) Truth {
	if len(r.Alts) == 0 {
		return True
	}
	out := False
	for _, alt := range r.Alts {
		out = max(out, evalAll(alt, h))
	}
	return out
}

func evalAll(conds []Condition, h RuntimeHost) Truth {
	out := True
	for _, c := range conds {
		out = min(out, c.eval(h))
	}
	return out
}

func (c Condition) eval(h RuntimeHost) Truth {
	var have string
	switch c.Property {
	case "cuda":
		if !h.CUDA.IsZero() {
			have = h.CUDA.Trunc(2).String()
		}
	case "driver":
		if !h.Driver.IsZero() {
			have = h.Driver.String()
		}
	case "arch":
		have = h.Arch
	case "brand":
		if h.Brand == "" {
			return Unknown
		}
		return truth(strings.EqualFold(h.Brand, c.Value) == (c.Op == "="))
	}
	if have == "" {
		return Unknown
	}
	d := compareDotted(have, c.Value)
	switch c.Op {
	case "=":
		return truth(d == 0)
	case "!=":
		return truth(d != 0)
	case "<":
		return truth(d < 0)
	case "<=":
		return truth(d <= 0)
	case ">":
		return truth(d > 0)
	}
	return truth(d >= 0)
}

func truth(b bool) Truth {
	if b {
		return True
	}
	return False
}

// compareDotted compares two versions of digits and dots part by part as
// numbers, missing parts as zero (dsl_compare_version).
func compareDotted(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y uint64
		if i < len(pa) {
			x, _ = strconv.ParseUint(pa[i], 10, 64)
		}
		if i < len(pb) {
			y, _ = strconv.ParseUint(pb[i], 10, 64)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
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

// RuntimeEnv is what the runtime reads of an image's environment: every
// NVIDIA_REQUIRE_* value but NVIDIA_REQUIRE_JETPACK*, sorted by variable
// name, and whether NVIDIA_DISABLE_REQUIRE turns the check off (a true
// value as Go's strconv.ParseBool reads it).
func RuntimeEnv(env map[string]string) (reqs [][2]string, disabled bool) {
	if v, ok := env["NVIDIA_DISABLE_REQUIRE"]; ok {
		if b, err := strconv.ParseBool(v); err == nil && b {
			return nil, true
		}
	}
	for k, v := range env {
		if strings.HasPrefix(k, "NVIDIA_REQUIRE_") && !strings.HasPrefix(k, "NVIDIA_REQUIRE_JETPACK") {
			reqs = append(reqs, [2]string{k, v})
		}
	}
	slices.SortFunc(reqs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return reqs, false
}

// JudgeRuntime is the finding called name for whether the NVIDIA
// container runtime starts an image whose environment is env on driver d,
// with each of gpus (none: any GPU, whose architecture and brand are then
// unknown): pass when every NVIDIA_REQUIRE_* holds, fail when one cannot
// (the runtime refuses the container), warn when the answer depends on
// what gpuimg does not know (the GPU's brand). It is the one rule matrix
// check, validate --driver and validate --target use.
func (db *DB) JudgeRuntime(name string, env map[string]string, d Version, gpus []GPU) Finding {
	h := RuntimeHost{Driver: d}
	reports := fmt.Sprintf("driver %s reports CUDA unknown (below every driver floor the matrix records)", d)
	if cuda, from, ok := db.ReportedCUDA(d); ok {
		h.CUDA = cuda
		reports = fmt.Sprintf("driver %s reports CUDA %s (the newest release whose floor it meets: CUDA %s, %s)", d, cuda, from.Version, from.MinDriver)
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
	reqs, disabled := RuntimeEnv(env)
	if disabled {
		return Finding{Name: name, Status: Pass, Message: fmt.Sprintf("NVIDIA_DISABLE_REQUIRE=%s: the NVIDIA container runtime checks no requirement, so it starts the image on driver %s", env["NVIDIA_DISABLE_REQUIRE"], d)}
	}
	if len(reqs) == 0 {
		return Finding{Name: name, Status: Pass, Message: fmt.Sprintf("the image sets no NVIDIA_REQUIRE_*: the NVIDIA container runtime starts it on driver %s", d)}
	}
	var held, unsure []string
	for _, kv := range reqs {
		what := kv[0] + "=" + kv[1]
		r, err := ParseRequirement(kv[1])
		if err != nil {
			return Finding{Name: name, Status: Fail, Message: fmt.Sprintf("%s is an invalid expression (%v): the NVIDIA container runtime refuses to start the image on any driver; fix the value or remove it", what, err)}
		}
		for _, h := range hosts {
			on := ""
			if h.GPU != "" {
				on = " on " + h.GPU
			}
			switch r.Eval(h) {
			case False:
				return Finding{Name: name, Status: Fail, Message: fmt.Sprintf("%s; %s does not hold%s, so the NVIDIA container runtime refuses to start the image (unsatisfied condition)%s", reports, what, on, db.requireHint(r, d))}
			case Unknown:
				unsure = append(unsure, fmt.Sprintf("%s%s holds only if %s", what, on, r.unknownAlts(h)))
			default:
				held = append(held, what+on)
			}
		}
	}
	if len(unsure) > 0 {
		return Finding{Name: name, Status: Warn, Message: fmt.Sprintf("%s; %s, which gpuimg cannot tell (%s): the NVIDIA container runtime may refuse the image", reports, strings.Join(unsure, "; "), hosts[0].unknowns())}
	}
	return Finding{Name: name, Status: Pass, Message: fmt.Sprintf("%s; %s holds, so the NVIDIA container runtime starts the image", reports, strings.Join(held, ", "))}
}

// unknowns names the facts of h gpuimg does not know.
func (h RuntimeHost) unknowns() string {
	var u []string
	if h.CUDA.IsZero() {
		u = append(u, "the CUDA the driver reports")
	}
	if h.Arch == "" {
		u = append(u, "the GPU's architecture: name it with --gpu")
	}
	return strings.Join(append(u, "the GPU's NVML brand, which the matrix does not record"), "; ")
}

// unknownAlts names the alternatives whose truth on h is unknown.
func (r Requirement) unknownAlts(h RuntimeHost) string {
	var alts []string
	for _, alt := range r.Alts {
		if evalAll(alt, h) == Unknown {
			s := make([]string, len(alt))
			for i, c := range alt {
				s[i] = c.String()
			}
			alts = append(alts, strings.Join(s, ","))
		}
	}
	return "one of " + strings.Join(alts, " | ") + " holds"
}

// requireHint says how to get past a requirement that fails on driver d:
// the lowest driver that reports the CUDA its easiest cuda>= alternative
// asks for, a build for the driver, or turning the check off.
func (db *DB) requireHint(r Requirement, d Version) string {
	var need Version
	for _, alt := range r.Alts {
		for _, c := range alt {
			if c.Property != "cuda" || (c.Op != ">=" && c.Op != ">") {
				continue
			}
			if v, err := ParseVersion(c.Value); err == nil && (need.IsZero() || v.Less(need)) {
				need = v
			}
		}
	}
	up := "update the driver"
	if f, ok := db.firstDriverFor(need); ok {
		up = fmt.Sprintf("update the driver to %s or newer (the first that reports CUDA %s)", f, need.Trunc(2))
	}
	return fmt.Sprintf("; %s, rebuild for this driver (gpuimg build --driver %s --compat), or set NVIDIA_DISABLE_REQUIRE=true", up, d)
}

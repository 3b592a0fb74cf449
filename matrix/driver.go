package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// DriverFloors are the two lowest Linux drivers that run some CUDA code:
// Strict runs everything; Compat runs it only under CUDA minor-version
// compatibility (no PTX JIT, APIs newer than the driver fail).
type DriverFloors struct {
	Strict Version
	// Compat is zero when not known; it is never above Strict.
	Compat Version
	// Of names whose floors they are in messages: "the stack", "CUDA 12.2".
	Of string
	// Detail, when set, follows the strict floor in messages in
	// parentheses: "CUDA 12.2.2, from the dev.gpuimg.stack label".
	Detail string
}

// DriverFit is how a driver stands against DriverFloors.
type DriverFit int

// Driver fits, worst last.
const (
	// DriverFloorUnknown: there is no strict floor to judge against.
	DriverFloorUnknown DriverFit = iota
	// DriverMeetsFloor: at or above the strict floor.
	DriverMeetsFloor
	// DriverCompatOnly: below the strict floor, at or above the compat one.
	DriverCompatOnly
	// DriverTooOld: below both floors.
	DriverTooOld
)

// Fit judges driver d against the floors.
func (f DriverFloors) Fit(d Version) DriverFit {
	switch {
	case f.Strict.IsZero():
		return DriverFloorUnknown
	case d.Compare(f.Strict) >= 0:
		return DriverMeetsFloor
	case !f.Compat.IsZero() && d.Compare(f.Compat) >= 0:
		return DriverCompatOnly
	}
	return DriverTooOld
}

// Judge is the finding called name for driver d: pass at or above the
// strict floor, warn under minor-version compatibility, fail below both,
// and warn when there is no floor to judge against.
func (f DriverFloors) Judge(name string, d Version) Finding {
	detail := ""
	if f.Detail != "" {
		detail = " (" + f.Detail + ")"
	}
	switch f.Fit(d) {
	case DriverFloorUnknown:
		return Finding{Name: name, Status: Warn, Message: fmt.Sprintf("the matrix has no driver floor for %s", f.Of)}
	case DriverMeetsFloor:
		return Finding{Name: name, Status: Pass, Message: fmt.Sprintf("driver %s meets %s's floor %s%s", d, f.Of, f.Strict, detail)}
	case DriverCompatOnly:
		return Finding{Name: name, Status: Warn, Message: fmt.Sprintf("driver %s is below %s's floor %s%s; it runs only under minor-version compatibility (>= %s): no PTX JIT, and APIs newer than the driver fail", d, f.Of, f.Strict, detail, f.Compat)}
	}
	compat := ""
	if !f.Compat.IsZero() {
		compat = fmt.Sprintf(", %s under minor-version compatibility", f.Compat)
	}
	return Finding{Name: name, Status: Fail, Message: fmt.Sprintf("driver %s is below %s's floor %s%s%s; update the driver, or pick an older CUDA (gpuimg matrix resolve --driver %s)", d, f.Of, f.Strict, detail, compat, d)}
}

// RuntimeEnv is the environment the NVIDIA container runtime reads of an
// image gpuimg builds for the stack: CUDA_VERSION and NVIDIA_REQUIRE_CUDA,
// as builder writes them. With RequireCUDA empty the toolkit's legacy
// rule requires cuda>=MAJOR.MINOR of CUDA_VERSION (RuntimeEnv).
func (s Stack) RuntimeEnv() map[string]string {
	return map[string]string{"CUDA_VERSION": s.CUDA, "NVIDIA_REQUIRE_CUDA": s.RequireCUDA}
}

// DriverFloors are the floors the stack records (MinDriver and
// MinDriverCompat), named "the stack".
func (s Stack) DriverFloors() (DriverFloors, error) {
	strict, err := ParseVersion(s.MinDriver)
	if err != nil {
		return DriverFloors{}, fmt.Errorf("stack has no driver floor (min_driver %s): %w", bound.Quote(s.MinDriver), err)
	}
	f := DriverFloors{Strict: strict, Of: "the stack", Detail: "set by " + s.MinDriverBy}
	if s.MinDriverBy == "" {
		// A label from before min_driver_by: the image's CUDA or a wheel's.
		f.Detail = "CUDA " + s.CUDA + " or its frameworks' wheels"
	}
	if s.MinDriverCompat != "" {
		if f.Compat, err = ParseVersion(s.MinDriverCompat); err != nil {
			return DriverFloors{}, fmt.Errorf("stack has a bad min_driver_compat %s: %w", bound.Quote(s.MinDriverCompat), err)
		}
	}
	return f, nil
}

// DriverFloorsFor are the floors of CUDA release cuda (x.y or x.y.z): the
// release's own (DriverFloor) and its family's minor-version
// compatibility floor (CompatFloor), named "CUDA x.y".
func (db *DB) DriverFloorsFor(cuda Version) DriverFloors {
	f := DriverFloors{Of: "CUDA " + cuda.String()}
	f.Strict, _ = db.DriverFloor(cuda)
	f.Compat, _ = db.CompatFloor(cuda.Major())
	if !f.Strict.IsZero() && f.Strict.Less(f.Compat) {
		// The family's compatibility floor can be above an early
		// release's own (CUDA 11.0: 450.51.05 vs 450.80.02).
		f.Compat = f.Strict
	}
	return f
}

// RequireCUDA is the NVIDIA_REQUIRE_CUDA value that makes the NVIDIA
// container runtime refuse drivers whose CUDA is older than v: cuda>=12.2.
func RequireCUDA(v Version) string { return "cuda>=" + v.String() }

// DriverVersionHelp is how to give a driver version, for error messages.
const DriverVersionHelp = "give the full version nvidia-smi prints (nvidia-smi --query-gpu=driver_version --format=csv,noheader), e.g. 535.104.05"

// ParseDriver parses an NVIDIA Linux driver version as nvidia-smi prints
// it: two or three numbers (390.157, 535.104.05). A branch alone (535,
// R535) is refused rather than read as 535.0.0: the releases of a branch
// report different CUDA versions (535.54.03 12.2, 535.104.05 12.2, but
// 530.30.02 12.1 and 525.60.13 12.0 are other branches), so no one release
// stands for it. Every command that takes --driver (matrix check and
// resolve, validate, publish's validate:) and target rows read it so.
func ParseDriver(s string) (Version, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Version{}, fmt.Errorf("empty driver version; %s", DriverVersionHelp)
	}
	branch := strings.TrimPrefix(strings.TrimPrefix(t, "R"), "r")
	if branch != "" && strings.Trim(branch, "0123456789") == "" {
		return Version{}, fmt.Errorf("driver %s is a branch, not a driver version: %s", bound.Quote(s), DriverVersionHelp)
	}
	if strings.Trim(t, "0123456789.") != "" {
		return Version{}, fmt.Errorf("driver %s is not a driver version: %s", bound.Quote(s), DriverVersionHelp)
	}
	v, err := ParseVersion(t)
	if err != nil || v.Len() > 3 {
		return Version{}, fmt.Errorf("driver %s is not a driver version: %s", bound.Quote(s), DriverVersionHelp)
	}
	return v, nil
}

// String names the fit: unknown, meets, compat-only or too-old.
func (f DriverFit) String() string {
	return [...]string{"unknown", "meets", "compat-only", "too-old"}[f]
}

// DriverSupportOf is the range of driver branches that know GPU g: the
// GPU row's own where recorded, else its architecture's (its branch, a
// lower bound, and its last branch; not the release that listed the
// architecture's first GPU). ok is false when neither records anything.
func (db *DB) DriverSupportOf(g GPU) (DriverSupport, bool) {
	out := g.Driver
	if a, ok := db.Arch(g.Arch); ok {
		if out.Branch.IsZero() && !a.Driver.Branch.IsZero() {
			out.Branch, out.FromArch = a.Driver.Branch, true
			if out.Source == "" {
				out.Source = a.Driver.Source
			}
		}
		if out.Last.IsZero() {
			out.Last = a.Driver.Last
			if out.Source == "" {
				out.Source = a.Driver.Source
			}
		}
	}
	return out, !out.IsZero()
}

// JudgeGPUDriver is the finding called name for whether driver d knows
// GPU g: fail below the lowest branch recorded for it (no driver runs a
// GPU newer than itself) or above the last (old architectures are
// dropped), warn in the lowest branch before the first release NVIDIA's
// lists name it in, unknown below the release a GPU older than the lists
// is listed since (DriverSupport.ListedSince: a lower bound, not its
// first), and unknown when the matrix records no branch for g or its
// architecture (a missing fact is never a pass). ok is false when d is
// zero.
// It is the one rule of the resolver's GPU stage, matrix check, validate
// --driver/--gpu and validate --target.
func (db *DB) JudgeGPUDriver(name string, g GPU, d Version) (f Finding, ok bool) {
	if d.IsZero() {
		return Finding{}, false
	}
	s, ok := db.DriverSupportOf(g)
	if !ok {
		return UnknownFinding(name,
			fmt.Sprintf("which driver branches know %s (%s), so whether driver %s runs it", g.Name, g.Arch, d),
			fmt.Sprintf("give a --matrix-file gpus: row for %s with driver: {branch: ..., first: ...} from the Compatible GPUs table of NVIDIA's open-gpu-kernel-modules README at the driver's tag", g.Name)), true
	}
	f = Finding{Name: name, Status: Pass}
	src := ""
	if x, ok := db.Sources[s.Source]; ok {
		src = " (" + x.URL + ")"
	}
	branch := d.Major()
	switch {
	case !s.Branch.IsZero() && branch < s.Branch.Major():
		first := ""
		if !s.First.IsZero() {
			first = ", from " + s.First.String()
		}
		f.Status = Fail
		f.Message = fmt.Sprintf("driver %s (R%d) does not know %s (%s): NVIDIA's drivers support it from branch R%d%s on%s; update the driver to R%d or newer", d, branch, g.Name, g.Arch, s.Branch.Major(), first, src, s.Branch.Major())
	case !s.Last.IsZero() && branch > s.Last.Major():
		f.Status = Fail
		f.Message = fmt.Sprintf("driver %s no longer supports %s (%s): R%d is the last branch that does%s; use an R%d driver", d, g.Name, g.Arch, s.Last.Major(), src, s.Last.Major())
	case !s.ListedSince.IsZero() && d.Less(s.ListedSince):
		return UnknownFinding(name,
			fmt.Sprintf("whether driver %s knows %s (%s): the Compatible GPUs tables of NVIDIA's release tags%s list it from %s on, a lower bound, since %s is older than the lists; releases before %s may know it too", d, g.Name, g.Arch, src, s.ListedSince, g.Name, s.ListedSince),
			fmt.Sprintf("use a driver at or above %s, or give a --matrix-file gpus: row for %s with driver: {branch: ..., first: ...} from NVIDIA's release notes of the driver", s.ListedSince, g.Name)), true
	case len(s.Branches) > 0:
		return s.judgeListed(name, g, d, src), true
	case !s.First.IsZero() && branch == s.Branch.Major() && d.Less(s.First):
		f.Status = Warn
		f.Message = fmt.Sprintf("driver %s is of branch R%d, whose releases list %s from %s on%s; an earlier R%d release may not know it: update to %s or newer", d, branch, g.Name, s.First, src, branch, s.First)
	case !s.ListedSince.IsZero():
		f.Message = fmt.Sprintf("driver %s knows %s: the Compatible GPUs tables of NVIDIA's release tags%s list it from %s on (a lower bound: %s is older than the lists)", d, g.Name, src, s.ListedSince, g.Name)
	case s.FromArch && !s.Branch.IsZero():
		f.Message = fmt.Sprintf("driver %s is not older than R%d, the first branch that knows %s's architecture %s; the matrix records no branch for %s itself", d, s.Branch.Major(), g.Name, g.Arch, g.Name)
	default:
		f.Message = fmt.Sprintf("driver %s knows %s: %s", d, g.Name, s.rangeText())
	}
	return f, true
}

// judgeListed judges driver d, of a branch not below s.Branch nor above
// s.Last, by the releases of its branch whose lists name g (s.Branches):
// pass from the branch's first listing release on (an off-cycle build
// numbered below the mainline releases included), and at or above s.First
// in s.Branch where the tables name no earlier release (another source,
// the driver's name table or change log, may); warn before the branch's first listing, on a release after it
// whose list leaves g out, and on a branch between the listed ones whose
// releases never name it. A branch newer than every listed one passes
// (drivers drop GPUs only with their architecture, s.Last).
func (s DriverSupport) judgeListed(name string, g GPU, d Version, src string) Finding {
	f := Finding{Name: name, Status: Pass}
	branch := d.Major()
	l, ok := s.Listing(branch)
	unlisted := slices.ContainsFunc(l.Unlisted, func(u Version) bool { return u.Compare(d) == 0 })
	newest := s.Branches[len(s.Branches)-1]
	switch {
	case ok && !d.Less(l.First) && !unlisted:
		f.Message = fmt.Sprintf("driver %s knows %s: NVIDIA's R%d releases list it from %s on", d, g.Name, branch, l.First)
	case branch == s.Branch.Major() && !s.First.IsZero() && !d.Less(s.First) && (!ok || d.Less(l.First)):
		f.Message = fmt.Sprintf("driver %s knows %s: NVIDIA's drivers support it from %s on%s", d, g.Name, s.First, src)
	case !ok && branch > newest.Branch.Major():
		f.Message = fmt.Sprintf("driver %s knows %s: NVIDIA's release lists%s name it from R%d on, and R%d is newer", d, g.Name, src, s.Branches[0].Branch.Major(), branch)
	case !ok:
		f.Status = Warn
		f.Message = fmt.Sprintf("driver %s is of branch R%d, none of whose releases list %s%s (R%d from %s does); it may not know it: use an R%d driver", d, branch, g.Name, src, newest.Branch.Major(), newest.First, newest.Branch.Major())
	case unlisted:
		f.Status = Warn
		f.Message = fmt.Sprintf("driver %s does not list %s, though other R%d releases from %s on do%s; it may not know it: use another R%d release", d, g.Name, branch, l.First, src, branch)
	default:
		f.Status = Warn
		f.Message = fmt.Sprintf("driver %s is of branch R%d, whose releases list %s from %s on%s; an earlier R%d release may not know it: update to %s or newer", d, branch, g.Name, l.First, src, branch, l.First)
	}
	return f
}

// ListedText is the lowest-numbered release whose table lists the GPU
// and how many branches list it, as matrix list prints it: "570.123.01
// (5 branches)"; "-" without branches.
func (s DriverSupport) ListedText() string {
	switch len(s.Branches) {
	case 0:
		return "-"
	case 1:
		return s.Branches[0].First.String() + " (1 branch)"
	}
	return fmt.Sprintf("%s (%d branches)", s.Branches[0].First, len(s.Branches))
}

// String is the range as matrix list prints it: "R525 (525.85.05)+",
// "..R580", "R450+..R580", "515.48.07+ (listed)"; "-" when nothing is
// recorded.
func (s DriverSupport) String() string {
	out := ""
	if !s.Branch.IsZero() {
		out = fmt.Sprintf("R%d", s.Branch.Major())
		if !s.First.IsZero() {
			out += " (" + s.First.String() + ")"
		}
		out += "+"
		if s.FromArch {
			out += " (arch)"
		}
	}
	if !s.ListedSince.IsZero() && s.Branch.IsZero() {
		out = s.ListedSince.String() + "+ (listed)"
	}
	if !s.Last.IsZero() {
		out += fmt.Sprintf("..R%d", s.Last.Major())
	}
	if out == "" {
		return "-"
	}
	return out
}

// rangeText is "NVIDIA's drivers support it from R525, 525.85.05 on", "… up
// to R580" or both.
func (s DriverSupport) rangeText() string {
	var parts []string
	if !s.Branch.IsZero() {
		p := fmt.Sprintf("from R%d", s.Branch.Major())
		if !s.First.IsZero() {
			p += ", " + s.First.String() + " on"
		}
		parts = append(parts, p)
	}
	if !s.Last.IsZero() {
		parts = append(parts, fmt.Sprintf("up to R%d", s.Last.Major()))
	}
	return "NVIDIA's drivers support it " + strings.Join(parts, ", ")
}

// FloorPart is one thing in an image whose CUDA needs a driver: the
// image's CUDA release, or a wheel built for a CUDA major.minor.
type FloorPart struct {
	// What names it in messages: "the image's CUDA 12.4.0", "torch 2.5.1
	// cu124 wheels".
	What string
	// CUDA is x.y.z for a release (its own floor, or that of the newest
	// older patch recorded) or x.y for a wheel (its newest patch's floor:
	// a wheel of 12.4 may carry 12.4.1's libraries, never understated).
	CUDA Version
	// MinDriver is a documented minimum of the part, if any; it raises
	// the compatibility floor too.
	MinDriver Version
}

// FloorsOf are the driver floors of an image made of parts (the first is
// the image's CUDA release): strict = the highest floor of any part,
// compat = the image CUDA family's minor-version-compatibility floor
// raised by documented minimums, never above strict. Detail names the
// part that sets the strict floor. The resolver, validate --driver and
// validate --target compute floors this way.
func (db *DB) FloorsOf(of string, parts []FloorPart) DriverFloors {
	f := DriverFloors{Of: of}
	by := ""
	raise := func(v Version, what string) {
		if !v.IsZero() && f.Strict.Less(v) {
			f.Strict, by = v, what
		}
	}
	for i, p := range parts {
		switch {
		case p.CUDA.IsZero():
		case p.CUDA.Len() >= 3:
			fl, _ := db.DriverFloor(p.CUDA)
			raise(fl, p.What)
		default:
			if r, ok := db.floorRelease(p.CUDA); ok && f.Strict.Less(r.MinDriver) {
				raise(r.MinDriver, fmt.Sprintf("%s: CUDA %s, counted at its newest patch %s", p.What, p.CUDA.Trunc(2), r.Version))
			}
		}
		raise(p.MinDriver, p.What+": its documented minimum driver")
		if i == 0 && !p.CUDA.IsZero() {
			f.Compat, _ = db.CompatFloor(p.CUDA.Major())
		}
		if f.Compat.Less(p.MinDriver) {
			f.Compat = p.MinDriver
		}
	}
	if f.Compat.IsZero() || f.Strict.Less(f.Compat) {
		f.Compat = f.Strict
	}
	if by != "" {
		f.Detail = "set by " + by
	}
	return f
}

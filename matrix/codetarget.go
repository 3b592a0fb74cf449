package matrix

import (
	"fmt"
	"strings"
)

// CodeTarget is an nvcc code target as cuobjdump, torch.cuda.get_arch_list
// and -gencode spell it: sm_90 (SASS), compute_90 (PTX), with an
// architecture-specific (sm_90a) or family-specific (sm_100f) suffix.
type CodeTarget struct {
	// Arch is the plain architecture, sm_XY.
	Arch string
	// PTX marks compute_XY (virtual) targets.
	PTX bool
	// Suffix is "", "a" or "f".
	Suffix string
}

// ParseCodeTarget reads sm_XY, sm_XYa, sm_XYf, compute_XY, compute_XYa and
// compute_XYf; anything else is an error naming the forms it takes.
func ParseCodeTarget(s string) (CodeTarget, error) {
	kind, num, ok := strings.Cut(strings.TrimSpace(s), "_")
	t := CodeTarget{PTX: kind == "compute"}
	if n := len(num); n > 0 && (num[n-1] == 'a' || num[n-1] == 'f') {
		t.Suffix, num = num[n-1:], num[:n-1]
	}
	if !ok || (kind != "sm" && kind != "compute") || len(num) < 2 || len(num) > 3 || strings.Trim(num, "0123456789") != "" {
		return CodeTarget{}, fmt.Errorf("target %q is not an nvcc target: give sm_XY or compute_XY, optionally with a (architecture-specific) or f (family-specific), e.g. sm_90a, compute_120f", s)
	}
	t.Arch = "sm_" + num
	return t, nil
}

// String is the target as nvcc spells it.
func (t CodeTarget) String() string {
	if t.PTX {
		return "compute_" + strings.TrimPrefix(t.Arch, "sm_") + t.Suffix
	}
	return t.Arch + t.Suffix
}

// CoverageName is the name KernelCoverage takes: sm_XY plus the suffix,
// for SASS and PTX alike.
func (t CodeTarget) CoverageName() string { return t.Arch + t.Suffix }

// TargetAccepted says whether nvcc of CUDA release cuda accepts target t:
// its architecture must be one cuda compiles for (Arch.TargetedBy), and an
// a or f suffix needs the release that introduced it (Arch.ArchSpecific,
// Arch.FamilySpecific). The error names the release needed, or the new
// name of a renamed architecture (sm_101 is sm_110 from CUDA 13.0).
func (db *DB) TargetAccepted(cuda Version, t CodeTarget) error {
	a, ok := db.Arch(t.Arch)
	if !ok {
		return fmt.Errorf("%s: the matrix does not know architecture %s", t, t.Arch)
	}
	switch a.TargetedBy(cuda) {
	case ArchTooNew:
		return fmt.Errorf("%s needs CUDA %s or newer; CUDA %s does not accept it", t, a.AddedIn, cuda)
	case ArchDropped:
		if a.RenamedTo != "" {
			return fmt.Errorf("CUDA %s renamed %s to %s (from CUDA %s); use %s", cuda, t.Arch, a.RenamedTo, a.RemovedIn, CodeTarget{Arch: a.RenamedTo, PTX: t.PTX, Suffix: t.Suffix})
		}
		return fmt.Errorf("CUDA %s no longer accepts %s: support ended in CUDA %s", cuda, t, a.RemovedIn)
	}
	from, what := a.ArchSpecific, "architecture-specific"
	if t.Suffix == "f" {
		from, what = a.FamilySpecific, "family-specific"
	}
	switch {
	case t.Suffix == "":
	case from.IsZero():
		return fmt.Errorf("%s: the matrix records no %s target for %s (is it one nvcc accepts?)", t, what, t.Arch)
	case from.Compare(cuda.Trunc(2)) > 0:
		return fmt.Errorf("%s (%s) needs CUDA %s or newer; CUDA %s does not accept it", t, what, from, cuda)
	}
	return nil
}

package matrix

import (
	"cmp"
	"fmt"
	"strings"
)

// Coverage is how device code runs on a GPU architecture.
type Coverage int

// Coverages, best last.
const (
	// NoKernels: nothing in the code runs on the GPU.
	NoKernels Coverage = iota
	// ViaPTX: only by JIT-compiling PTX on first use (slow to start, and
	// impossible under minor-version compatibility).
	ViaPTX
	// Native: SASS (cubins) that run on the GPU as they are.
	Native
)

// Runs says whether code with this coverage runs; under minor-version
// compatibility PTX cannot be JIT-compiled, so only native code runs.
func (c Coverage) Runs(underCompat bool) bool {
	return c == Native || (c == ViaPTX && !underCompat)
}

// KernelCoverage says how device code compiled for the SASS and PTX
// architectures (as cuobjdump names them: sm_80, sm_90a, sm_100f) runs on
// GPU architecture gpu (sm_XY):
//   - plain SASS runs on the same major and any later minor (sm_80 code
//     runs on sm_86, not on sm_90); family-specific SASS (sm_100f) on the
//     members of its family, which NVIDIA's Programming Guide (Table 28,
//     "Family-Specific Compatibility") lists as the same major with an
//     equal or higher minor (compute_100f: 10.0 and 10.3; compute_120f:
//     12.0 and 12.1; 103f, 110f and 121f: their own; TestFamilySpecificTable28);
//   - architecture-specific SASS (sm_90a) runs only on exactly that GPU;
//   - PTX is JIT-compiled for any GPU at least as new; family-specific PTX
//     only within its major; architecture-specific PTX only on that GPU.
//
// This is the one arch-coverage rule: the resolver, CheckStack and
// validate's GPU check all ask it.
func KernelCoverage(gpu string, sass, ptx []string) Coverage {
	gn := archNumber(gpu)
	for _, s := range sass {
		sn := archNumber(s)
		if strings.HasSuffix(s, "a") {
			if sn == gn {
				return Native
			}
			continue
		}
		if sn/10 == gn/10 && sn <= gn {
			return Native
		}
	}
	for _, p := range ptx {
		pn := archNumber(p)
		switch {
		case strings.HasSuffix(p, "a"):
			if pn == gn {
				return ViaPTX
			}
		case strings.HasSuffix(p, "f"):
			if pn/10 == gn/10 && pn <= gn {
				return ViaPTX
			}
		case pn <= gn:
			return ViaPTX
		}
	}
	return NoKernels
}

// CUDATargets says whether CUDA release cuda can compile for GPU g's
// architecture; when it cannot, the error says why (the release predates
// the architecture, or support for it ended). An architecture the matrix
// does not know is an error too.
func (db *DB) CUDATargets(cuda Version, g GPU) error {
	a, ok := db.Arch(g.Arch)
	if !ok {
		return fmt.Errorf("GPU %s has architecture %s, which the matrix does not know", g.Name, g.Arch)
	}
	switch a.TargetedBy(cuda) {
	case ArchTooNew:
		return fmt.Errorf("%s (%s, %s) needs CUDA %s or newer; CUDA %s cannot target it%s", g.Name, g.Arch, a.Name, a.AddedIn, cuda, db.formerName(cuda, g.Arch))
	case ArchDropped:
		return fmt.Errorf("%s (%s, %s) is not supported by CUDA %s: support ended in CUDA %s", g.Name, g.Arch, a.Name, cuda, a.RemovedIn)
	}
	return nil
}

// formerName says, for an architecture a release too old for it knew
// under another name (sm_110 was sm_101 in CUDA 12.8 and 12.9), what that
// name was; "" otherwise. Code built for the old name is judged as
// another architecture.
func (db *DB) formerName(cuda Version, arch string) string {
	for _, o := range db.Archs {
		if o.RenamedTo == arch && o.TargetedBy(cuda) == ArchSupported {
			return fmt.Sprintf(" (it names this architecture %s, renamed %s in CUDA %s; gpuimg does not judge %s code as %s)", o.Arch, arch, o.RemovedIn, o.Arch, arch)
		}
	}
	return ""
}

// String names the coverage: none, ptx or native.
func (c Coverage) String() string {
	switch c {
	case Native:
		return "native"
	case ViaPTX:
		return "ptx"
	}
	return "none"
}

// CompareArchs orders GPU architecture names as cuobjdump and the matrix
// list them: by number, and the plain architecture before its
// arch-specific and family-specific ones (sm_90, sm_90a, sm_100, sm_100f).
func CompareArchs(a, b string) int {
	if c := cmp.Compare(archNumber(a), archNumber(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

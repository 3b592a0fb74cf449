package matrix

import (
	"fmt"
	"strings"
)

// DriverFloor returns the strict Linux driver floor of CUDA release v (x.y
// or x.y.z). For x.y it is the highest floor of any x.y.z release, so the
// result never understates what a wheel built with "x.y" may need. A
// release whose row has no min_driver takes the floor of the newest older
// release of the same minor. ok is false when no floor is published.
func (db *DB) DriverFloor(v Version) (floor Version, ok bool) {
	if v.Len() >= 3 {
		// Exact release, or the newest older patch of the same minor.
		for _, r := range db.CUDA { // newest first
			if r.Version.HasPrefix(v.Trunc(2)) && r.Version.Compare(v) <= 0 && !r.MinDriver.IsZero() {
				return r.MinDriver, true
			}
		}
		return Version{}, false
	}
	for _, r := range db.CUDA {
		if r.Version.HasPrefix(v) && !r.MinDriver.IsZero() && (floor.IsZero() || floor.Less(r.MinDriver)) {
			floor = r.MinDriver
		}
	}
	return floor, !floor.IsZero()
}

// CompatFloor returns the minor-version-compatibility driver floor of a
// CUDA major version.
func (db *DB) CompatFloor(major int) (Version, bool) {
	f, ok := db.CUDAFamilies[major]
	return f.MinDriverCompat, ok
}

// Toolkit support of an architecture, as Arch.TargetedBy reports it.
const (
	ArchSupported = 0  // the release compiles for it
	ArchTooNew    = -1 // the release predates it (Arch.AddedIn)
	ArchDropped   = 1  // the release no longer compiles for it (Arch.RemovedIn)
)

// TargetedBy says whether CUDA release cuda (x.y or x.y.z) can compile for
// the architecture: ArchSupported, ArchTooNew or ArchDropped.
func (a Arch) TargetedBy(cuda Version) int {
	mm := cuda.Trunc(2)
	switch {
	case a.AddedIn.Compare(mm) > 0:
		return ArchTooNew
	case !a.RemovedIn.IsZero() && a.RemovedIn.Compare(mm) <= 0:
		return ArchDropped
	}
	return ArchSupported
}

// ArchsFor returns the architectures CUDA release v can compile for.
func (db *DB) ArchsFor(v Version) []string {
	var out []string
	for _, a := range db.Archs {
		if a.TargetedBy(v) == ArchSupported {
			out = append(out, a.Arch)
		}
	}
	return out
}

// Arch returns the row of architecture sm_XY.
func (db *DB) Arch(name string) (Arch, bool) {
	for _, a := range db.Archs {
		if a.Arch == name {
			return a, true
		}
	}
	return Arch{}, false
}

// FindGPU finds a GPU by name or alias as people type it or NVML prints
// it (see LookupGPU), or by architecture (sm_90 or 9.0), which yields a GPU
// row with only Name and Arch set.
func (db *DB) FindGPU(s string) (GPU, error) {
	g, err := db.LookupGPU(s)
	if err == nil {
		return g, nil
	}
	arch := strings.ToLower(strings.TrimSpace(s))
	if v, perr := ParseVersion(arch); perr == nil && v.Len() == 2 {
		arch = fmt.Sprintf("sm_%d%d", v.Major(), v.Minor())
	}
	if archRE.MatchString(arch) {
		return GPU{Name: arch, Arch: arch}, nil
	}
	return GPU{}, err
}

// BaseImageTag is the nvidia/cuda tag for a release, flavor and OS.
func BaseImageTag(cuda Version, flavor, os string) string {
	return fmt.Sprintf("nvidia/cuda:%s-%s-%s", cuda, flavor, os)
}

// archCovered says whether code compiled for the SASS archs and PTX archs
// runs on GPU architecture g: SASS runs on the same major and any later
// minor (sm_80 code runs on sm_86), PTX is JIT-compiled for any later GPU.
// Architecture-specific targets (sm_90a) run only on that exact GPU.
func archCovered(g string, sass, ptx []string) (native, viaPTX bool) {
	gn := archNumber(g)
	for _, s := range sass {
		sn := archNumber(s)
		if strings.HasSuffix(s, "a") { // sm_90a: that exact GPU only
			if sn == gn {
				native = true
			}
			continue
		}
		// sm_100f (family-specific) runs, like plain SASS, on the same
		// major with this minor or newer.
		if sn/10 == gn/10 && sn <= gn {
			native = true
		}
	}
	for _, p := range ptx {
		pn := archNumber(p)
		switch {
		case strings.HasSuffix(p, "a"): // arch-specific PTX: that GPU only
			viaPTX = viaPTX || pn == gn
		case strings.HasSuffix(p, "f"): // family-specific: that major only
			viaPTX = viaPTX || (pn/10 == gn/10 && pn <= gn)
		case pn <= gn:
			viaPTX = true
		}
	}
	return native, viaPTX
}

// ArchCovered says whether device code with the given SASS and PTX
// architectures runs on GPU architecture gpu: natively (SASS of the same
// major, no newer minor, also for family-specific sm_100f; arch-specific
// sm_90a code only on that exact GPU), or by
// JIT-compiling PTX no newer than the GPU.
func ArchCovered(gpu string, sass, ptx []string) (native, viaPTX bool) {
	return archCovered(gpu, sass, ptx)
}

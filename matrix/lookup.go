package matrix

import (
	"fmt"
	"slices"
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
		mm := v.Trunc(2)
		for _, r := range db.CUDA { // newest first
			if r.Version.HasPrefix(mm) && r.Version.Compare(v) <= 0 && !r.MinDriver.IsZero() {
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

// floorRelease is the release whose floor DriverFloor(v) gives for a
// major.minor v: its newest patch with a recorded floor.
func (db *DB) floorRelease(v Version) (CUDARelease, bool) {
	var out CUDARelease
	mm := v.Trunc(2)
	for _, r := range db.CUDA {
		if r.Version.HasPrefix(mm) && !r.MinDriver.IsZero() && (out.MinDriver.IsZero() || out.MinDriver.Less(r.MinDriver)) {
			out = r
		}
	}
	return out, !out.MinDriver.IsZero()
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
	if ct, perr := ParseCodeTarget(arch); perr == nil && !ct.PTX {
		// A GPU is its plain architecture: an a or f suffix (sm_90a,
		// sm_100f) names code built for it, not another GPU.
		return GPU{Name: ct.Arch, Arch: ct.Arch}, nil
	}
	return GPU{}, err
}

// BaseImageTag is the nvidia/cuda tag for a release, flavor and OS.
func BaseImageTag(cuda Version, flavor, os string) string {
	return fmt.Sprintf("nvidia/cuda:%s-%s-%s", cuda, flavor, os)
}

// BaseImageSupport says whether NVIDIA has marked the nvidia/cuda tag
// (nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04, with or without a
// registry, tag only, or pinned @sha256) end of life, and the supported
// point release of the same minor for that OS if there is one. known is
// false for a tag the matrix has no base_images row for.
func (db *DB) BaseImageSupport(ref string) (eol bool, supported Version, known bool) {
	tag := ref
	if i := strings.LastIndex(tag, "@"); i >= 0 {
		tag = tag[:i]
	}
	if i := strings.LastIndex(tag, ":"); i >= 0 {
		tag = tag[i+1:]
	}
	first, rest, ok := strings.Cut(tag, "-")
	if !ok {
		return false, Version{}, false
	}
	cuda, err := ParseVersion(first)
	if err != nil || cuda.Len() != 3 {
		return false, Version{}, false
	}
	os := rest[strings.LastIndex(rest, "-")+1:]
	for _, b := range db.BaseImages {
		if b.CUDA.Compare(cuda) == 0 && slices.Contains(b.OS, os) {
			s, _ := db.SupportedPointRelease(cuda, os)
			return b.EOL, s, true
		}
	}
	return false, Version{}, false
}

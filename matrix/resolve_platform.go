package matrix

import (
	"slices"
	"strings"
)

// CUDAPlatformsOf returns the platforms framework name's release v has
// CUDA wheels for, from the first cuda_platforms row covering it; ok is
// false when no row does (not recorded).
func (db *DB) CUDAPlatformsOf(name string, v Version) (platforms []string, ok bool) {
	for _, p := range db.CUDAPlatforms {
		if p.Framework == name && p.Versions.Check(v) {
			return p.Platforms, true
		}
	}
	return nil, false
}

// platformsFit checks that each framework of combo has CUDA wheels for
// every platform the image is built for (Constraints.Platforms, OS/ARCH
// with any variant dropped: linux/arm64/v8 is linux/arm64).
func (s *search) platformsFit(combo []fwChoice) bool {
	for _, ch := range combo {
		have, ok := s.db.CUDAPlatformsOf(ch.name, ch.version)
		if !ok {
			continue
		}
		for _, p := range s.c.Platforms {
			if !slices.Contains(have, osArch(p)) {
				s.fails.add(stageFrameworks, "%s %s has no CUDA wheels for %s (only %s): pip would install a CPU-only build there; build for %s, or pick a release with CUDA wheels for %s",
					ch.name, ch.version, p, strings.Join(have, ", "), strings.Join(have, ", "), p)
				return false
			}
		}
	}
	return true
}

// osArch is a platform's OS/ARCH part.
func osArch(p string) string {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 2 {
		return p
	}
	return parts[0] + "/" + parts[1]
}

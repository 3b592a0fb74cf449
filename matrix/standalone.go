package matrix

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// StandalonePythonURL is where python-build-standalone publishes its
// release assets: an archive's URL is this, its release tag and its name
// (StandaloneArchive.URL). A Python mirror replaces this prefix and keeps
// the rest, as uv's python-install-mirror setting does.
const StandalonePythonURL = "https://github.com/astral-sh/python-build-standalone/releases/download"

// StandalonePrefix is where the builder unpacks a standalone Python in the
// image: the archive's top directory python/ becomes this directory.
const StandalonePrefix = "/opt/gpuimg/python"

// Python sources of a Stack (PythonSource.Kind).
const (
	// PythonFromOS: the OS's own packages (apt or dnf) install Python.
	PythonFromOS = "os"
	// PythonStandalone: a relocatable CPython build from
	// python-build-standalone, the builds uv installs.
	PythonStandalone = "standalone"
)

// StandalonePython is one relocatable CPython build of
// python-build-standalone, which the builder installs when no OS of the
// stack packages the Python minor asked for. One row per CPython minor:
// a matrix file's row for 3.13 replaces the built-in one.
type StandalonePython struct {
	// Version is the CPython release, x.y.z (3.13.15).
	Version Version `yaml:"version" json:"version"`
	// Release is python-build-standalone's release tag (20260814).
	Release string `yaml:"release" json:"release"`
	// Archives are the release's install_only archives, one per platform.
	Archives []StandaloneArchive `yaml:"archives" json:"archives"`
	Row      `yaml:",inline"`
}

// StandaloneArchive is one archive of a StandalonePython release.
type StandaloneArchive struct {
	// Platform is linux/amd64 or linux/arm64.
	Platform string `yaml:"platform" json:"platform"`
	// Name is the release asset's file name.
	Name string `yaml:"name" json:"name"`
	// SHA256 is the archive's digest, hex; the build refuses any other.
	SHA256 string `yaml:"sha256" json:"sha256"`
}

// URL is the archive's address under base (StandalonePythonURL or a
// mirror of it): base/release/name, the + of the name escaped as GitHub's
// asset URLs escape it.
func (a StandaloneArchive) URL(base, release string) string {
	return strings.TrimSuffix(base, "/") + "/" + release + "/" + strings.ReplaceAll(a.Name, "+", "%2B")
}

// PythonSource says where a stack's Python comes from.
type PythonSource struct {
	// Kind is PythonFromOS or PythonStandalone.
	Kind string `json:"kind" yaml:"kind"`
	// Why says why in a sentence.
	Why string `json:"why" yaml:"why"`
	// Version, Release and Archives are the standalone build's
	// (StandalonePython); empty for PythonFromOS.
	Version  string              `json:"version,omitempty" yaml:"version,omitempty"`
	Release  string              `json:"release,omitempty" yaml:"release,omitempty"`
	Archives []StandaloneArchive `json:"archives,omitempty" yaml:"archives,omitempty"`
}

// Archive returns the archive for platform (linux/amd64; a variant such as
// linux/arm64/v8 is ignored).
func (p PythonSource) Archive(platform string) (StandaloneArchive, bool) {
	for _, a := range p.Archives {
		if a.Platform == osArch(platform) {
			return a, true
		}
	}
	return StandaloneArchive{}, false
}

// StandaloneFor returns the standalone build of CPython minor py (3.13).
func (db *DB) StandaloneFor(py Version) (StandalonePython, bool) {
	for _, s := range db.StandalonePythons {
		if s.Version.Trunc(2).Compare(py.Trunc(2)) == 0 {
			return s, true
		}
	}
	return StandalonePython{}, false
}

var (
	sha256RE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	releaseRE = regexp.MustCompile(`^[0-9]{8}$`)
)

// validateStandalone checks one standalone_pythons row.
func validateStandalone(s StandalonePython) []string {
	var bad []string
	if s.Version.Len() != 3 {
		bad = append(bad, fmt.Sprintf("standalone Python %q: version must be x.y.z (3.13.15)", s.Version))
	}
	if !releaseRE.MatchString(s.Release) {
		bad = append(bad, fmt.Sprintf("standalone Python %s: release %q must be python-build-standalone's tag, YYYYMMDD", s.Version, s.Release))
	}
	if len(s.Archives) == 0 {
		bad = append(bad, fmt.Sprintf("standalone Python %s needs archives", s.Version))
	}
	var seen []string
	for _, a := range s.Archives {
		switch {
		case !platformRE.MatchString(a.Platform):
			bad = append(bad, fmt.Sprintf("standalone Python %s: platform %q must look like linux/amd64", s.Version, a.Platform))
		case slices.Contains(seen, a.Platform):
			bad = append(bad, fmt.Sprintf("standalone Python %s lists %s twice", s.Version, a.Platform))
		}
		seen = append(seen, a.Platform)
		if a.Name == "" || strings.Contains(a.Name, "/") || !strings.HasSuffix(a.Name, ".tar.gz") {
			bad = append(bad, fmt.Sprintf("standalone Python %s %s: name %q must be the release asset's file name (a .tar.gz)", s.Version, a.Platform, a.Name))
		}
		if !sha256RE.MatchString(a.SHA256) {
			bad = append(bad, fmt.Sprintf("standalone Python %s %s: sha256 %q must be 64 lowercase hex digits", s.Version, a.Platform, a.SHA256))
		}
	}
	return bad
}

package matrix

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// AdvisoryKind says what in an image an advisory matches.
type AdvisoryKind string

// The kinds of advisory.
const (
	// AdvisoryPython matches an installed Python distribution older than
	// Fixed (Package, normalized as pip does).
	AdvisoryPython AdvisoryKind = "python"
	// AdvisoryEnv matches an image config that sets Env: the image is the
	// trigger of a flaw on the host (the container toolkit's hooks).
	AdvisoryEnv AdvisoryKind = "env"
	// AdvisoryCUDATool matches a CUDA toolkit tool found by file (Files)
	// in an image whose CUDA toolkit is older than Fixed.
	AdvisoryCUDATool AdvisoryKind = "cuda-tool"
	// AdvisoryContainerToolkit is a flaw of the NVIDIA Container Toolkit
	// on the host, older than Fixed, that no setting of the image shows:
	// it matches a target whose fleet runs such a toolkit
	// (Target.ContainerToolkit), never an image.
	AdvisoryContainerToolkit AdvisoryKind = "container-toolkit"
)

// Advisory is a published vulnerability that general scanners miss in
// GPU images (a CUDA tool no package manager records, an image setting
// that attacks the host), or one gpuimg reports itself because it reads
// the stack anyway, and how an image shows it (docs/matrix-data.md).
type Advisory struct {
	// ID is the CVE; Also lists further CVEs of the same row (one tool's
	// several flaws, fixed in one release).
	ID   string   `yaml:"id" json:"id"`
	Also []string `yaml:"also" json:"also,omitempty"`
	// GHSA is the GitHub advisory, when there is one.
	GHSA     string       `yaml:"ghsa" json:"ghsa,omitempty"`
	Kind     AdvisoryKind `yaml:"kind" json:"kind"`
	Severity string       `yaml:"severity" json:"severity"` // critical, high, medium, low
	CVSS     float64      `yaml:"cvss" json:"cvss"`
	// Summary says what an attacker can do, in a phrase.
	Summary string `yaml:"summary" json:"summary"`
	// Package (kind python) is the affected distribution.
	Package string `yaml:"package" json:"package,omitempty"`
	// Env (kind env) is the environment variable that triggers it.
	Env string `yaml:"env" json:"env,omitempty"`
	// Tool (kind cuda-tool) names the tool; Names are the base names of
	// its files ("cuobjdump"), and Files regular expressions over the
	// whole path ("usr/local/cuda-12.2/bin/cuobjdump") that a file of one
	// of those names must match. The walk looks up every file's base
	// name and runs the expressions only on those.
	Tool  string   `yaml:"tool" json:"tool,omitempty"`
	Names []string `yaml:"names" json:"names,omitempty"`
	Files []string `yaml:"files" json:"files,omitempty"`
	// Fixed is the first release without the flaw: of Package (python),
	// of the CUDA toolkit (cuda-tool); for env, of the host component
	// named in Host, the NVIDIA Container Toolkit; of that toolkit
	// (container-toolkit).
	Fixed Version `yaml:"fixed" json:"fixed"`
	// Host (kind env) is what on the host is vulnerable, and up to which
	// version.
	Host string `yaml:"host" json:"host,omitempty"`
	Row  `yaml:",inline"`

	files []*regexp.Regexp `yaml:"-" json:"-"` // Files, compiled by validateAdvisory
}

// HostToolkit says whether the row is a flaw of the NVIDIA Container
// Toolkit on the host, fixed in toolkit release Fixed: kind
// container-toolkit, and kind env, whose trigger in the image attacks the
// toolkit's hooks.
func (a Advisory) HostToolkit() bool {
	return a.Kind == AdvisoryContainerToolkit || a.Kind == AdvisoryEnv
}

// AffectsToolkit says whether toolkit release v is within a HostToolkit
// row's affected range (older than Fixed).
func (a Advisory) AffectsToolkit(v Version) bool {
	return a.HostToolkit() && !v.IsZero() && v.Compare(a.Fixed) < 0
}

// CVEs are the row's CVEs, ID first.
func (a Advisory) CVEs() []string { return append([]string{a.ID}, a.Also...) }

// MatchFile reports whether image path p (relative, "usr/bin/nsys") is
// one of a cuda-tool advisory's files.
func (a Advisory) MatchFile(p string) bool {
	if !slices.Contains(a.Names, path.Base(p)) {
		return false
	}
	for _, re := range a.files {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}

var (
	cveRE  = regexp.MustCompile(`^CVE-[0-9]{4}-[0-9]{4,}$`)
	ghsaRE = regexp.MustCompile(`^GHSA(-[23456789cfghjmpqrvwx]{4}){3}$`)
)

// validateAdvisory checks a row and compiles its file patterns.
func validateAdvisory(a *Advisory) []string {
	var bad []string
	for _, id := range a.CVEs() {
		if !cveRE.MatchString(id) {
			bad = append(bad, fmt.Sprintf("advisory %q: ids must look like CVE-2025-32434", id))
		}
	}
	if a.GHSA != "" && !ghsaRE.MatchString(a.GHSA) {
		bad = append(bad, fmt.Sprintf("advisory %s: ghsa %q must look like GHSA-53q9-r3pm-6pq6", a.ID, a.GHSA))
	}
	switch a.Severity {
	case "critical", "high", "medium", "low":
	default:
		bad = append(bad, fmt.Sprintf("advisory %s: severity must be critical, high, medium or low, not %q", a.ID, a.Severity))
	}
	if a.Summary == "" || a.Fixed.IsZero() {
		bad = append(bad, fmt.Sprintf("advisory %s needs summary and fixed", a.ID))
	}
	switch a.Kind {
	case AdvisoryPython:
		if a.Package == "" || strings.ToLower(a.Package) != a.Package {
			bad = append(bad, fmt.Sprintf("advisory %s (python) needs package, normalized (lowercase)", a.ID))
		}
	case AdvisoryEnv:
		if a.Env == "" || a.Host == "" {
			bad = append(bad, fmt.Sprintf("advisory %s (env) needs env and host", a.ID))
		}
	case AdvisoryCUDATool:
		if a.Tool == "" || len(a.Names) == 0 || len(a.Files) == 0 {
			bad = append(bad, fmt.Sprintf("advisory %s (cuda-tool) needs tool, names and files", a.ID))
		}
		a.files = nil
		for _, f := range a.Files {
			re, err := regexp.Compile(f)
			if err != nil {
				bad = append(bad, fmt.Sprintf("advisory %s: file pattern %q: %v", a.ID, f, err))
				continue
			}
			a.files = append(a.files, re)
		}
	case AdvisoryContainerToolkit:
		if a.Package != "" || a.Env != "" || a.Tool != "" {
			bad = append(bad, fmt.Sprintf("advisory %s (container-toolkit) matches a target's toolkit version only: drop package, env and tool", a.ID))
		}
	default:
		bad = append(bad, fmt.Sprintf("advisory %s: kind must be python, env, cuda-tool or container-toolkit, not %q", a.ID, a.Kind))
	}
	return bad
}

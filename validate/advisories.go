package validate

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// The advisories checks: one advisory:CVE-… warning for each row of the
// matrix's advisories (data/advisories.yaml) the image matches, none
// when it matches none. They warn rather than fail: the image may not
// run the affected code (nobody runs cuobjdump in production; torch.load
// of untrusted checkpoints is the application's choice), and the
// container toolkit flaw is the host's, which the image only triggers.

// toolHit is a file of a cuda-tool advisory, found in the walk.
type toolHit struct {
	id   string
	path string
}

// toolAdvisories are the DB's cuda-tool rows, for the detector; nil
// when db has none.
func toolAdvisories(db *matrix.DB) []matrix.Advisory {
	var out []matrix.Advisory
	for _, a := range db.Advisories {
		if a.Kind == matrix.AdvisoryCUDATool {
			out = append(out, a)
		}
	}
	return out
}

// toolNames is the set of base names the cuda-tool rows look at.
func toolNames(advs []matrix.Advisory) map[string]bool {
	m := map[string]bool{}
	for _, a := range advs {
		for _, n := range a.Names {
			m[n] = true
		}
	}
	return m
}

// parseTools records the cuda-tool advisories whose files p is.
func (d *detector) parseTools(p string) func(d *detector) {
	if !d.toolNames[path.Base(p)] {
		return nil
	}
	var hits []toolHit
	for _, a := range d.tools {
		if a.MatchFile(p) {
			hits = append(hits, toolHit{id: a.ID, path: p})
		}
	}
	if len(hits) == 0 {
		return nil
	}
	return func(d *detector) { d.f.toolHits = append(d.f.toolHits, hits...) }
}

// advisories adds a warning for each advisory the image matches. An env
// row's warning names the targets whose fleet runs a toolkit in the row's
// range (fleetsAffected), where the image is the attack itself.
func (c *checker) advisories(targets []matrix.Target) {
	f := c.r.Found
	for _, a := range c.db.Advisories {
		ids := strings.Join(a.CVEs(), ", ")
		if a.GHSA != "" {
			ids += ", " + a.GHSA
		}
		name := "advisory:" + a.ID
		switch a.Kind {
		case matrix.AdvisoryPython:
			v, ok := f.Packages[a.Package]
			if !ok {
				continue
			}
			installed, err1 := pep440.Parse(v)
			fixed, err2 := pep440.Parse(a.Fixed.String())
			if err := errors.Join(err1, err2); err != nil {
				// Unknown is never pass: say it cannot be told.
				c.add(name, matrix.Warn, "%s %s: cannot tell whether it is affected by %s (fixed in %s): %v", a.Package, v, ids, a.Fixed, err)
				continue
			}
			if installed.ComparePublic(fixed) >= 0 {
				continue // PEP 440 order: 2.6.0.post1 and 2.6.0+cu124 carry the fix of 2.6.0
			}
			pre := ""
			if installed.BaseVersion() == fixed.BaseVersion() {
				pre = " (a pre-release of the fixed version, which PEP 440 orders before it: check that the build carries the fix)"
			}
			c.add(name, matrix.Warn, "%s %s is affected by %s (%s, CVSS %.1f): %s%s; upgrade to %s >= %s", a.Package, v, ids, a.Severity, a.CVSS, a.Summary, pre, a.Package, a.Fixed)
		case matrix.AdvisoryEnv:
			v, ok := c.env[a.Env]
			if !ok {
				continue
			}
			fleets := ""
			if fs := fleetsAffected(a, targets); len(fs) > 0 {
				fleets = fmt.Sprintf("; the fleet of %s runs an affected toolkit, so there this image is the exploit (see the target:…:container-toolkit/%s checks)", strings.Join(fs, ", "), a.ID)
			}
			c.add(name, matrix.Warn, "the image config sets %s=%s, which triggers %s (%s, CVSS %.1f) on hosts with %s: %s; fixed in %s on the host%s; set %s in the entrypoint rather than in the image config", a.Env, truncate(v, 120), ids, a.Severity, a.CVSS, a.Host, a.Summary, a.Fixed, fleets, a.Env)
		case matrix.AdvisoryCUDATool:
			var paths []string
			for _, h := range f.toolHits {
				if h.id == a.ID {
					paths = append(paths, path2(h.path))
				}
			}
			if len(paths) == 0 {
				continue
			}
			cuda, err := matrix.ParseVersion(mm(f.CUDA))
			if f.CUDA == "" || err != nil {
				c.add(name, matrix.Warn, "%s (%s) is in the image but its CUDA toolkit's version is unknown; %s before CUDA %s is affected by %s (%s, CVSS %.1f): %s", a.Tool, strings.Join(paths, ", "), a.Tool, a.Fixed, ids, a.Severity, a.CVSS, a.Summary)
				continue
			}
			if cuda.Compare(a.Fixed) >= 0 {
				continue
			}
			sort.Strings(paths)
			c.add(name, matrix.Warn, "%s of CUDA %s (%s) is affected by %s (%s, CVSS %.1f): %s; fixed in CUDA %s, or leave %s out of runtime images (a devel image carries it)", a.Tool, f.CUDA, truncate(strings.Join(paths, ", "), 200), ids, a.Severity, a.CVSS, a.Summary, a.Fixed, a.Tool)
		}
	}
}

// fleetsAffected names the targets whose recorded container toolkit
// (matrix.Target.ContainerToolkit) is within host-toolkit advisory a's
// range, as "eks/x (toolkit 1.17.3)".
func fleetsAffected(a matrix.Advisory, targets []matrix.Target) []string {
	var out []string
	for _, t := range targets {
		if ct := t.ContainerToolkit; ct != nil && a.AffectsToolkit(ct.Version) {
			out = append(out, fmt.Sprintf("%s (toolkit %s)", t.Name, ct.Version))
		}
	}
	return out
}

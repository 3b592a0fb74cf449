package capture

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// seeded are the distributions every venv starts with; the build's venv
// has its own.
var seeded = map[string]bool{"pip": true, "setuptools": true, "wheel": true}

// pipPins are the distributions to pin in pip: (name==version), every
// Python distribution of the environment less what the stack's
// frameworks bring (their packages and the closure of their
// Requires-Dist over what is installed), the venv's seed and the OS's
// own python3-* packages; and what cannot be pinned, with why.
func pipPins(f *Facts, st *matrix.Stack) ([]string, []Item) {
	brought := closure(f.Dists, stackRoots(f, st))
	condaEnvs := map[string]bool{}
	for _, c := range f.Conda {
		condaEnvs[c.Env] = true
	}
	var pins []string
	var items []Item
	for _, d := range f.Dists {
		if brought[d.Name] || seeded[d.Name] || strings.HasPrefix(d.Path, "/usr/lib/python3/") || inEnv(d.Path, condaEnvs) {
			continue
		}
		switch {
		case d.Editable:
			items = append(items, Item{Kind: "pip-editable", What: d.Name, Version: d.Version, Why: "installed in editable mode from " + d.DirectURL + ": its source is a working tree on that machine; --copy it and install it, or publish it"})
		case d.DirectURL != "":
			items = append(items, Item{Kind: "pip-url", What: d.Name, Version: d.Version, Why: "installed from " + d.DirectURL + " (direct_url.json), not from an index: add it to a requirements file with that URL"})
		case strings.Contains(d.Version, "+"):
			items = append(items, Item{Kind: "pip-index", What: d.Name, Version: d.Version, Why: "a local version label: it came from an index pip did not record (pip_extra_index_url names it)"})
		default:
			pins = append(pins, d.Name+"=="+d.Version)
		}
	}
	pins = slices.Compact(pins)
	return pins, append(items, condaItems(f)...)
}

// stackRoots are the distribution names the stack installs (its
// frameworks' packages), else the frameworks found.
func stackRoots(f *Facts, st *matrix.Stack) []string {
	var roots []string
	if st != nil {
		for _, fw := range st.Frameworks {
			for _, p := range fw.Packages {
				name, _, _ := strings.Cut(p, "=")
				name, _, _ = strings.Cut(name, "[")
				roots = append(roots, normalize(strings.TrimSpace(name)))
			}
		}
	}
	for name := range f.Frameworks {
		roots = append(roots, name)
	}
	if _, ok := f.Frameworks["jax"]; ok {
		roots = append(roots, "jaxlib")
	}
	return roots
}

// closure is roots and every installed distribution their Requires-Dist
// reach (requirements under an extra count only for the extras the roots
// were asked with, which pip does not record: they are left out).
func closure(ds []Dist, roots []string) map[string]bool {
	byName := map[string]Dist{}
	for _, d := range ds {
		byName[d.Name] = d
	}
	seen := map[string]bool{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		for _, r := range byName[n].Requires {
			req, marker, _ := strings.Cut(r, ";")
			if strings.Contains(marker, "extra") {
				continue
			}
			queue = append(queue, normalize(reqName(req)))
		}
	}
	return seen
}

// reqName is a PEP 508 requirement's name.
func reqName(req string) string {
	req = strings.TrimSpace(req)
	end := strings.IndexAny(req, " [(<>=!~;@")
	if end < 0 {
		return req
	}
	return req[:end]
}

func inEnv(p string, envs map[string]bool) bool {
	for e := range envs {
		if strings.HasPrefix(p, e+"/") {
			return true
		}
	}
	return false
}

// condaItems are conda's packages: one that pip also recorded in the same
// env with the same version has a PyPI name (its dist-info); the others
// have no PyPI equivalent the capture can name.
func condaItems(f *Facts) []Item {
	have := map[string]bool{}
	for _, d := range f.Dists {
		have[d.Name+"=="+d.Version+"@"+envOf(d.Path)] = true
	}
	var items []Item
	for _, c := range f.Conda {
		if have[normalize(c.Name)+"=="+c.Version+"@"+c.Env] {
			items = append(items, Item{Kind: "conda", What: c.Name, Version: c.Version, Why: fmt.Sprintf("conda package in %s (channel %s) with a PyPI distribution of the same version: pip install %s==%s restores it outside conda", c.Env, channelOr(c.Channel), normalize(c.Name), c.Version)})
			continue
		}
		items = append(items, Item{Kind: "conda", What: c.Name, Version: c.Version, Why: fmt.Sprintf("conda package in %s (channel %s) with no PyPI distribution of the same version: rebuild that env with conda", c.Env, channelOr(c.Channel))})
	}
	return items
}

func channelOr(c string) string {
	if c == "" {
		return "unknown"
	}
	return c
}

// envOf is the environment root of a dist-info path (…/lib/pythonX/site-packages/x.dist-info).
func envOf(p string) string {
	root, _, ok := strings.Cut(p, "/lib/python")
	if !ok {
		return path.Dir(p)
	}
	return root
}

// others are the runfile CUDA trees and the unowned files (grouped by their
// top directory) that --copy does not carry, and the dropped secret
// variables.
func others(f *Facts, carried []string) []Item {
	var items []Item
	for _, d := range f.RunfileCUDA {
		if copied(d, carried) {
			continue
		}
		items = append(items, Item{Kind: "cuda-runfile", What: d, Why: "a CUDA toolkit no package manager installed (NVIDIA's runfile): the stack's base image brings its own CUDA; --copy it only if something needs this one"})
	}
	groups := map[string][]string{}
	for _, p := range f.Unowned {
		if copied(p, carried) {
			continue
		}
		groups[unownedGroup(p)] = append(groups[unownedGroup(p)], p)
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		files := groups[g]
		what := files[0]
		if len(files) > 1 {
			what = fmt.Sprintf("%s/ (%d files)", g, len(files))
		}
		items = append(items, Item{Kind: "unowned-file", What: what, Why: "owned by no package: copied or built by hand; --copy it to carry it into the build"})
	}
	for _, k := range f.DroppedEnv {
		items = append(items, Item{Kind: "secret-env", What: k, Why: "the secrets check flags it: pass it at run time (docker run -e, a secret store), never in the image"})
	}
	return items
}

// unownedGroup is /opt/X, /srv/X or /usr/local/X/Y.
func unownedGroup(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	n := 2
	if parts[0] == "usr" {
		n = 4
	}
	if len(parts) <= n {
		return path.Dir(p)
	}
	return "/" + strings.Join(parts[:n], "/")
}

package capture

import (
	"maps"
	"slices"
	"strings"
)

// Kinds of difference, in the order Diff lists them.
const (
	KindStack      = "stack"       // OS, Python, the CUDA toolkit
	KindFrameworks = "frameworks"  // torch, tensorflow, jax with their CUDA variant
	KindOS         = "os-packages" // dpkg
	KindPython     = "python"      // distributions
	KindCUDA       = "cuda"        // CUDA components by file, runfile trees
	KindConda      = "conda"
	KindDriver     = "driver-floor"
	KindEnv        = "env"
	KindFiles      = "files" // owned by no package (DiffOptions.Files)
)

// Change is one difference: the name, and its value on each side (""
// where that side lacks it).
type Change struct {
	Name string `json:"name"`
	A    string `json:"a"`
	B    string `json:"b"`
}

// KindDiff are the changes of one kind.
type KindDiff struct {
	Kind    string   `json:"kind"`
	Changes []Change `json:"changes"`
}

// Delta is what Diff found; Same when it found nothing.
type Delta struct {
	A     string     `json:"a"`
	B     string     `json:"b"`
	Same  bool       `json:"same"`
	Kinds []KindDiff `json:"differences,omitempty"`
}

// DiffOptions steer Diff.
type DiffOptions struct {
	// Files compares the files owned by no package too.
	Files bool
}

// Diff compares two environments' facts. A side that is Partial (a
// capture file: what it pins, not all that is installed) is compared
// only on the names it holds, an empty version meaning any.
func Diff(a, b *Facts, opt DiffOptions) *Delta {
	d := &Delta{}
	add := func(kind string, x, y map[string]string) {
		if ch := changes(x, y, a.Partial, b.Partial); len(ch) > 0 {
			d.Kinds = append(d.Kinds, KindDiff{Kind: kind, Changes: ch})
		}
	}
	add(KindStack, stackMap(a), stackMap(b))
	add(KindFrameworks, fwMap(a), fwMap(b))
	add(KindOS, osMap(a), osMap(b))
	add(KindPython, distMap(a), distMap(b))
	add(KindCUDA, cudaMap(a), cudaMap(b))
	add(KindConda, condaMap(a), condaMap(b))
	add(KindDriver, one("driver_floor", a.DriverFloor), one("driver_floor", b.DriverFloor))
	add(KindEnv, a.Env, b.Env)
	if opt.Files {
		add(KindFiles, setMap(a.Unowned), setMap(b.Unowned))
	}
	d.Same = len(d.Kinds) == 0
	return d
}

// changes lists the keys whose values differ. When exactly one side is
// partial only its keys count, and its empty values match any.
func changes(x, y map[string]string, xPartial, yPartial bool) []Change {
	keys := map[string]bool{}
	for k := range x {
		keys[k] = !yPartial || xPartial
	}
	for k := range y {
		keys[k] = keys[k] || !xPartial || yPartial
	}
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !keys[k] {
			continue
		}
		xv, xok := x[k]
		yv, yok := y[k]
		switch {
		case xv == yv && xok == yok:
			continue
		case xok && yok && (xPartial != yPartial) && (xPartial && xv == "" || yPartial && yv == ""):
			continue
		}
		out = append(out, Change{Name: k, A: show(xv, xok), B: show(yv, yok)})
	}
	return out
}

func show(v string, ok bool) string {
	switch {
	case !ok:
		return ""
	case v == "":
		return "present"
	}
	return v
}

func one(k, v string) map[string]string {
	if v == "" {
		return nil
	}
	return map[string]string{k: v}
}

func stackMap(f *Facts) map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{"os": f.OS, "python": f.Python, "cuda": f.CUDA} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func fwMap(f *Facts) map[string]string {
	m := map[string]string{}
	for name, fw := range f.Frameworks {
		v := fw.Version
		if fw.CUDA != "" {
			v += " cuda " + fw.CUDA
		}
		m[name] = v
	}
	return m
}

func osMap(f *Facts) map[string]string {
	m := map[string]string{}
	for _, p := range f.OSPackages {
		m[p.Name] = p.Version
	}
	return m
}

// distMap keys distributions by name; one installed in several
// environments has its versions joined.
func distMap(f *Facts) map[string]string {
	vs := map[string][]string{}
	for _, d := range f.Dists {
		vs[d.Name] = append(vs[d.Name], d.Version)
	}
	return joined(vs)
}

func cudaMap(f *Facts) map[string]string {
	vs := map[string][]string{}
	for _, c := range f.CUDAComponents {
		vs[c.Name] = append(vs[c.Name], c.Version)
	}
	for _, r := range f.RunfileCUDA {
		vs["runfile "+r] = append(vs["runfile "+r], "")
	}
	return joined(vs)
}

func condaMap(f *Facts) map[string]string {
	m := map[string]string{}
	for _, c := range f.Conda {
		m[c.Env+" "+c.Name] = c.Version
	}
	return m
}

func setMap(s []string) map[string]string {
	m := map[string]string{}
	for _, p := range s {
		m[p] = "present"
	}
	return m
}

func joined(vs map[string][]string) map[string]string {
	m := map[string]string{}
	for k, v := range vs {
		slices.Sort(v)
		m[k] = strings.Join(slices.Compact(v), ", ")
	}
	return m
}

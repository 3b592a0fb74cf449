package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// NarrowTarget returns target t with its GPU list narrowed to the GPUs
// gpu names (a name, alias or architecture, or several separated by
// commas), and a note saying what changed; t as it is and no note when
// gpu is empty. A fleet with several GPUs (eks/al2023 lists T4 to B200)
// rents one of them per host: --gpu says which, in every command that
// takes a target (validate, images import, matrix resolve and check,
// publish's targets:). An architecture keeps the target's GPUs of that
// architecture. A GPU the target does not list is an error naming the
// ones it does; a target without a GPU list takes the given GPUs as its
// own. This is the one home of the rule.
func (db *DB) NarrowTarget(t Target, gpu string) (Target, string, error) {
	names := (Constraints{GPU: gpu}).GPUs()
	if len(names) == 0 {
		return t, "", nil
	}
	var want []GPU
	for _, n := range names {
		g, err := db.FindGPU(strings.TrimSpace(n))
		if err != nil {
			return t, "", err
		}
		want = append(want, g)
	}
	if len(t.GPUs) == 0 {
		out := t
		out.GPUs = nil
		for _, g := range want {
			out.GPUs = append(out.GPUs, g.Name)
		}
		return out, fmt.Sprintf("target %s records no GPUs; the given %s are its GPUs", t.Name, strings.Join(out.GPUs, ",")), nil
	}
	var kept []string
	for _, g := range want {
		match, err := db.targetGPUsLike(t, g)
		if err != nil {
			return t, "", err
		}
		if len(match) == 0 {
			return t, "", fmt.Errorf("GPU %s is not among target %s's GPUs (%s): give one of those with --gpu, or drop --target to check %s alone", g.Name, t.Name, strings.Join(t.GPUs, ", "), g.Name)
		}
		for _, m := range match {
			if !slices.Contains(kept, m) {
				kept = append(kept, m)
			}
		}
	}
	if slices.Equal(kept, t.GPUs) {
		return t, "", nil
	}
	out := t
	out.GPUs = kept
	return out, fmt.Sprintf("the given GPU %s narrows target %s's GPUs (%s) to %s", gpu, t.Name, strings.Join(t.GPUs, ", "), strings.Join(kept, ", ")), nil
}

// targetGPUsLike lists target t's GPUs that are g: the same row, or, for
// an architecture (sm_90), every GPU of that architecture.
func (db *DB) targetGPUsLike(t Target, g GPU) ([]string, error) {
	archOnly := g.Name == g.Arch
	var out []string
	for _, n := range t.GPUs {
		tg, err := db.FindGPU(n)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
		if tg.Name == g.Name || archOnly && tg.Arch == g.Arch {
			out = append(out, n)
		}
	}
	return out, nil
}

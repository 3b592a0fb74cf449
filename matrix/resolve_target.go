package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// resolveTarget resolves c for the fleet c.Target names. The target's
// driver becomes the driver constraint unless c gives its own (an explicit
// driver wins: it describes the part of the fleet the image is for); its
// GPUs, narrowed to c's GPUs (NarrowTarget), become the GPU constraint. A stack the driver meets strictly is
// preferred; when there is none and c.Compat is not set, the newest stack
// that runs under CUDA minor-version compatibility is taken. Notes on the
// stack say what came from the target, which of its facts are unconfirmed,
// and what could not be checked.
func (db *DB) resolveTarget(c Constraints) (Stack, error) {
	t, err := db.Target(c.Target)
	if err != nil {
		return Stack{}, err
	}
	t, narrowed, err := db.NarrowTarget(t, c.GPU)
	if err != nil {
		return Stack{}, err
	}
	if len(t.GPUs) > 0 {
		c.GPU = "" // the target's GPUs, narrowed by c's, are the constraint
	}
	tc, took, notes := applyTarget(c, t)
	if narrowed != "" {
		notes = append(notes, narrowed)
	}
	s, fail, err := db.resolve(tc)
	if err != nil {
		return Stack{}, err
	}
	used := tc // the constraints s was found with
	if s == nil && !tc.Compat && !tc.Driver.IsZero() {
		cc := tc
		cc.Compat = true
		compat, cfail, err := db.resolve(cc)
		if err != nil {
			return Stack{}, err
		}
		if compat != nil {
			s, used = compat, cc
			notes = append(notes, fmt.Sprintf("no stack meets driver %s strictly with these constraints, so this one runs on it under CUDA minor-version compatibility", tc.Driver))
		} else {
			tc, fail = cc, cfail
		}
	}
	if s == nil {
		ce := db.explain(tc, fail)
		if took != "" {
			ce.Reason += fmt.Sprintf(" (target %s gives %s)", t.Name, took)
		}
		return Stack{}, ce
	}
	st := db.offerSupported(*s, used)
	st.Target = t.Name
	if st.SupportedAlternative != nil {
		st.SupportedAlternative.Target = t.Name
	}
	if src, ok := db.Sources[t.Source]; ok {
		st.Sources[t.Source] = src.URL
	}
	st.Notes = append(notes, st.Notes...)
	return st, nil
}

// applyTarget sets the driver and GPU constraints of c from target t where
// c gives none, and says which it set ("driver 535.54.03 and GPUs H100-SXM")
// and, in notes, why the others were not.
func applyTarget(c Constraints, t Target) (_ Constraints, took string, notes []string) {
	unconfirmed := func(key string) string {
		if slices.Contains(t.Unconfirmed, key) {
			return " (unconfirmed: see gpuimg matrix list targets)"
		}
		return ""
	}
	var set []string
	switch {
	case !c.Driver.IsZero() && !t.Driver.IsZero() && c.Driver.Compare(t.Driver) != 0:
		notes = append(notes, fmt.Sprintf("the given driver %s replaces target %s's driver %s", c.Driver, t.Name, t.Driver))
	case !c.Driver.IsZero():
	case t.Driver.IsZero():
		notes = append(notes, fmt.Sprintf("target %s records no host driver, so no driver floor was checked; give --driver for your hosts", t.Name))
	default:
		c.Driver = t.Driver
		set = append(set, "driver "+t.Driver.String()+unconfirmed("driver"))
	}
	gpus := strings.Join(t.GPUs, ",")
	switch {
	case c.GPU != "":
	case len(t.GPUs) == 0:
		notes = append(notes, fmt.Sprintf("target %s records no GPUs, so no kernel coverage was checked; give --gpu for your hosts", t.Name))
	default:
		c.GPU = gpus
		set = append(set, "GPUs "+gpus+unconfirmed("gpus"))
	}
	switch {
	case t.Fabric == "" || strings.EqualFold(c.Fabric, t.Fabric):
	case c.Fabric == "":
		notes = append(notes, fmt.Sprintf("target %s's fleet uses fabric %s%s for multi-node jobs: build with --fabric %s to add its user space and have the frameworks' NCCL checked against it", t.Name, t.Fabric, unconfirmed("fabric"), t.Fabric))
	default:
		notes = append(notes, fmt.Sprintf("the given fabric %s is not target %s's, %s%s", c.Fabric, t.Name, t.Fabric, unconfirmed("fabric")))
	}
	took = strings.Join(set, " and ")
	head := fmt.Sprintf("resolved for target %s (source %s)", t.Name, t.Source)
	if took != "" {
		head += ": its " + took + " are the driver and GPU constraints"
	}
	return c, took, append([]string{head}, notes...)
}

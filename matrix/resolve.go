package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// Resolve returns the most preferred stack that satisfies c: newest
// frameworks first; without a CUDA constraint, stable wheel variants before
// experimental ones and an image CUDA as close as possible to the wheels'
// CUDA; with one, the newest matching image CUDA and the wheel variant built
// for its major.minor (else the nearest older minor of the same major),
// upstream status and PyPI's default variant breaking ties; then the
// preferred OS (Ubuntu, newest first), and the OS's default Python where it
// fits. A note on the stack says why each variant was chosen. It is deterministic. When nothing fits it returns a
// *ConflictError. Input errors (an unknown GPU, a bad flavor) are plain errors.
// With c.Target set, the target's driver and GPUs are the driver and GPU
// constraints unless c gives them; a stack its driver meets strictly is
// preferred, else the newest under minor-version compatibility, and the
// stack's notes say what came from the target. An unknown target is an
// error wrapping ErrUnknownTarget.
func (db *DB) Resolve(c Constraints) (Stack, error) {
	if c.Target != "" {
		return db.resolveTarget(c)
	}
	s, fail, err := db.resolve(c)
	if err != nil {
		return Stack{}, err
	}
	if s != nil {
		return db.offerSupported(*s, c), nil
	}
	return Stack{}, db.explain(c, fail)
}

// offerSupported adds to s, when its base image is end of life, the
// newest stack on a supported base that satisfies c (a search that skips
// end-of-life images), and a note that names it or says there is none.
// The rule (docs/matrix-data.md, "The resolver's preference order"): the
// newest framework stays the answer, as the user's framework constraint
// comes first, and the supported stack is offered beside it.
func (db *DB) offerSupported(s Stack, c Constraints) Stack {
	if !s.BaseImageEOL {
		return s
	}
	alt, _, err := db.resolveIn(c, true)
	if err != nil || alt == nil {
		s.Notes = append(s.Notes, fmt.Sprintf("no stack on a base image NVIDIA supports fits these constraints: %s is the only kind that does", s.BaseImage))
		return s
	}
	pin := []string{}
	for _, fw := range alt.FrameworkList() {
		pin = append(pin, fmt.Sprintf("--%s %s", fw.Name, fw.Version))
	}
	pin = append(pin, "--cuda "+alt.CUDA)
	s.Notes = append(s.Notes, fmt.Sprintf("%s fits these constraints only on end-of-life bases; the newest stack on a supported one is %s (%s): add %s for it (supported_alternative in -o json)",
		s.Short(), alt.Short(), alt.BaseImage, strings.Join(pin, " ")))
	s.SupportedAlternative = alt
	return s
}

// search holds what stays fixed while candidate stacks are tried.
type search struct {
	db    *DB
	c     Constraints
	gpus  []GPU // the GPU constraint's GPUs; none without one
	cudas []CUDARelease
	oses  []OS
	fails *failures
	// fabric is the fabric c.Fabric names; nil without one.
	fabric *Fabric
	// standalone allows a standalone Python (StandalonePython) where the
	// OS packages none that fits: the second pass of resolve.
	standalone bool
	// supportedOnly skips base images NVIDIA has marked end of life
	// (offerSupported's search).
	supportedOnly bool
}

// resolve searches twice: with the OSes' own Pythons only, then, when
// nothing fits and the matrix has standalone Pythons, allowing one where
// the OS packages no Python that fits. A Python the OS packages is thus
// preferred over a more preferred CUDA, framework or OS. The failures are
// both passes' (the furthest stage wins).
func (db *DB) resolve(c Constraints) (*Stack, *failures, error) {
	return db.resolveIn(c, false)
}

// resolveIn is resolve, on supported base images only when supportedOnly.
func (db *DB) resolveIn(c Constraints, supportedOnly bool) (*Stack, *failures, error) {
	s, lists, err := db.newSearch(c)
	if err != nil {
		return nil, nil, err
	}
	s.supportedOnly = supportedOnly
	if st := s.run(lists); st != nil || len(db.StandalonePythons) == 0 {
		return st, s.fails, nil
	}
	s.standalone, s.fails.pass = true, 1
	return s.run(lists), s.fails, nil
}

// run tries the candidates in preference order and returns the first
// stack that passes every stage, or nil.
func (s *search) run(lists [][]fwChoice) *Stack {
	if s.c.CUDA.IsZero() {
		// Variants in their own preference order, each on the image CUDAs
		// closest to its wheels.
		for _, combo := range product(lists) {
			if !s.combineFrameworks(combo) {
				continue
			}
			for _, r := range orderCUDA(s.cudas, combo) {
				if st := s.tryCUDA(combo, r); st != nil {
					return st
				}
			}
		}
		return nil
	}
	// A requested CUDA: newest releases first, the newest matching image
	// CUDA first, and on it the variants closest to its CUDA.
	releases := make([][][]fwChoice, len(lists))
	for i, l := range lists {
		releases[i] = byRelease(l)
	}
	for _, rel := range product(releases) {
		variants := product(rel)
		for _, r := range s.cudas {
			for _, combo := range orderForCUDA(variants, r.Version) {
				if !s.combineFrameworks(combo) {
					continue
				}
				if st := s.tryCUDA(combo, r); st != nil {
					return st
				}
			}
		}
	}
	return nil
}

// newSearch checks the input constraints and lists the candidates of each
// stage in preference order: each framework's choices, CUDA releases, OSes.
func (db *DB) newSearch(c Constraints) (*search, [][]fwChoice, error) {
	s := &search{db: db, c: c, fails: &failures{}}
	if c.Flavor != "" && c.Flavor != "runtime" && c.Flavor != "devel" && c.Flavor != "base" {
		return nil, nil, fmt.Errorf("unknown flavor %q: use runtime, devel or base", c.Flavor)
	}
	if c.Fabric != "" {
		f, err := db.Fabric(c.Fabric)
		if err != nil {
			return nil, nil, err
		}
		if f.Build == nil && f.Host == nil {
			return nil, nil, fmt.Errorf("fabric %s: the matrix records no way to install its user space; add a build: to its row with --matrix-file (docs/fabric.md)", f.Name)
		}
		s.fabric = &f
	}
	for _, name := range c.GPUs() {
		g, err := db.FindGPU(name)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := db.Arch(g.Arch); !ok {
			return nil, nil, fmt.Errorf("GPU %s has architecture %s, which the matrix does not know; add an archs: row with --matrix-file", g.Name, g.Arch)
		}
		s.gpus = append(s.gpus, g)
	}
	var lists [][]fwChoice
	for _, fw := range []struct {
		name string
		want *Constraint
	}{{FrameworkTorch, c.Torch}, {FrameworkTensorFlow, c.TensorFlow}, {FrameworkJAX, c.JAX}} {
		if fw.want == nil {
			continue
		}
		l, err := db.frameworkChoices(fw.name, fw.want)
		if err != nil {
			return nil, nil, err
		}
		lists = append(lists, l)
	}
	for _, r := range db.CUDA {
		if c.CUDA.Check(r.Version) {
			s.cudas = append(s.cudas, r)
		}
	}
	if len(s.cudas) == 0 {
		return nil, nil, fmt.Errorf("no CUDA release matches %q; see gpuimg matrix list cuda", c.CUDA)
	}
	db.preferSupported(s.cudas)
	for _, o := range db.OS {
		if c.OS == "" || o.Name == c.OS || (strings.HasPrefix(o.Name, c.OS) && !strings.ContainsAny(c.OS, "0123456789")) {
			s.oses = append(s.oses, o)
		}
	}
	if len(s.oses) == 0 {
		var names []string
		for _, o := range db.OS {
			names = append(names, o.Name)
		}
		return nil, nil, fmt.Errorf("unknown OS %q: use one of %s, or a family such as ubuntu", c.OS, strings.Join(names, ", "))
	}
	return s, lists, nil
}

// preferSupported orders releases (newest first) so that, within each
// major.minor, a release NVIDIA still supports comes before one whose
// every image is end of life: NVIDIA supports only the newest point release
// of each minor and deletes the tags of the others.
func (db *DB) preferSupported(cudas []CUDARelease) {
	eol := map[string]bool{}
	for _, r := range cudas {
		all, found := true, false
		for _, b := range db.BaseImages {
			if b.CUDA.Compare(r.Version) == 0 {
				found = true
				all = all && b.EOL
			}
		}
		eol[r.Version.String()] = found && all
	}
	slices.SortStableFunc(cudas, func(a, b CUDARelease) int {
		if c := b.Version.Trunc(2).Compare(a.Version.Trunc(2)); c != 0 {
			return c
		}
		ea, eb := eol[a.Version.String()], eol[b.Version.String()]
		switch {
		case ea && !eb:
			return 1
		case eb && !ea:
			return -1
		}
		return b.Version.Compare(a.Version)
	})
}

// SupportedPointRelease is the newest CUDA release of cuda's major.minor
// with a base image for OS os that NVIDIA has not marked end of life.
func (db *DB) SupportedPointRelease(cuda Version, os string) (Version, bool) {
	var best Version
	for _, b := range db.BaseImages {
		if b.EOL || !b.CUDA.HasPrefix(cuda.Trunc(2)) || !slices.Contains(b.OS, os) {
			continue
		}
		if best.IsZero() || best.Less(b.CUDA) {
			best = b.CUDA
		}
	}
	return best, !best.IsZero()
}

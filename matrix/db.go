package matrix

import (
	"cmp"
	"embed"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gpuimg/gpuimg/internal/bound"
)

//go:embed data/*.yaml
var builtinFS embed.FS

// DB is the loaded compatibility matrix: built-in rows plus any matrix
// files, validated and sorted. Lists are sorted newest first (GPUs and
// architectures by name and number). A DB is read-only after Load and safe
// for concurrent use.
type DB struct {
	Sources      map[string]Source
	CUDAFamilies map[int]CUDAFamily
	CUDA         []CUDARelease
	Archs        []Arch
	CuDNN        []Library
	NCCL         []Library
	OS           []OS
	BaseImages   []BaseImage
	Torch        []Torch
	TensorFlow   []TensorFlow
	JAX          []JAX
	// CUDAToolkitWheels are the releases of the cuda-toolkit metapackage
	// whose extras' component pins are recorded, newest first.
	CUDAToolkitWheels []CUDAToolkitWheel
	// CUDAPlatforms are the platforms each framework release has CUDA
	// wheels for, where recorded.
	CUDAPlatforms []CUDAPlatforms
	GPUs          []GPU
	// Targets are the fleets images run on, sorted by name.
	Targets []Target
	// Fabrics are the multi-node networks (Fabric), sorted by name.
	Fabrics []Fabric
	// Advisories are vulnerabilities validate reports (Advisory), sorted
	// by ID.
	Advisories []Advisory
	// References are published performance figures per GPU row.
	References []Reference
	// Links are the per-link bandwidths of NVLink generations and PCIe
	// generations (Link).
	Links []Link
	// StandalonePythons are the relocatable CPython builds the builder
	// installs where no OS packages the Python minor asked for, one per
	// minor, newest first.
	StandalonePythons []StandalonePython
	// Replaced says which built-in rows matrix files replaced.
	Replaced []string
}

// Builtin returns the matrix embedded in gpuimg.
func Builtin() (*DB, error) { return Load() }

// Load reads the built-in matrix and then each matrix file in order. Rows
// of a later file replace rows with the same key from earlier ones (see
// docs/matrix-data.md). Errors name the file and line.
func Load(paths ...string) (*DB, error) {
	builtin, err := builtinFiles()
	if err != nil {
		return nil, err
	}
	files := slices.Clone(builtin)
	builtinCount := len(files)
	for _, p := range paths {
		b, err := bound.ReadFile(p, "", bound.MaxUserFile)
		if err != nil {
			return nil, fmt.Errorf("read matrix file: %w", err)
		}
		f, err := ParseFile(p, b)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return build(files, builtinCount)
}

// builtinFiles parses the embedded matrix files once per process: they
// are constant, and every command (and test) loads them. build treats
// parsed files as read-only (it copies rows into the DB's own slices, and
// code that orders a row's lists sorts a clone), so DBs built from the
// same parsed files never share a slice they write.
var builtinFiles = sync.OnceValues(func() ([]*File, error) {
	entries, err := fs.Glob(builtinFS, "data/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list built-in matrix: %w", err)
	}
	var files []*File
	for _, name := range entries {
		b, err := builtinFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read built-in matrix %s: %w", name, err)
		}
		f, err := ParseFile(name, b)
		if err != nil {
			return nil, fmt.Errorf("built-in matrix is broken (a gpuimg bug): %w", err)
		}
		files = append(files, f)
	}
	return files, nil
})

// merger keeps rows by key; a later file's row replaces an earlier file's.
type merger[T any] struct {
	kind    string
	key     func(T) string
	pos     func(T) Pos
	rows    []T
	index   map[string]int
	replace *[]string
	errs    *[]error
}

func (m *merger[T]) add(rows []T, fileIdx, builtinCount int, seenInFile map[string]bool) {
	if m.index == nil {
		m.index = map[string]int{}
	}
	for _, r := range rows {
		k := m.key(r)
		if seenInFile[k] {
			*m.errs = append(*m.errs, fmt.Errorf("%s: %s %s is listed twice in this file", m.pos(r), m.kind, k))
			continue
		}
		seenInFile[k] = true
		if i, ok := m.index[k]; ok {
			if fileIdx >= builtinCount {
				*m.replace = append(*m.replace, fmt.Sprintf("%s %s from %s replaces the row at %s", m.kind, k, shortPos(m.pos(r)), m.pos(m.rows[i])))
			}
			m.rows[i] = r
			continue
		}
		m.index[k] = len(m.rows)
		m.rows = append(m.rows, r)
	}
}

func build(files []*File, builtinCount int) (*DB, error) {
	var errs []error
	db := &DB{Sources: map[string]Source{}, CUDAFamilies: map[int]CUDAFamily{}}
	rowPos := func(r Row) Pos { return r.At }
	var (
		src  = merger[Source]{kind: "source", key: func(s Source) string { return s.ID }, pos: func(s Source) Pos { return s.At }}
		fam  = merger[CUDAFamily]{kind: "CUDA family", key: func(r CUDAFamily) string { return fmt.Sprint(r.Major) }, pos: func(r CUDAFamily) Pos { return rowPos(r.Row) }}
		cuda = merger[CUDARelease]{kind: "CUDA", key: func(r CUDARelease) string { return r.Version.Trunc(3).String() }, pos: func(r CUDARelease) Pos { return rowPos(r.Row) }}
		arch = merger[Arch]{kind: "architecture", key: func(r Arch) string { return r.Arch }, pos: func(r Arch) Pos { return rowPos(r.Row) }}
		dnn  = merger[Library]{kind: "cuDNN", key: func(r Library) string { return r.Version.String() }, pos: func(r Library) Pos { return rowPos(r.Row) }}
		nccl = merger[Library]{kind: "NCCL", key: func(r Library) string { return r.Version.String() }, pos: func(r Library) Pos { return rowPos(r.Row) }}
		oss  = merger[OS]{kind: "OS", key: func(r OS) string { return r.Name }, pos: func(r OS) Pos { return rowPos(r.Row) }}
		tch  = merger[Torch]{kind: "torch", key: func(r Torch) string { return r.Version.String() }, pos: func(r Torch) Pos { return rowPos(r.Row) }}
		tf   = merger[TensorFlow]{kind: "tensorflow", key: func(r TensorFlow) string { return r.Version.String() }, pos: func(r TensorFlow) Pos { return rowPos(r.Row) }}
		jx   = merger[JAX]{kind: "jax", key: func(r JAX) string { return r.Version.String() }, pos: func(r JAX) Pos { return rowPos(r.Row) }}
		plat = merger[CUDAPlatforms]{kind: "cuda_platforms", key: func(r CUDAPlatforms) string { return r.Framework + " " + r.Versions.String() }, pos: func(r CUDAPlatforms) Pos { return rowPos(r.Row) }}
		gpu  = merger[GPU]{kind: "GPU", key: func(r GPU) string { return strings.ToLower(r.Name) }, pos: func(r GPU) Pos { return rowPos(r.Row) }}
		tgt  = merger[Target]{kind: "target", key: func(r Target) string { return strings.ToLower(r.Name) }, pos: func(r Target) Pos { return rowPos(r.Row) }}
		fab  = merger[Fabric]{kind: "fabric", key: func(r Fabric) string { return strings.ToLower(r.Name) }, pos: func(r Fabric) Pos { return rowPos(r.Row) }}
		adv  = merger[Advisory]{kind: "advisory", key: func(r Advisory) string { return r.ID }, pos: func(r Advisory) Pos { return rowPos(r.Row) }}
		ref  = merger[Reference]{kind: "reference", key: Reference.Key, pos: func(r Reference) Pos { return rowPos(r.Row) }}
		lnk  = merger[Link]{kind: "link", key: Link.Key, pos: func(r Link) Pos { return rowPos(r.Row) }}
		ctk  = merger[CUDAToolkitWheel]{kind: "cuda-toolkit wheel", key: func(r CUDAToolkitWheel) string { return r.Version }, pos: func(r CUDAToolkitWheel) Pos { return rowPos(r.Row) }}
		spy  = merger[StandalonePython]{kind: "standalone Python", key: func(r StandalonePython) string { return r.Version.Trunc(2).String() }, pos: func(r StandalonePython) Pos { return rowPos(r.Row) }}
	)
	for _, m := range []interface{ setup(*[]string, *[]error) }{&src, &fam, &cuda, &arch, &dnn, &nccl, &oss, &tch, &tf, &jx, &plat, &gpu, &tgt, &fab, &adv, &ref, &lnk, &spy, &ctk} {
		m.setup(&db.Replaced, &errs)
	}
	// Base images: several rows may share a CUDA version (OS sets differ by
	// flavor); a later file's rows for a version replace all earlier ones.
	var images []BaseImage
	for i, f := range files {
		seen := func() map[string]bool { return map[string]bool{} }
		src.add(f.Sources, i, builtinCount, seen())
		fam.add(f.CUDAFamilies, i, builtinCount, seen())
		cuda.add(f.CUDA, i, builtinCount, seen())
		arch.add(f.Archs, i, builtinCount, seen())
		dnn.add(f.CuDNN, i, builtinCount, seen())
		nccl.add(f.NCCL, i, builtinCount, seen())
		oss.add(f.OS, i, builtinCount, seen())
		tch.add(f.Torch, i, builtinCount, seen())
		tf.add(f.TensorFlow, i, builtinCount, seen())
		jx.add(f.JAX, i, builtinCount, seen())
		plat.add(f.CUDAPlatforms, i, builtinCount, seen())
		gpu.add(f.GPUs, i, builtinCount, seen())
		tgt.add(f.Targets, i, builtinCount, seen())
		fab.add(f.Fabrics, i, builtinCount, seen())
		adv.add(f.Advisories, i, builtinCount, seen())
		ref.add(f.References, i, builtinCount, seen())
		lnk.add(f.Links, i, builtinCount, seen())
		spy.add(f.StandalonePythons, i, builtinCount, seen())
		ctk.add(f.CUDAToolkitWheels, i, builtinCount, seen())
		if len(f.BaseImages) > 0 {
			mine := map[string]bool{}
			for _, b := range f.BaseImages {
				mine[b.CUDA.String()] = true
			}
			images = slices.DeleteFunc(images, func(b BaseImage) bool {
				if mine[b.CUDA.String()] && i >= builtinCount {
					db.Replaced = append(db.Replaced, fmt.Sprintf("base images for CUDA %s from %s replace the row at %s", b.CUDA, filepath.Base(f.BaseImages[0].At.File), b.At))
				}
				return mine[b.CUDA.String()]
			})
			images = append(images, f.BaseImages...)
		}
	}
	for _, s := range src.rows {
		db.Sources[s.ID] = s
	}
	for _, r := range fam.rows {
		db.CUDAFamilies[r.Major] = r
	}
	db.CUDA, db.Archs, db.CuDNN, db.NCCL = cuda.rows, arch.rows, dnn.rows, nccl.rows
	db.OS, db.BaseImages, db.Torch, db.TensorFlow, db.JAX, db.GPUs = oss.rows, images, tch.rows, tf.rows, jx.rows, gpu.rows
	db.Targets, db.References, db.Links = tgt.rows, ref.rows, lnk.rows
	db.Fabrics = fab.rows
	db.Advisories = slices.Clone(adv.rows)
	db.CUDAPlatforms = plat.rows
	db.StandalonePythons = spy.rows
	db.CUDAToolkitWheels = ctk.rows

	errs = append(errs, db.validate()...)
	if len(errs) > 0 {
		return nil, Problems(errs)
	}
	db.sort()
	return db, nil
}

// shortPos names a user file by its base name: the note ends up in image
// labels, which must not depend on where the file lay on the build host.
func shortPos(p Pos) string { return fmt.Sprintf("%s:%d", filepath.Base(p.File), p.Line) }

func (m *merger[T]) setup(replace *[]string, errs *[]error) { m.replace, m.errs = replace, errs }

var (
	archRE     = regexp.MustCompile(`^sm_[0-9]{2,3}[af]?$`)
	platformRE = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9]+$`)
)

// checkPins reports a package pinned twice in one list.
func checkPins(bad func(Pos, string, ...any), at Pos, what string, pins []Pin) {
	seen := map[string]bool{}
	for _, p := range pins {
		if seen[p.Name] {
			bad(at, "%s pins %s twice", what, p.Name)
		}
		seen[p.Name] = true
	}
}

// checkLibPins checks that a torch variant's cudnn and nccl agree with its
// nvidia-cudnn-cuNN and nvidia-nccl-cuNN pins: one fact, written twice.
func checkLibPins(bad func(Pos, string, ...any), at Pos, what string, v TorchVariant) {
	for _, lib := range []struct {
		name string
		v    Version
	}{{"cudnn", v.CuDNN}, {"nccl", v.NCCL}} {
		for _, p := range v.Pins {
			if !strings.HasPrefix(p.Name, "nvidia-"+lib.name+"-cu") {
				continue
			}
			if lib.v.IsZero() || !p.Same(Pin{Name: p.Name, Raw: lib.v.String()}) {
				bad(at, "%s pins %s but records %s %s: write the pinned version", what, p, lib.name, orNone(lib.v))
			}
		}
	}
}

// orNone is v, or "none" when zero.
func orNone(v Version) string {
	if v.IsZero() {
		return "none"
	}
	return v.String()
}

func (db *DB) validate() []error {
	var errs []error
	bad := func(at Pos, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", at, fmt.Sprintf(format, args...)))
	}
	checkRow := func(r Row, what string) {
		if r.Source == "" {
			bad(r.At, "%s has no source: every row names the id of an entry under sources:", what)
		} else if _, ok := db.Sources[r.Source]; !ok {
			bad(r.At, "%s names source %q, which no file defines under sources:", what, r.Source)
		}
	}
	for _, s := range db.Sources {
		if s.ID == "" || s.URL == "" {
			bad(s.At, "a source needs an id and a url")
		}
	}
	for _, f := range db.CUDAFamilies {
		checkRow(f.Row, fmt.Sprintf("CUDA family %d", f.Major))
		if f.MinDriverCompat.IsZero() {
			bad(f.At, "CUDA family %d needs min_driver_compat", f.Major)
		}
	}
	for _, r := range db.CUDA {
		checkRow(r.Row, "CUDA "+r.Version.String())
		if r.Version.Len() != 3 {
			bad(r.At, "CUDA version %q must be x.y.z", r.Version)
		}
	}
	for _, a := range db.Archs {
		checkRow(a.Row, "architecture "+a.Arch)
		if !archRE.MatchString(a.Arch) {
			bad(a.At, "architecture %q must look like sm_90", a.Arch)
		}
		if a.AddedIn.IsZero() {
			bad(a.At, "architecture %s needs added_in", a.Arch)
		}
	}
	for _, libs := range []struct {
		name string
		rows []Library
	}{{"cuDNN", db.CuDNN}, {"NCCL", db.NCCL}} {
		for _, l := range libs.rows {
			checkRow(l.Row, libs.name+" "+l.Version.String())
			if l.Version.IsZero() || l.CUDA.IsZero() {
				bad(l.At, "%s rows need version and cuda", libs.name)
			}
			for _, g := range l.Gencode {
				if !l.CUDA.Check(g.CUDA) {
					bad(l.At, "%s %s: gencode for CUDA %s, which its cuda %q does not include", libs.name, l.Version, g.CUDA, l.CUDA)
				}
				for _, a := range slices.Concat(g.SASS, g.PTX) {
					if !archRE.MatchString(a) {
						bad(l.At, "%s %s: gencode architecture %q must look like sm_90", libs.name, l.Version, a)
					}
				}
			}
		}
	}
	osNames := map[string]bool{}
	for _, o := range db.OS {
		checkRow(o.Row, "OS "+o.Name)
		osNames[o.Name] = true
		if o.Name == "" || o.Family == "" || len(o.Pythons) == 0 {
			bad(o.At, "OS rows need name, family and pythons")
		}
	}
	for _, b := range db.BaseImages {
		checkRow(b.Row, "base images for CUDA "+b.CUDA.String())
		if b.CUDA.Len() != 3 || len(b.OS) == 0 || len(b.Flavors) == 0 {
			bad(b.At, "base image rows need cuda (x.y.z), os and flavors")
		}
		for _, o := range b.OS {
			if !osNames[o] {
				bad(b.At, "base images for CUDA %s name OS %q, which has no os: row", b.CUDA, o)
			}
		}
	}
	for _, t := range db.Torch {
		checkRow(t.Row, "torch "+t.Version.String())
		if t.Version.IsZero() || t.Python.IsZero() || len(t.Variants) == 0 {
			bad(t.At, "torch rows need version, python and variants")
		}
		for i, v := range t.Variants {
			if v.CUDA.IsZero() {
				bad(t.At, "torch %s variant %d needs cuda", t.Version, i+1)
			}
			if v.Status != "stable" && v.Status != "experimental" {
				bad(t.At, "torch %s variant cu%s: status must be stable or experimental, not %q", t.Version, CUDATag(v.CUDA), v.Status)
			}
			what := fmt.Sprintf("torch %s variant cu%s", t.Version, CUDATag(v.CUDA))
			checkPins(bad, t.At, what, v.Pins)
			checkLibPins(bad, t.At, what, v)
			for _, a := range append(slices.Clone(v.Archs), v.PTX...) {
				if !archRE.MatchString(a) {
					bad(t.At, "torch %s variant cu%s: architecture %q must look like sm_90", t.Version, CUDATag(v.CUDA), a)
				}
			}
		}
	}
	for _, t := range db.TensorFlow {
		checkRow(t.Row, "tensorflow "+t.Version.String())
		if t.Version.IsZero() || t.Python.IsZero() || t.CUDA.IsZero() || t.CuDNN.IsZero() {
			bad(t.At, "tensorflow rows need version, python, cuda and cudnn")
		}
		if t.PipVersion != "" && !strings.HasPrefix(t.PipVersion, t.Version.String()+".post") {
			bad(t.At, "tensorflow %s: pip_version %q must be a post release of %s (%s.post1)", t.Version, t.PipVersion, t.Version, t.Version)
		}
		checkPins(bad, t.At, "tensorflow "+t.Version.String(), t.Pins)
		for _, u := range t.Unserved {
			if u.Pin.Name == "" || u.Why == "" {
				bad(t.At, "tensorflow %s: an unserved entry needs pin and why", t.Version)
			} else if len(t.Pins) > 0 && !slices.ContainsFunc(t.Pins, func(p Pin) bool { return p.Name == u.Pin.Name && p.Same(u.Pin) }) {
				bad(t.At, "tensorflow %s: unserved %s is not one of its pins", t.Version, u.Pin)
			}
		}
	}
	for _, w := range db.CUDAToolkitWheels {
		checkRow(w.Row, "cuda-toolkit wheel "+w.Version)
		if _, err := ParsePin(toolkitName + "==" + w.Version); err != nil || len(w.Extras) == 0 {
			bad(w.At, "cuda_toolkit_wheels rows need a version (13.0.2) and extras")
		}
		for e, p := range w.Extras {
			if !strings.HasPrefix(p.Name, "nvidia-") || len(p.Extras) > 0 {
				bad(w.At, "cuda-toolkit %s extra %s: %s must pin one nvidia-* wheel", w.Version, e, p)
			}
		}
	}
	for _, j := range db.JAX {
		checkRow(j.Row, "jax "+j.Version.String())
		if j.Version.IsZero() || len(j.Variants) == 0 {
			bad(j.At, "jax rows need version and variants")
		}
		for _, v := range j.Variants {
			if v.Extra == "" || v.CUDA.IsZero() || v.MinCUDA.IsZero() {
				bad(j.At, "jax %s variants need extra, cuda and min_cuda", j.Version)
			}
		}
	}
	checkDriver := func(d DriverSupport, at Pos, what string) {
		if d.IsZero() && d.First.IsZero() {
			return
		}
		if d.Source == "" {
			bad(at, "%s: driver needs a source", what)
		} else if _, ok := db.Sources[d.Source]; !ok {
			bad(at, "%s: driver names source %q, which no file defines under sources:", what, d.Source)
		}
		for _, b := range []Version{d.Branch, d.Last} {
			if !b.IsZero() && b.Len() != 1 {
				bad(at, "%s: driver branch %q must be a branch number such as 525", what, b)
			}
		}
		if !d.First.IsZero() && (d.Branch.IsZero() || d.First.Major() != d.Branch.Major()) {
			bad(at, "%s: driver first %s must be a release of its branch %s", what, d.First, d.Branch)
		}
		for _, m := range checkBranches(d) {
			bad(at, "%s: %s", what, m)
		}
		if !d.ListedSince.IsZero() {
			switch {
			case d.ListedSince.Len() < 2:
				bad(at, "%s: driver listed_since %q must be a release such as 515.48.07", what, d.ListedSince)
			case !d.Branch.IsZero() || !d.First.IsZero():
				bad(at, "%s: driver listed_since (a lower bound for a GPU older than NVIDIA's lists) goes without branch and first", what)
			case !d.Last.IsZero() && d.Last.Major() < d.ListedSince.Major():
				bad(at, "%s: driver listed_since %s is after its last branch %s", what, d.ListedSince, d.Last)
			}
		}
	}
	for _, a := range db.Archs {
		for _, m := range db.checkArchTargets(a) {
			bad(a.At, "architecture %s: %s", a.Arch, m)
		}
		checkDriver(a.Driver, a.At, "architecture "+a.Arch)
		if !a.Driver.ListedSince.IsZero() {
			bad(a.At, "architecture %s: driver listed_since is for gpus: rows", a.Arch)
		}
		if len(a.Driver.Branches) > 0 {
			bad(a.At, "architecture %s: driver branches is for gpus: rows", a.Arch)
		}
	}
	for _, p := range db.CUDAPlatforms {
		checkRow(p.Row, "cuda_platforms "+p.Framework)
		if !slices.Contains(FrameworkNames(), p.Framework) || len(p.Platforms) == 0 {
			bad(p.At, "cuda_platforms rows need a framework (%s) and platforms", strings.Join(FrameworkNames(), ", "))
		}
		for _, pl := range p.Platforms {
			if !platformRE.MatchString(pl) {
				bad(p.At, "cuda_platforms %s: platform %q must look like linux/amd64", p.Framework, pl)
			}
		}
	}
	for _, g := range db.GPUs {
		checkRow(g.Row, "GPU "+g.Name)
		if g.Name == "" || !archRE.MatchString(g.Arch) {
			bad(g.At, "GPU rows need a name and an arch like sm_90")
		}
		checkDriver(g.Driver, g.At, "GPU "+g.Name)
		if a, ok := db.Arch(g.Arch); ok && !g.Driver.Branch.IsZero() && g.Driver.Branch.Less(a.Driver.Branch) {
			bad(g.At, "GPU %s: driver branch %s is below its architecture %s's %s", g.Name, g.Driver.Branch, g.Arch, a.Driver.Branch)
		}
	}
	for _, r := range db.References {
		checkRow(r.Row, "reference "+r.Key())
		for _, m := range db.validateReference(r) {
			bad(r.At, "%s", m)
		}
	}
	for _, l := range db.Links {
		checkRow(l.Row, "link "+l.Key())
		for _, m := range validateLink(l) {
			bad(l.At, "%s", m)
		}
	}
	for _, p := range db.StandalonePythons {
		checkRow(p.Row, "standalone Python "+p.Version.String())
		for _, m := range validateStandalone(p) {
			bad(p.At, "%s", m)
		}
	}
	for i := range db.Advisories {
		a := &db.Advisories[i]
		checkRow(a.Row, "advisory "+a.ID)
		for _, m := range validateAdvisory(a) {
			bad(a.At, "%s", m)
		}
	}
	for _, f := range db.Fabrics {
		checkRow(f.Row, "fabric "+f.Name)
		for _, m := range db.validateFabric(f) {
			bad(f.At, "%s", m)
		}
	}
	for _, t := range db.Targets {
		checkRow(t.Row, "target "+t.Name)
		for _, m := range db.validateTarget(t) {
			bad(t.At, "%s", m)
		}
	}
	return errs
}

func (db *DB) sort() {
	newest := func(a, b Version) int { return b.Compare(a) }
	slices.SortStableFunc(db.CUDA, func(a, b CUDARelease) int { return newest(a.Version, b.Version) })
	slices.SortStableFunc(db.CuDNN, func(a, b Library) int { return newest(a.Version, b.Version) })
	slices.SortStableFunc(db.NCCL, func(a, b Library) int { return newest(a.Version, b.Version) })
	slices.SortStableFunc(db.Torch, func(a, b Torch) int { return newest(a.Version, b.Version) })
	slices.SortStableFunc(db.TensorFlow, func(a, b TensorFlow) int { return newest(a.Version, b.Version) })
	slices.SortStableFunc(db.JAX, func(a, b JAX) int { return newest(a.Version, b.Version) })
	slices.SortStableFunc(db.StandalonePythons, func(a, b StandalonePython) int { return newest(a.Version, b.Version) })
	slices.SortStableFunc(db.BaseImages, func(a, b BaseImage) int { return newest(a.CUDA, b.CUDA) })
	slices.SortStableFunc(db.Archs, func(a, b Arch) int { return cmp.Compare(archNumber(a.Arch), archNumber(b.Arch)) })
	slices.SortStableFunc(db.OS, func(a, b OS) int { return compareOS(a.Name, b.Name) })
	slices.SortStableFunc(db.GPUs, func(a, b GPU) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(db.Targets, func(a, b Target) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(db.Fabrics, func(a, b Fabric) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(db.Advisories, func(a, b Advisory) int { return cmp.Compare(a.ID, b.ID) })
	for i := range db.Fabrics {
		if p := db.Fabrics[i].Plugin; p != nil {
			rel := slices.Clone(p.Releases)
			slices.SortStableFunc(rel, func(a, b PluginRelease) int { return newest(a.Version, b.Version) })
			cp := *p
			cp.Releases = rel
			db.Fabrics[i].Plugin = &cp
		}
	}
	slices.SortStableFunc(db.References, func(a, b Reference) int { return cmp.Compare(a.GPU+"/"+a.Figure, b.GPU+"/"+b.Figure) })
}

// osFamilyRank orders OS families by preference when the user names none:
// Ubuntu first (most CUDA users and wheels target it), then the RHEL family.
var osFamilyRank = map[string]int{"ubuntu": 0, "rockylinux": 1, "ubi": 2}

// compareOS sorts OS names by family preference, then newest release first.
func compareOS(a, b string) int {
	fa, va := splitOS(a)
	fb, vb := splitOS(b)
	ra, oka := osFamilyRank[fa]
	rb, okb := osFamilyRank[fb]
	if !oka {
		ra = 99
	}
	if !okb {
		rb = 99
	}
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	if c := cmp.Compare(fa, fb); c != 0 {
		return c
	}
	return vb.Compare(va)
}

// splitOS splits "ubuntu22.04" into "ubuntu" and 22.04.
func splitOS(name string) (string, Version) {
	i := strings.IndexAny(name, "0123456789")
	if i < 0 {
		return name, Version{}
	}
	v, _ := ParseVersion(name[i:])
	return name[:i], v
}

// archNumber turns sm_90 into 90 (sm_90a into 90).
func archNumber(a string) int {
	n := 0
	for _, c := range strings.TrimPrefix(a, "sm_") {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// loadOnly builds a DB from parsed files alone, without the built-in rows
// (for tests of the rules on a small, fixed world).
func loadOnly(files ...*File) (*DB, error) { return build(files, 0) }

// checkBranches are the problems of d's branches: listings in ascending
// branch order from branch on, each first and unlisted release of its
// own branch, unlisted releases above first.
func checkBranches(d DriverSupport) []string {
	var out []string
	for i, l := range d.Branches {
		switch {
		case l.Branch.Len() != 1 || l.First.Len() < 2 || l.First.Major() != l.Branch.Major():
			out = append(out, fmt.Sprintf("driver branches entry %d needs a branch number (570) and a first release of it (570.123.01)", i+1))
		case i == 0 && (d.Branch.IsZero() || l.Branch.Less(d.Branch)):
			out = append(out, fmt.Sprintf("driver branches start at %s, below (or without) the lowest branch %s", l.Branch, d.Branch))
		case i > 0 && !d.Branches[i-1].Branch.Less(l.Branch):
			out = append(out, fmt.Sprintf("driver branches must ascend: %s after %s", l.Branch, d.Branches[i-1].Branch))
		}
		for _, u := range l.Unlisted {
			if u.Major() != l.Branch.Major() || !l.First.Less(u) {
				out = append(out, fmt.Sprintf("driver branch %s: unlisted %s must be a release of the branch after its first %s", l.Branch, u, l.First))
			}
		}
	}
	return out
}

// checkArchTargets are the problems of a's a/f targets and rename: a
// suffix arrives no earlier than the architecture, and a renamed
// architecture ends (removed_in) and names a known one.
func (db *DB) checkArchTargets(a Arch) []string {
	var out []string
	for _, v := range []struct {
		name string
		from Version
	}{{"arch_specific", a.ArchSpecific}, {"family_specific", a.FamilySpecific}} {
		if !v.from.IsZero() && v.from.Less(a.AddedIn) {
			out = append(out, fmt.Sprintf("%s %s is before added_in %s", v.name, v.from, a.AddedIn))
		}
	}
	if a.RenamedTo != "" {
		if _, ok := db.Arch(a.RenamedTo); !ok || a.RemovedIn.IsZero() {
			out = append(out, fmt.Sprintf("renamed_to %s needs removed_in and an archs: row for %s", a.RenamedTo, a.RenamedTo))
		}
	}
	return out
}

package matrix

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Constraints are what a user asks of a stack. Every field is optional.
type Constraints struct {
	CUDA   Constraint // image CUDA toolkit (--cuda 12.2)
	CuDNN  Constraint // cuDNN the frameworks load (--cudnn 9)
	Python Constraint // CPython (--python 3.11)
	// Torch, TensorFlow and JAX select a framework when non-nil; a zero
	// Constraint inside means "any version".
	Torch      *Constraint
	TensorFlow *Constraint
	JAX        *Constraint
	// OS is an NVIDIA OS name (ubuntu22.04) or a family prefix (ubuntu).
	OS string
	// Flavor is runtime (the default), devel or base.
	Flavor string
	// GPU is a GPU name, alias or architecture the stack must run on.
	GPU string
	// Driver is the host's NVIDIA driver; the stack's floor must not exceed it.
	Driver Version
	// Compat lets Driver be met under minor-version compatibility instead
	// of the strict floor.
	Compat bool
}

// flags renders the constraints as the CLI flags that set them, for messages.
func (c Constraints) flags() []string {
	var out []string
	add := func(name, val string) { out = append(out, fmt.Sprintf("--%s %s", name, val)) }
	if !c.CUDA.IsZero() {
		add("cuda", c.CUDA.String())
	}
	if !c.CuDNN.IsZero() {
		add("cudnn", c.CuDNN.String())
	}
	if c.Torch != nil {
		add("torch", c.Torch.String())
	}
	if c.TensorFlow != nil {
		add("tensorflow", c.TensorFlow.String())
	}
	if c.JAX != nil {
		add("jax", c.JAX.String())
	}
	if !c.Python.IsZero() {
		add("python", c.Python.String())
	}
	if c.OS != "" {
		add("os", c.OS)
	}
	if c.Flavor != "" && c.Flavor != "runtime" {
		add("flavor", c.Flavor)
	}
	if c.GPU != "" {
		add("gpu", c.GPU)
	}
	if !c.Driver.IsZero() {
		add("driver", c.Driver.String())
	}
	return out
}

// without returns a copy of c with the constraint set by flag removed.
func (c Constraints) without(flag string) Constraints {
	name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), " ")
	switch name {
	case "cuda":
		c.CUDA = Constraint{}
	case "cudnn":
		c.CuDNN = Constraint{}
	case "torch":
		c.Torch = &Constraint{}
	case "tensorflow":
		c.TensorFlow = &Constraint{}
	case "jax":
		c.JAX = &Constraint{}
	case "python":
		c.Python = Constraint{}
	case "os":
		c.OS = ""
	case "flavor":
		c.Flavor = ""
	case "gpu":
		c.GPU = ""
	case "driver":
		c.Driver = Version{}
	}
	return c
}

// ErrNoStack is wrapped by every ConflictError, for callers that branch on
// "no stack satisfies the constraints".
var ErrNoStack = errors.New("no stack satisfies the constraints")

// ConflictError explains why no stack satisfies the constraints, and what
// nearby constraints would work.
type ConflictError struct {
	// Reason says which constraints conflict and why.
	Reason string
	// Alternatives are stacks that work if one constraint is dropped,
	// keyed by the dropped flag ("--driver 470.57.02").
	Alternatives []Alternative
}

// Alternative is a working stack found by dropping one constraint.
type Alternative struct {
	Dropped string `json:"dropped"`
	Stack   Stack  `json:"stack"`
}

func (e *ConflictError) Error() string { return e.Reason }
func (e *ConflictError) Unwrap() error { return ErrNoStack }

// Resolve returns the most preferred stack that satisfies c: newest
// frameworks first, stable wheel variants before experimental ones, an image
// CUDA as close as possible to the wheels' CUDA (or the newest matching
// --cuda), the preferred OS (Ubuntu, newest first), and the OS's default
// Python where it fits. It is deterministic. When nothing fits it returns a
// *ConflictError. Input errors (an unknown GPU, a bad flavor) are plain errors.
func (db *DB) Resolve(c Constraints) (Stack, error) {
	s, fail, err := db.resolve(c)
	if err != nil {
		return Stack{}, err
	}
	if s != nil {
		return *s, nil
	}
	ce := &ConflictError{Reason: fail.message()}
	given := c.flags()
	for _, f := range given {
		if alt, _, err := db.resolve(c.without(f)); err == nil && alt != nil {
			ce.Alternatives = append(ce.Alternatives, Alternative{Dropped: f, Stack: *alt})
		}
	}
	// If no single drop works, name the pairs of flags that conflict.
	if len(ce.Alternatives) == 0 && len(given) > 2 {
		for i := range given {
			for j := i + 1; j < len(given); j++ {
				pair := Constraints{Flavor: c.Flavor, Compat: c.Compat}
				pair = pair.with(c, given[i]).with(c, given[j])
				if s, _, err := db.resolve(pair); err == nil && s == nil {
					ce.Reason += fmt.Sprintf("; %s and %s conflict on their own", given[i], given[j])
				}
			}
		}
	}
	return Stack{}, ce
}

// with copies the constraint set by flag from src into c.
func (c Constraints) with(src Constraints, flag string) Constraints {
	name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), " ")
	switch name {
	case "cuda":
		c.CUDA = src.CUDA
	case "cudnn":
		c.CuDNN = src.CuDNN
	case "torch":
		c.Torch = src.Torch
	case "tensorflow":
		c.TensorFlow = src.TensorFlow
	case "jax":
		c.JAX = src.JAX
	case "python":
		c.Python = src.Python
	case "os":
		c.OS = src.OS
	case "flavor":
		c.Flavor = src.Flavor
	case "gpu":
		c.GPU = src.GPU
	case "driver":
		c.Driver = src.Driver
	}
	return c
}

// Stages of checking a candidate, in order. A candidate that fails later
// got further; the reported reason is that of the most preferred candidate
// that got furthest.
const (
	stageFrameworks = iota // frameworks agree on the CUDA major
	stageFwCuDNN           // … and on cuDNN
	stageCUDA              // the image CUDA can run the wheels
	stageImage             // NVIDIA publishes an image for the CUDA
	stageOS                // … on the OS
	stagePython            // a Python fits the OS and the frameworks
	stageCuDNN             // cuDNN constraint and system cuDNN flavor
	stageDriver            // driver floor
	stageGPU               // GPU coverage
)

type failure struct {
	stage int
	msg   string
}

type failures struct{ best *failure }

func (f *failures) add(stage int, format string, args ...any) {
	if f.best == nil || stage > f.best.stage {
		f.best = &failure{stage: stage, msg: fmt.Sprintf(format, args...)}
	}
}

func (f *failures) message() string {
	if f.best == nil {
		return "no stack satisfies the constraints"
	}
	return f.best.msg
}

// fwChoice is one framework at one version and wheel variant.
type fwChoice struct {
	name     string // torch, tensorflow, jax
	version  Version
	cuda     Version // major.minor the wheels were built for
	cudnn    Version // bundled or required cuDNN (exact pin for torch)
	cudnnMin bool    // cudnn is a minimum, not a pin (jax)
	nccl     Version
	python   Constraint
	status   string
	archs    []string
	ptx      []string
	minDrv   Version // documented driver floor (jax)
	sysLibs  bool    // needs CUDA/cuDNN from the base image (tensorflow < 2.14)
	fw       Framework
	source   string
	notes    []string
}

func (db *DB) frameworkChoices(name string, want *Constraint, fails *failures) ([]fwChoice, error) {
	var out, all []fwChoice
	var known []string
	switch name {
	case "torch":
		for _, t := range db.Torch {
			known = append(known, t.Version.String())
			variants := slices.Clone(t.Variants)
			slices.SortStableFunc(variants, func(a, b TorchVariant) int {
				if (a.Status == "stable") != (b.Status == "stable") {
					if a.Status == "stable" {
						return -1
					}
					return 1
				}
				return b.CUDA.Compare(a.CUDA)
			})
			for _, v := range variants {
				ch := fwChoice{name: name, version: t.Version, cuda: v.CUDA.Trunc(2), cudnn: v.CuDNN, nccl: v.NCCL,
					python: t.Python, status: v.Status, archs: v.Archs, ptx: v.PTX, source: t.Source, notes: v.Notes}
				idx := v.IndexURL
				if idx == "" {
					idx = "https://download.pytorch.org/whl/cu" + cudaTag(v.CUDA)
				}
				pkgs := []string{"torch==" + t.Version.String()}
				if t.Torchvision != "" {
					pkgs = append(pkgs, "torchvision=="+t.Torchvision)
				}
				if t.Torchaudio != "" {
					pkgs = append(pkgs, "torchaudio=="+t.Torchaudio)
				}
				ch.fw = Framework{Version: t.Version.String(), CUDA: ch.cuda.String(), CuDNN: v.CuDNN.String(), NCCL: v.NCCL.String(),
					Status: v.Status, IndexURL: idx, Packages: pkgs, Archs: v.Archs, PTX: v.PTX}
				all = append(all, ch)
			}
		}
	case "tensorflow":
		andCUDA := MustVersion("2.14")
		for _, t := range db.TensorFlow {
			known = append(known, t.Version.String())
			ch := fwChoice{name: name, version: t.Version, cuda: t.CUDA.Trunc(2), cudnn: t.CuDNN, python: t.Python, source: t.Source}
			pkg := "tensorflow[and-cuda]==" + t.Version.String()
			if t.Version.Less(andCUDA) {
				ch.sysLibs = true
				pkg = "tensorflow==" + t.Version.String()
			}
			ch.fw = Framework{Version: t.Version.String(), CUDA: ch.cuda.String(), CuDNN: t.CuDNN.String(), Packages: []string{pkg}}
			all = append(all, ch)
		}
	case "jax":
		for _, j := range db.JAX {
			known = append(known, j.Version.String())
			variants := slices.Clone(j.Variants)
			slices.SortStableFunc(variants, func(a, b JAXVariant) int { return b.CUDA.Compare(a.CUDA) })
			for _, v := range variants {
				if strings.Contains(v.Extra, "local") {
					continue // -local extras use the image's CUDA; gpuimg installs the pip wheels
				}
				ch := fwChoice{name: name, version: j.Version, cuda: v.MinCUDA.Trunc(2), cudnn: v.MinCuDNN, cudnnMin: true,
					python: j.Python, minDrv: v.MinDriver, source: j.Source, notes: v.Notes}
				cudnn := ""
				if !v.MinCuDNN.IsZero() {
					cudnn = ">=" + v.MinCuDNN.String()
				}
				ch.fw = Framework{Version: j.Version.String(), CUDA: ch.cuda.String(), CuDNN: cudnn,
					Packages: []string{fmt.Sprintf("jax[%s]==%s", v.Extra, j.Version)}}
				all = append(all, ch)
			}
		}
	}
	for _, ch := range all {
		if want.Check(ch.version) {
			out = append(out, ch)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s release matches %q; known: %s (add rows with --matrix-file)", name, want.String(), strings.Join(known, ", "))
	}
	return out, nil
}

// product returns every combination of one choice per framework, in
// lexicographic preference order.
func product(lists [][]fwChoice) [][]fwChoice {
	out := [][]fwChoice{nil}
	for _, l := range lists {
		var next [][]fwChoice
		for _, prefix := range out {
			for _, ch := range l {
				next = append(next, append(slices.Clone(prefix), ch))
			}
		}
		out = next
	}
	return out
}

func (db *DB) resolve(c Constraints) (*Stack, *failures, error) {
	fails := &failures{}
	flavor := c.Flavor
	if flavor == "" {
		flavor = "runtime"
	}
	if flavor != "runtime" && flavor != "devel" && flavor != "base" {
		return nil, nil, fmt.Errorf("unknown flavor %q: use runtime, devel or base", c.Flavor)
	}
	var gpu *GPU
	if c.GPU != "" {
		g, err := db.FindGPU(c.GPU)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := db.Arch(g.Arch); !ok {
			return nil, nil, fmt.Errorf("GPU %s has architecture %s, which the matrix does not know; add an archs: row with --matrix-file", g.Name, g.Arch)
		}
		gpu = &g
	}

	// Candidate lists, each in preference order.
	var lists [][]fwChoice
	for _, fw := range []struct {
		name string
		want *Constraint
	}{{"torch", c.Torch}, {"tensorflow", c.TensorFlow}, {"jax", c.JAX}} {
		if fw.want == nil {
			continue
		}
		l, err := db.frameworkChoices(fw.name, fw.want, fails)
		if err != nil {
			return nil, nil, err
		}
		lists = append(lists, l)
	}
	var cudas []CUDARelease
	for _, r := range db.CUDA {
		if c.CUDA.Check(r.Version) {
			cudas = append(cudas, r)
		}
	}
	if len(cudas) == 0 {
		return nil, nil, fmt.Errorf("no CUDA release matches %q; see gpuimg matrix list cuda", c.CUDA)
	}
	var oses []OS
	for _, o := range db.OS {
		if c.OS == "" || o.Name == c.OS || (strings.HasPrefix(o.Name, c.OS) && !strings.ContainsAny(c.OS, "0123456789")) {
			oses = append(oses, o)
		}
	}
	if len(oses) == 0 {
		var names []string
		for _, o := range db.OS {
			names = append(names, o.Name)
		}
		return nil, nil, fmt.Errorf("unknown OS %q: use one of %s, or a family such as ubuntu", c.OS, strings.Join(names, ", "))
	}

	for _, combo := range product(lists) {
		if !db.combineFrameworks(combo, fails) {
			continue
		}
		for _, r := range db.orderCUDA(cudas, combo, !c.CUDA.IsZero()) {
			if s := db.tryCUDA(c, flavor, gpu, combo, r, oses, fails); s != nil {
				return s, nil, nil
			}
		}
	}
	return nil, fails, nil
}

// combineFrameworks checks that the chosen frameworks can share one image.
func (db *DB) combineFrameworks(combo []fwChoice, fails *failures) bool {
	for i := range combo {
		for j := i + 1; j < len(combo); j++ {
			a, b := combo[i], combo[j]
			if a.cuda.Major() != b.cuda.Major() {
				fails.add(stageFrameworks, "%s %s (CUDA %s) and %s %s (CUDA %s) need different CUDA majors and cannot share an image",
					a.name, a.version, a.cuda, b.name, b.version, b.cuda)
				return false
			}
			if !a.cudnn.IsZero() && !b.cudnn.IsZero() {
				ok := a.cudnn.Major() == b.cudnn.Major()
				if ok && a.cudnnMin && !b.cudnnMin {
					ok = b.cudnn.Compare(a.cudnn) >= 0
				} else if ok && b.cudnnMin && !a.cudnnMin {
					ok = a.cudnn.Compare(b.cudnn) >= 0
				} else if ok && !a.cudnnMin && !b.cudnnMin {
					ok = a.cudnn.Trunc(2).Compare(b.cudnn.Trunc(2)) == 0
				}
				if !ok {
					fails.add(stageFwCuDNN, "%s %s needs cuDNN %s and %s %s needs cuDNN %s; pip cannot install both in one environment",
						a.name, a.version, a.fw.CuDNN, b.name, b.version, b.fw.CuDNN)
					return false
				}
			}
		}
	}
	return true
}

// orderCUDA orders candidate image CUDA releases. With --cuda, newest
// first. Otherwise the release closest to the wheels' CUDA comes first (the
// same minor's newest patch, then the next minors up), which keeps the
// driver floor as low as the frameworks allow; with no frameworks, newest first.
func (db *DB) orderCUDA(cudas []CUDARelease, combo []fwChoice, userPinned bool) []CUDARelease {
	if userPinned || len(combo) == 0 {
		return cudas
	}
	target := combo[0].cuda
	for _, ch := range combo[1:] {
		if target.Less(ch.cuda) {
			target = ch.cuda
		}
	}
	var above, below []CUDARelease
	for _, r := range cudas {
		if r.Version.Trunc(2).Compare(target) >= 0 {
			above = append(above, r)
		} else {
			below = append(below, r)
		}
	}
	// above is newest first; walk its minors from the lowest up, keeping
	// each minor's patches newest first.
	var out []CUDARelease
	for i := len(above) - 1; i >= 0; {
		mm := above[i].Version.Trunc(2)
		j := i
		for j >= 0 && above[j].Version.HasPrefix(mm) {
			j--
		}
		out = append(out, above[j+1:i+1]...)
		i = j
	}
	return append(out, below...)
}

func (db *DB) tryCUDA(c Constraints, flavor string, gpu *GPU, combo []fwChoice, r CUDARelease, oses []OS, fails *failures) *Stack {
	cuda := r.Version
	mm := cuda.Trunc(2)
	var notes []string
	for _, ch := range combo {
		if ch.cuda.Major() != cuda.Major() || mm.Less(ch.cuda) {
			var variants []string
			if ch.name == "torch" {
				for _, t := range db.Torch {
					if t.Version.Compare(ch.version) == 0 {
						for _, v := range t.Variants {
							variants = append(variants, v.CUDA.String())
						}
					}
				}
			} else {
				variants = []string{ch.cuda.String()}
			}
			fails.add(stageCUDA, "%s %s wheels are built for CUDA %s; an image with CUDA %s cannot run them (a wheel's CUDA must have the image's major version and be no newer)",
				ch.name, ch.version, strings.Join(variants, ", "), cuda)
			return nil
		}
		if ch.sysLibs && ch.cuda.Compare(mm) != 0 {
			fails.add(stageCUDA, "%s %s loads CUDA %s from the image, not from pip; the image has CUDA %s", ch.name, ch.version, ch.cuda, cuda)
			return nil
		}
	}
	var rows []BaseImage
	for _, b := range db.BaseImages {
		if b.CUDA.Compare(cuda) == 0 {
			rows = append(rows, b)
		}
	}
	if len(rows) == 0 {
		fails.add(stageImage, "NVIDIA publishes no nvidia/cuda image for CUDA %s; see gpuimg matrix list images", cuda)
		return nil
	}
	strict, ok := db.DriverFloor(cuda)
	if !ok {
		fails.add(stageImage, "NVIDIA publishes no driver floor for CUDA %s; add min_driver with --matrix-file", cuda)
		return nil
	}

	// System cuDNN: needed by frameworks that load it from the image, or
	// when the user asks for a cuDNN and no framework brings one.
	needSysCuDNN := false
	fwBringsCuDNN := false
	for _, ch := range combo {
		if ch.sysLibs {
			needSysCuDNN = true
		} else if !ch.cudnn.IsZero() {
			fwBringsCuDNN = true
		}
	}
	if !c.CuDNN.IsZero() && !fwBringsCuDNN {
		needSysCuDNN = true
	}

	for _, o := range oses {
		var img *BaseImage
		var tag string
		for i := range rows {
			if !slices.Contains(rows[i].OS, o.Name) {
				continue
			}
			for _, f := range rows[i].Flavors {
				sys := strings.HasPrefix(f, "cudnn")
				if sys == needSysCuDNN && (f == flavor || strings.HasSuffix(f, "-"+flavor)) {
					img, tag = &rows[i], f
					break
				}
			}
			if img != nil {
				break
			}
		}
		if img == nil {
			anyOS := false
			for _, b := range rows {
				anyOS = anyOS || slices.Contains(b.OS, o.Name)
			}
			if !anyOS {
				fails.add(stageOS, "NVIDIA publishes no CUDA %s image for %s", cuda, o.Name)
			} else {
				want := flavor
				if needSysCuDNN {
					want = "cudnn " + flavor
				}
				fails.add(stageCuDNN, "NVIDIA publishes no %s image for CUDA %s on %s", want, cuda, o.Name)
			}
			continue
		}
		if s := db.tryOS(c, flavor, gpu, combo, r, strict, o, img, tag, needSysCuDNN, notes, fails); s != nil {
			return s
		}
	}
	return nil
}

func (db *DB) tryOS(c Constraints, flavor string, gpu *GPU, combo []fwChoice, r CUDARelease, strict Version, o OS, img *BaseImage, tag string, sysCuDNN bool, notes []string, fails *failures) *Stack {
	cuda := r.Version
	// Python: the OS default first, then the newest the OS packages.
	pythons := slices.Clone(o.Pythons)
	if len(pythons) > 1 {
		rest := pythons[1:]
		slices.SortFunc(rest, func(a, b Version) int { return b.Compare(a) })
	}
	var py Version
	for _, p := range pythons {
		ok := c.Python.Check(p)
		for _, ch := range combo {
			ok = ok && ch.python.Check(p)
		}
		if ok {
			py = p
			break
		}
	}
	if py.IsZero() {
		var needs []string
		if !c.Python.IsZero() {
			needs = append(needs, "--python "+c.Python.String())
		}
		for _, ch := range combo {
			needs = append(needs, fmt.Sprintf("%s %s needs Python %s", ch.name, ch.version, ch.python))
		}
		fails.add(stagePython, "no Python fits: %s packages Python %s; %s", o.Name, joinVersions(o.Pythons), strings.Join(needs, "; "))
		return nil
	}

	// cuDNN the stack loads.
	var cudnn, nccl Version
	for _, ch := range combo {
		if !ch.cudnn.IsZero() && !ch.cudnnMin && !ch.sysLibs {
			cudnn = ch.cudnn
		}
		if !ch.nccl.IsZero() {
			nccl = ch.nccl
		}
	}
	if sysCuDNN {
		if img.CuDNN.IsZero() {
			fails.add(stageCuDNN, "the cuDNN version inside %s is not recorded in the matrix", BaseImageTag(cuda, tag, o.Name))
			return nil
		}
		if cudnn.IsZero() {
			cudnn = img.CuDNN
		}
		for _, ch := range combo {
			if ch.sysLibs && ch.cudnn.Major() != img.CuDNN.Major() {
				fails.add(stageCuDNN, "%s %s needs cuDNN %s; %s carries cuDNN %s", ch.name, ch.version, ch.cudnn, BaseImageTag(cuda, tag, o.Name), img.CuDNN)
				return nil
			}
		}
	}
	if !c.CuDNN.IsZero() {
		got := cudnn
		if got.IsZero() {
			for _, ch := range combo {
				if ch.cudnnMin {
					fails.add(stageCuDNN, "%s %s installs the newest cuDNN %s wheel at build time, so --cudnn cannot pin it; drop --cudnn or pin nvidia-cudnn-cu%d with --pip", ch.name, ch.version, ch.fw.CuDNN, ch.cuda.Major())
					return nil
				}
			}
		}
		if got.IsZero() || !c.CuDNN.Check(got) {
			what := "the image"
			for _, ch := range combo {
				if !ch.cudnn.IsZero() && !ch.cudnnMin && !ch.sysLibs {
					what = fmt.Sprintf("%s %s (cu%s) bundles", ch.name, ch.version, cudaTag(ch.cuda))
				}
			}
			fails.add(stageCuDNN, "--cudnn %s does not match: %s cuDNN %s", c.CuDNN, what, got)
			return nil
		}
	}

	// Driver floors.
	compat, _ := db.CompatFloor(cuda.Major())
	for _, ch := range combo {
		if f, ok := db.DriverFloor(ch.cuda); ok && strict.Less(f) {
			strict = f
		}
		if !ch.minDrv.IsZero() {
			if strict.Less(ch.minDrv) {
				strict = ch.minDrv
			}
			if compat.Less(ch.minDrv) {
				compat = ch.minDrv
			}
		}
	}
	if compat.IsZero() || strict.Less(compat) {
		compat = strict
	}
	needCUDA := cuda.Trunc(2)
	for _, ch := range combo {
		if needCUDA.Less(ch.cuda) {
			needCUDA = ch.cuda
		}
	}
	requireCUDA := "cuda>=" + needCUDA.String()
	usesCompat := false
	if !c.Driver.IsZero() && c.Driver.Less(strict) {
		if !c.Compat || c.Driver.Less(compat) {
			if c.Compat || c.Driver.Less(compat) {
				fails.add(stageDriver, "driver %s is below the stack's floor: CUDA %s needs %s (%s under minor-version compatibility)", c.Driver, cuda, strict, compat)
			} else {
				fails.add(stageDriver, "driver %s is below the stack's floor %s for CUDA %s; it meets the minor-version-compatibility floor %s, so --compat would allow it", c.Driver, strict, cuda, compat)
			}
			return nil
		}
		usesCompat = true
		requireCUDA = fmt.Sprintf("cuda>=%d.0", cuda.Major())
		notes = append(notes, fmt.Sprintf("driver %s is below the strict floor %s: the stack runs under CUDA minor-version compatibility, so PTX JIT is unavailable (GPUs need native SASS) and APIs newer than the driver fail; NVIDIA_REQUIRE_CUDA is relaxed to %s", c.Driver, strict, requireCUDA))
	}

	// Architectures.
	sass := db.ArchsFor(cuda)
	var ptx []string
	haveFwArchs := false
	for _, ch := range combo {
		if len(ch.archs) == 0 {
			continue
		}
		if !haveFwArchs {
			sass, ptx, haveFwArchs = slices.Clone(ch.archs), slices.Clone(ch.ptx), true
			continue
		}
		sass = intersect(sass, ch.archs)
		ptx = intersect(ptx, ch.ptx)
	}
	if gpu != nil {
		a, _ := db.Arch(gpu.Arch)
		switch a.TargetedBy(cuda) {
		case ArchTooNew:
			fails.add(stageGPU, "%s (%s, %s) needs CUDA %s or newer; CUDA %s cannot target it", gpu.Name, gpu.Arch, a.Name, a.AddedIn, cuda)
			return nil
		case ArchDropped:
			fails.add(stageGPU, "%s (%s, %s) is not supported by CUDA %s: support ended in CUDA %s", gpu.Name, gpu.Arch, a.Name, cuda, a.RemovedIn)
			return nil
		}
		for _, ch := range combo {
			if len(ch.archs) == 0 {
				notes = append(notes, fmt.Sprintf("the matrix does not record which GPU architectures %s %s was compiled for; run gpuimg validate on the image to check %s", ch.name, ch.version, gpu.Arch))
				continue
			}
			native, jit := archCovered(gpu.Arch, ch.archs, ch.ptx)
			switch {
			case native:
			case jit && !usesCompat:
				notes = append(notes, fmt.Sprintf("%s %s cu%s has no native kernels for %s; they are JIT-compiled from PTX (%s) on first use, which is slow to start", ch.name, ch.version, cudaTag(ch.cuda), gpu.Arch, strings.Join(ch.ptx, ", ")))
			default:
				why := ""
				if jit {
					why = " (its PTX cannot be JIT-compiled under minor-version compatibility)"
				}
				fails.add(stageGPU, "%s %s cu%s has no kernels for %s (%s): it was compiled for %s%s", ch.name, ch.version, cudaTag(ch.cuda), gpu.Name, gpu.Arch, strings.Join(ch.archs, ", "), why)
				return nil
			}
		}
	}

	// Build the stack.
	s := &Stack{
		CUDA:            cuda.String(),
		CuDNN:           cudnn.String(),
		NCCL:            nccl.String(),
		Python:          py.String(),
		OS:              o.Name,
		Flavor:          flavor,
		SystemCuDNN:     sysCuDNN,
		BaseImage:       BaseImageTag(cuda, tag, o.Name),
		MinDriver:       strict.String(),
		MinDriverCompat: compat.String(),
		RequireCUDA:     requireCUDA,
		GPUArchs:        sass,
		PTXArchs:        ptx,
		Frameworks:      map[string]Framework{},
		Sources:         map[string]string{},
	}
	if gpu != nil {
		s.GPU = gpu.Name
	}
	src := func(id string) {
		if x, ok := db.Sources[id]; ok {
			s.Sources[id] = x.URL
		}
	}
	src(r.Source)
	src(img.Source)
	src(o.Source)
	if f, ok := db.CUDAFamilies[cuda.Major()]; ok {
		src(f.Source)
	}
	for _, ch := range combo {
		s.Frameworks[ch.name] = ch.fw
		src(ch.source)
		switch {
		case ch.cuda.Compare(cuda.Trunc(2)) < 0:
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s wheels are built for CUDA %s; they run on the CUDA %s image through minor-version compatibility (same major, older minor)", ch.name, ch.version, ch.cuda, cuda))
		}
		if ch.status == "experimental" {
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s cu%s is an experimental variant upstream", ch.name, ch.version, cudaTag(ch.cuda)))
		}
		if ch.name == "torch" && !ch.cudnn.IsZero() {
			bundled := "cuDNN " + ch.cudnn.String()
			if !ch.nccl.IsZero() {
				bundled += " and NCCL " + ch.nccl.String()
			}
			s.Notes = append(s.Notes, fmt.Sprintf("torch %s cu%s bundles %s as pip wheels; the base image needs no cuDNN", ch.version, cudaTag(ch.cuda), bundled))
		}
		if ch.cudnnMin {
			s.Notes = append(s.Notes, fmt.Sprintf("%s installs the newest NVIDIA CUDA %d wheels at build time (cuDNN %s); gpuimg validate records what was installed", ch.fw.Packages[0], ch.cuda.Major(), ch.fw.CuDNN))
		}
		for _, n := range ch.notes {
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s: %s", ch.name, ch.version, n))
		}
	}
	if py.Compare(o.Pythons[0]) == 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("Python %s is %s's default python3", py, o.Name))
	} else {
		s.Notes = append(s.Notes, fmt.Sprintf("Python %s comes from %s's own packages (its default python3 is %s)", py, o.Name, o.Pythons[0]))
	}
	s.Notes = append(s.Notes, notes...)
	s.Notes = append(s.Notes, db.Replaced...)
	sortArchs(s.GPUArchs)
	sortArchs(s.PTXArchs)
	return s
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func joinVersions(vs []Version) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// sortArchs sorts architectures by number (sm_90 before sm_100).
func sortArchs(a []string) {
	slices.SortStableFunc(a, func(x, y string) int { return archNumber(x) - archNumber(y) })
}

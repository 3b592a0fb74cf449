package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// Each stage below either passes a candidate on or records why it failed
// (search.fails) and drops it.

// combineFrameworks checks that pip can install each chosen framework
// and that they can share one image and one Python environment.
func (s *search) combineFrameworks(combo []fwChoice) bool {
	if !s.platformsFit(combo) {
		return false
	}
	for _, ch := range combo {
		if us := unservedFor(ch.unserved, Version{}); len(us) > 0 {
			s.fails.add(stageFrameworks, "%s %s cannot be installed: its CUDA extra pins %s, which no package index serves (%s); choose another release",
				ch.name, ch.version, us[0].Pin, us[0].Why)
			return false
		}
	}
	for i := range combo {
		for j := i + 1; j < len(combo); j++ {
			a, b := combo[i], combo[j]
			conflicts := s.db.ComparePins(a.pins, b.pins).Conflicts
			conflicts = append(conflicts, s.db.PinsAgainstRanges(a.pins, b.ranges)...)
			conflicts = append(conflicts, s.db.PinsAgainstRanges(b.pins, a.ranges)...)
			if len(conflicts) > 0 {
				s.fails.add(stageFwCuDNN, "%s and %s pin different versions of %s; pip installs one version of each package in an environment, so they cannot share one",
					a.label(), b.label(), describeConflicts(conflicts))
				return false
			}
			if a.cuda.Major() != b.cuda.Major() {
				s.fails.add(stageFrameworks, "%s %s (CUDA %s) and %s %s (CUDA %s) need different CUDA majors and cannot share an image",
					a.name, a.version, a.cuda, b.name, b.version, b.cuda)
				return false
			}
			if !a.cudnn.IsZero() && !b.cudnn.IsZero() {
				ok := a.cudnn.Major() == b.cudnn.Major()
				switch {
				case !ok:
				case a.cudnnMin && !b.cudnnMin:
					ok = b.cudnn.Compare(a.cudnn) >= 0
				case b.cudnnMin && !a.cudnnMin:
					ok = a.cudnn.Compare(b.cudnn) >= 0
				case !a.cudnnMin && !b.cudnnMin:
					ok = a.cudnn.Trunc(2).Compare(b.cudnn.Trunc(2)) == 0
				}
				if !ok {
					s.fails.add(stageFwCuDNN, "%s %s needs cuDNN %s and %s %s needs cuDNN %s; pip cannot install both in one environment",
						a.name, a.version, a.fw.CuDNN, b.name, b.version, b.fw.CuDNN)
					return false
				}
			}
		}
	}
	return true
}

// fabricFits checks each framework's NCCL against the fabric's NCCL
// plugin (FabricPlugin.FitNCCL): one older than every recorded release of
// the plugin supports cannot drive the fabric. A framework whose NCCL the
// matrix does not record is not checked here (validate's fabric:nccl
// check reads it from the image). It is the last stage: a refusal for
// the fabric is what the user asked for beyond a stack that works.
func (s *search) fabricFits(combo []fwChoice) bool {
	if s.fabric == nil || s.fabric.Plugin == nil {
		return true
	}
	p := s.fabric.Plugin
	for _, ch := range combo {
		if ch.nccl.IsZero() || p.FitNCCL(ch.nccl) != NCCLTooOld {
			continue
		}
		oldest, _ := p.NCCLRange()
		s.fails.add(stageFabric, "%s %s loads NCCL %s, older than every recorded release of %s (fabric %s) supports (NCCL %s or later); choose a newer %s",
			ch.name, ch.version, ch.nccl, p.Name, s.fabric.Name, oldest, ch.name)
		return false
	}
	return true
}

// stackFabric is what the stack records of the fabric for OS o, and
// notes on it (the first says what the build adds).
func (s *search) stackFabric(o OS, combo []fwChoice) (*StackFabric, []string) {
	f := s.fabric
	if f == nil {
		return nil, nil
	}
	sf, note := s.fabricBuild(o)
	notes := []string{note}
	if f.Plugin != nil {
		for _, ch := range combo {
			if ch.nccl.IsZero() {
				notes = append(notes, fmt.Sprintf("fabric %s: the NCCL %s %s loads is not recorded, so it was not checked against %s; gpuimg validate --fabric %s reads it from the image", f.Name, ch.name, ch.version, f.Plugin.Name, f.Name))
			}
		}
	}
	return sf, notes
}

// fabricBuild is what the build adds for the fabric on OS o.
func (s *search) fabricBuild(o OS) (*StackFabric, string) {
	f := s.fabric
	sf := &StackFabric{Name: f.Name}
	switch {
	case f.Host != nil:
		sf.HostDir = f.Host.Dir
		return sf, fmt.Sprintf("fabric %s: the node installs its NCCL plugin and NCCL in %s (%s); the build adds nothing for it, and the NCCL of the frameworks' wheels must not be the one loaded there", f.Name, f.Host.Dir, f.Host.Installer)
	case f.Build.Installer != nil:
		in := *f.Build.Installer
		sf.Installer, sf.LibraryPath = &in, slices.Clone(f.Build.LibraryPath)
		return sf, fmt.Sprintf("fabric %s: the build runs %s/%s %s from %s, in a layer of its own", f.Name, in.Dir, in.Script, strings.Join(in.Args, " "), in.ArchiveURL())
	}
	pm := PackageManager(o.Name)
	sf.Packages, sf.LibraryPath = slices.Clone(f.Build.Packages(pm)), slices.Clone(f.Build.LibraryPath)
	return sf, fmt.Sprintf("fabric %s: the build installs %s from %s's package repositories, in a layer of its own", f.Name, strings.Join(sf.Packages, ", "), o.Name)
}

// onCUDA is a candidate that passed the CUDA stages: framework choices on
// one CUDA release that NVIDIA publishes images and a driver floor for.
type onCUDA struct {
	combo    []fwChoice
	release  CUDARelease
	rows     []BaseImage // the release's nvidia/cuda images
	strict   Version     // the release's strict driver floor
	sysCuDNN bool        // the image must carry cuDNN
	// flavor is the image flavor (base, runtime, devel) and flavorWhy
	// says why (pickFlavor).
	flavor, flavorWhy string
}

func (o *onCUDA) cuda() Version { return o.release.Version }

// onImage is an onCUDA candidate on one OS's image.
type onImage struct {
	*onCUDA
	os  OS
	img *BaseImage
	tag string // the image's flavor tag (cudnn8-runtime)
}

func (o *onImage) baseImage() string { return BaseImageTag(o.cuda(), o.tag, o.os.Name) }

// tryCUDA tries combo on CUDA release r, on each OS in turn.
func (s *search) tryCUDA(combo []fwChoice, r CUDARelease) *Stack {
	cand, ok := s.checkCUDA(combo, r)
	if !ok {
		return nil
	}
	for _, o := range s.oses {
		img, tag, ok := s.pickImage(cand, o)
		if !ok {
			continue
		}
		if st := s.tryImage(&onImage{onCUDA: cand, os: o, img: img, tag: tag}); st != nil && s.packagesFit(o) {
			return st
		}
	}
	return nil
}

// checkCUDA checks that every framework's wheels run on release r and that
// NVIDIA publishes images and a driver floor for it.
func (s *search) checkCUDA(combo []fwChoice, r CUDARelease) (*onCUDA, bool) {
	cuda := r.Version
	mm := cuda.Trunc(2)
	for _, ch := range combo {
		if !FitWheel(ch.cuda, mm).Runs() {
			var variants []string
			if ch.name == FrameworkTorch {
				for _, t := range s.db.Torch {
					if t.Version.Compare(ch.version) == 0 {
						for _, v := range t.Variants {
							variants = append(variants, v.CUDA.String())
						}
					}
				}
			} else {
				variants = []string{ch.cuda.String()}
			}
			s.fails.add(stageCUDA, "%s %s wheels are built for CUDA %s; an image with CUDA %s cannot run them (a wheel's CUDA must have the image's major version and be no newer)",
				ch.name, ch.version, strings.Join(variants, ", "), mm)
			return nil, false
		}
		if ch.sysLibs && ch.cuda.Compare(mm) != 0 {
			s.fails.add(stageCUDA, "%s %s loads CUDA %s from the image, not from pip; the image has CUDA %s", ch.name, ch.version, ch.cuda, cuda)
			return nil, false
		}
	}
	cand := &onCUDA{combo: combo, release: r}
	for _, b := range s.db.BaseImages {
		if b.CUDA.Compare(cuda) == 0 {
			cand.rows = append(cand.rows, b)
		}
	}
	if len(cand.rows) == 0 {
		s.fails.add(stageImage, "NVIDIA publishes no nvidia/cuda image for CUDA %s; see gpuimg matrix list images", cuda)
		return nil, false
	}
	var ok bool
	if cand.strict, ok = s.db.DriverFloor(cuda); !ok {
		s.fails.addUnknown(stageImage, "NVIDIA publishes no driver floor for CUDA %s; add min_driver with --matrix-file", cuda)
		return nil, false
	}

	// System cuDNN: needed by frameworks that load it from the image, or
	// when the user asks for a cuDNN and no framework brings one.
	fwBringsCuDNN := false
	for _, ch := range combo {
		if ch.sysLibs {
			cand.sysCuDNN = true
		} else if !ch.cudnn.IsZero() {
			fwBringsCuDNN = true
		}
	}
	if !s.c.CuDNN.IsZero() && !fwBringsCuDNN {
		cand.sysCuDNN = true
	}
	cand.flavor, cand.flavorWhy = s.pickFlavor(cand)
	return cand, true
}

// pickImage finds the candidate's image on OS o in the wanted flavor, with
// or without system cuDNN.
func (s *search) pickImage(cand *onCUDA, o OS) (*BaseImage, string, bool) {
	for i := range cand.rows {
		if !slices.Contains(cand.rows[i].OS, o.Name) || s.supportedOnly && cand.rows[i].EOL {
			continue
		}
		for _, f := range cand.rows[i].Flavors {
			sys := strings.HasPrefix(f, "cudnn")
			if sys == cand.sysCuDNN && (f == cand.flavor || strings.HasSuffix(f, "-"+cand.flavor)) {
				return &cand.rows[i], f, true
			}
		}
	}
	anyOS := false
	for _, b := range cand.rows {
		anyOS = anyOS || slices.Contains(b.OS, o.Name)
	}
	if !anyOS {
		s.fails.add(stageOS, "NVIDIA publishes no CUDA %s image for %s", cand.cuda(), o.Name)
	} else {
		want := cand.flavor
		if cand.sysCuDNN {
			want = "cudnn " + cand.flavor
		}
		s.fails.add(stageCuDNN, "NVIDIA publishes no %s image for CUDA %s on %s", want, cand.cuda(), o.Name)
	}
	return nil, "", false
}

// picked is what the stages on one image chose.
type picked struct {
	python Version
	// standalone is the standalone build of python when the OS packages
	// no Python that fits; nil for the OS's own.
	standalone  *StandalonePython
	cudnn, nccl Version
	floors      floors
	sass, ptx   []string // the stack's SASS and PTX architectures
	notes       []string // notes of the driver and GPU stages
}

// tryImage runs the stages that depend on the image: Python, cuDNN, driver
// and GPU; it returns the stack when all pass.
func (s *search) tryImage(cand *onImage) *Stack {
	var p picked
	var ok bool
	if p.python, p.standalone, ok = s.pickPython(cand); !ok {
		return nil
	}
	if p.cudnn, p.nccl, ok = s.checkCuDNN(cand); !ok {
		return nil
	}
	if p.floors, ok = s.checkDriver(cand); !ok {
		return nil
	}
	if p.floors.usesCompat {
		rep, _, _ := s.db.ReportedCUDA(s.c.Driver)
		relax := fmt.Sprintf("NVIDIA_REQUIRE_CUDA stays %s: the driver reports CUDA %s, so the NVIDIA container runtime starts the image", p.floors.requireCUDA, rep)
		if p.floors.relaxed {
			relax = "NVIDIA_REQUIRE_CUDA is relaxed to " + p.floors.requireCUDA + ", as the CUDA that driver reports is older than the stack's"
		}
		p.notes = append(p.notes, fmt.Sprintf("driver %s is below the strict floor %s: the stack runs under CUDA minor-version compatibility, so PTX JIT is unavailable (GPUs need native SASS) and APIs newer than the driver fail; %s", s.c.Driver, p.floors.strict, relax))
	}
	if p.sass, p.ptx, ok = s.checkGPU(cand, p.floors.usesCompat, &p.notes); !ok {
		return nil
	}
	if !s.fabricFits(cand.combo) {
		return nil
	}
	return s.buildStack(cand, &p)
}

// pickPython picks the OS's default Python, else the newest the OS
// packages, that the constraint and every framework accept. In the
// search's standalone pass, where the OS packages none of them, it picks
// the newest standalone Python that fits and has an archive for every
// platform of the build.
func (s *search) pickPython(cand *onImage) (Version, *StandalonePython, bool) {
	o := cand.os
	pythons := slices.Clone(o.Pythons)
	if len(pythons) > 1 {
		rest := pythons[1:]
		slices.SortFunc(rest, func(a, b Version) int { return b.Compare(a) })
	}
	for _, p := range pythons {
		if s.pythonFits(cand, p) {
			return p, nil, true
		}
	}
	var needs []string
	if !s.c.Python.IsZero() {
		needs = append(needs, "--python "+s.c.Python.String())
	}
	for _, ch := range cand.combo {
		var need strings.Builder
		fmt.Fprintf(&need, "%s %s needs Python %s", ch.name, ch.version, ch.python)
		for _, u := range ch.unserved {
			fmt.Fprintf(&need, ", and its CUDA extra cannot be installed on Python %s: it pins %s (%s)", u.Python, u.Pin, u.Why)
		}
		needs = append(needs, need.String())
	}
	if !s.standalone {
		s.fails.add(stagePython, "no Python fits: %s packages Python %s; %s", o.Name, JoinVersions(o.Pythons), strings.Join(needs, "; "))
		return Version{}, nil, false
	}
	var have []Version
	for i := range s.db.StandalonePythons { // newest first
		sp := &s.db.StandalonePythons[i]
		py := sp.Version.Trunc(2)
		have = append(have, py)
		if !s.pythonFits(cand, py) {
			continue
		}
		for _, pl := range s.c.Platforms {
			if _, ok := (PythonSource{Archives: sp.Archives}).Archive(pl); !ok {
				s.fails.add(stagePython, "no Python fits on %s: %s packages Python %s, and the standalone CPython %s (python-build-standalone %s) has no archive for %s; add one with --matrix-file (standalone_pythons:)",
					pl, o.Name, JoinVersions(o.Pythons), sp.Version, sp.Release, pl)
				return Version{}, nil, false
			}
		}
		return py, sp, true
	}
	s.fails.add(stagePython, "no Python fits: %s packages Python %s and the matrix has standalone CPython %s; %s", o.Name, JoinVersions(o.Pythons), JoinVersions(have), strings.Join(needs, "; "))
	return Version{}, nil, false
}

// pythonFits says the constraint and every framework accept Python p.
func (s *search) pythonFits(cand *onImage, p Version) bool {
	ok := s.c.Python.Check(p)
	for _, ch := range cand.combo {
		ok = ok && ch.python.Check(p) && len(unservedFor(ch.unserved, p)) == 0
	}
	return ok
}

// checkCuDNN finds the cuDNN and NCCL the stack loads and checks them
// against the image and the cuDNN constraint.
func (s *search) checkCuDNN(cand *onImage) (cudnn, nccl Version, ok bool) {
	combo := cand.combo
	for _, ch := range combo {
		if !ch.cudnn.IsZero() && !ch.cudnnMin && !ch.sysLibs {
			cudnn = ch.cudnn
		}
		if !ch.nccl.IsZero() {
			nccl = ch.nccl
		}
	}
	if cand.sysCuDNN {
		if cand.img.CuDNN.IsZero() {
			s.fails.addUnknown(stageCuDNN, "the cuDNN version inside %s is not recorded in the matrix; add cudnn to its base_images row with --matrix-file", cand.baseImage())
			return cudnn, nccl, false
		}
		if cudnn.IsZero() {
			cudnn = cand.img.CuDNN
		}
		for _, ch := range combo {
			if ch.sysLibs && !SystemCuDNNFits(ch.cudnn, cand.img.CuDNN) {
				s.fails.add(stageCuDNN, "%s %s was built with cuDNN %s and needs a cuDNN of the same major version and at least that minor; %s carries cuDNN %s",
					ch.name, ch.version, ch.cudnn, cand.baseImage(), cand.img.CuDNN)
				return cudnn, nccl, false
			}
		}
	}
	if s.c.CuDNN.IsZero() {
		return cudnn, nccl, true
	}
	if cudnn.IsZero() {
		for _, ch := range combo {
			if ch.cudnnMin {
				s.fails.add(stageCuDNN, "%s %s installs the newest cuDNN %s wheel at build time, so --cudnn cannot pin it; drop --cudnn or pin nvidia-cudnn-cu%d with --pip", ch.name, ch.version, ch.fw.CuDNN, ch.cuda.Major())
				return cudnn, nccl, false
			}
		}
	}
	if cudnn.IsZero() || !s.c.CuDNN.Check(cudnn) {
		what := "the image"
		for _, ch := range combo {
			if !ch.cudnn.IsZero() && !ch.cudnnMin && !ch.sysLibs {
				what = fmt.Sprintf("%s %s (cu%s) bundles", ch.name, ch.version, CUDATag(ch.cuda))
			}
		}
		s.fails.add(stageCuDNN, "--cudnn %s does not match: %s cuDNN %s", s.c.CuDNN, what, cudnn)
		return cudnn, nccl, false
	}
	return cudnn, nccl, true
}

// floors are the stack's driver floors.
type floors struct {
	strict, compat Version
	// by says what sets the strict floor: the image's CUDA release, or a
	// wheel whose CUDA's newest patch (or documented minimum) is higher.
	by          string
	requireCUDA string // NVIDIA_REQUIRE_CUDA
	usesCompat  bool   // the driver constraint is met only under minor-version compatibility
	relaxed     bool   // requireCUDA was relaxed to MAJOR.0 for the driver
}

// checkDriver computes the driver floors over the image and every
// framework and checks the driver constraint against them. The strict
// floor is the image CUDA release's own, or a higher one a wheel needs:
// its CUDA major.minor's newest patch (never understated), or its
// framework's documented minimum; by names which.
func (s *search) checkDriver(cand *onImage) (floors, bool) {
	cuda := cand.cuda()
	parts := []FloorPart{{What: fmt.Sprintf("the image's CUDA %s", cuda), CUDA: cuda}}
	for _, ch := range cand.combo {
		wheel := fmt.Sprintf("%s %s", ch.name, ch.version)
		if ch.name == FrameworkTorch {
			wheel += " cu" + CUDATag(ch.cuda)
		}
		parts = append(parts, FloorPart{What: wheel + " wheels", CUDA: ch.cuda.Trunc(2), MinDriver: ch.minDrv})
	}
	df := s.db.FloorsOf("the stack", parts)
	f := floors{strict: df.Strict, compat: df.Compat, by: strings.TrimPrefix(df.Detail, "set by ")}
	needCUDA := cuda.Trunc(2)
	for _, ch := range cand.combo {
		if needCUDA.Less(ch.cuda) {
			needCUDA = ch.cuda
		}
	}
	f.requireCUDA = RequireCUDA(needCUDA)
	d := s.c.Driver
	if d.IsZero() {
		return f, true
	}
	fit := DriverFloors{Strict: f.strict, Compat: f.compat}.Fit(d)
	if fit == DriverMeetsFloor {
		return f, true
	}
	if !s.c.Compat || fit == DriverTooOld {
		if fit == DriverTooOld {
			s.fails.add(stageDriver, "driver %s is below the stack's floor %s, set by %s (%s under minor-version compatibility)", d, f.strict, f.by, f.compat)
		} else {
			s.fails.add(stageDriver, "driver %s is below the stack's floor %s, set by %s; it meets the minor-version-compatibility floor %s, so --compat would allow it", d, f.strict, f.by, f.compat)
		}
		return f, false
	}
	f.usesCompat = true
	// Relax NVIDIA_REQUIRE_CUDA only when the runtime would refuse the
	// driver: it compares the CUDA the driver reports (ReportedCUDA).
	if rep, _, ok := s.db.ReportedCUDA(d); !ok || rep.Less(needCUDA) {
		f.requireCUDA = RequireCUDA(MustVersion(fmt.Sprintf("%d.0", cuda.Major())))
		f.relaxed = true
	}
	return f, true
}

// checkGPU computes the stack's architectures and checks that each GPU of
// the GPU constraint runs them, adding notes on JIT and unrecorded archs.
func (s *search) checkGPU(cand *onImage, usesCompat bool, notes *[]string) (sass, ptx []string, ok bool) {
	cuda := cand.cuda()
	sass = s.db.ArchsFor(cuda)
	haveFwArchs := false
	for _, ch := range cand.combo {
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
	for i := range s.gpus {
		if !s.coversGPU(cand, &s.gpus[i], usesCompat, notes) {
			return nil, nil, false
		}
	}
	return sass, ptx, true
}

// coversGPU checks that the driver constraint knows gpu and that the
// toolkit and every framework run on it, adding notes on JIT and
// unrecorded archs.
func (s *search) coversGPU(cand *onImage, gpu *GPU, usesCompat bool, notes *[]string) bool {
	cuda := cand.cuda()
	if !s.c.Driver.IsZero() {
		// The driver must know the GPU (JudgeGPUDriver, as matrix check
		// and validate judge it).
		if f, ok := s.db.JudgeGPUDriver("gpu/driver", *gpu, s.c.Driver); ok && f.Status == Fail {
			s.fails.add(stageGPU, "%s", f.Message)
			return false
		} else if ok && (f.Status == Warn || f.Status == UnknownFact) {
			addNote(notes, f.Message)
		}
	}
	if err := s.db.CUDATargets(cuda, *gpu); err != nil {
		s.fails.add(stageGPU, "%v", err)
		return false
	}
	for _, ch := range cand.combo {
		if len(ch.archs) == 0 {
			addNote(notes, fmt.Sprintf("the matrix does not record which GPU architectures %s %s was compiled for; run gpuimg validate on the image to check %s", ch.name, ch.version, gpu.Arch))
			continue
		}
		cov := KernelCoverage(gpu.Arch, ch.archs, ch.ptx)
		switch {
		case cov == Native:
		case cov.Runs(usesCompat):
			addNote(notes, fmt.Sprintf("%s %s cu%s has no native kernels for %s; they are JIT-compiled from PTX (%s) on first use, which is slow to start", ch.name, ch.version, CUDATag(ch.cuda), gpu.Arch, strings.Join(ch.ptx, ", ")))
		default:
			why := ""
			if cov == ViaPTX {
				why = " (its PTX cannot be JIT-compiled under minor-version compatibility)"
			}
			s.fails.add(stageGPU, "%s %s cu%s has no kernels for %s (%s): it was compiled for %s%s", ch.name, ch.version, CUDATag(ch.cuda), gpu.Name, gpu.Arch, strings.Join(ch.archs, ", "), why)
			return false
		}
	}
	return true
}

// addNote appends note unless it is there already (GPUs of one
// architecture give the same notes).
func addNote(notes *[]string, note string) {
	if !slices.Contains(*notes, note) {
		*notes = append(*notes, note)
	}
}

// buildStack assembles the stack of a candidate that passed every stage.
func (s *search) buildStack(cand *onImage, p *picked) *Stack {
	cuda, o := cand.cuda(), cand.os
	st := &Stack{
		CUDA:            cuda.String(),
		CuDNN:           p.cudnn.String(),
		NCCL:            p.nccl.String(),
		Python:          p.python.String(),
		OS:              o.Name,
		Flavor:          cand.flavor,
		FlavorReason:    cand.flavorWhy,
		SystemCuDNN:     cand.sysCuDNN,
		BaseImage:       cand.baseImage(),
		MinDriver:       p.floors.strict.String(),
		MinDriverCompat: p.floors.compat.String(),
		MinDriverBy:     p.floors.by,
		RequireCUDA:     p.floors.requireCUDA,
		GPUArchs:        p.sass,
		PTXArchs:        p.ptx,
		Frameworks:      map[string]Framework{},
		Sources:         map[string]string{},
	}
	names := make([]string, len(s.gpus))
	for i, g := range s.gpus {
		names[i] = g.Name
	}
	st.GPU = strings.Join(names, ",")
	src := func(id string) {
		if x, ok := s.db.Sources[id]; ok {
			st.Sources[id] = x.URL
		}
	}
	src(cand.release.Source)
	src(cand.img.Source)
	src(o.Source)
	if f, ok := s.db.CUDAFamilies[cuda.Major()]; ok {
		src(f.Source)
	}
	for _, ch := range cand.combo {
		st.Frameworks[ch.name] = ch.fw
		src(ch.source)
		st.Notes = append(st.Notes, frameworkNotes(ch, cuda, !s.c.CUDA.IsZero())...)
	}
	if sf, notes := s.stackFabric(o, cand.combo); sf != nil {
		st.Fabric = sf
		st.Notes = append(st.Notes, notes...)
		src(s.fabric.Source)
		if s.fabric.Build != nil {
			src(s.fabric.Build.Source)
		}
		if s.fabric.Plugin != nil {
			for _, r := range s.fabric.Plugin.Releases {
				src(r.Source)
			}
		}
	}
	st.PythonSource = s.pythonSource(o, p)
	st.Notes = append(st.Notes, st.PythonSource.Why)
	if p.standalone != nil {
		src(p.standalone.Source)
	}
	notes, unknown := s.db.pinNotes(cand.combo)
	st.Notes, st.PinsNotCompared = append(st.Notes, notes...), unknown
	if cand.img.EOL {
		st.BaseImageEOL = true
		instead := "pick a supported CUDA release (gpuimg matrix list images)"
		if r, ok := s.db.SupportedPointRelease(cuda, o.Name); ok {
			instead = fmt.Sprintf("use %s, the point release of CUDA %s NVIDIA supports for %s", r, cuda.Trunc(2), o.Name)
		}
		st.Notes = append(st.Notes, fmt.Sprintf("warning: NVIDIA has marked %s end of life: it gets no updates and NVIDIA deletes end-of-life tags six months later (its container support policy); build soon and keep the image, or %s", st.BaseImage, instead))
	}
	st.Notes = append(st.Notes, p.notes...)
	st.Notes = append(st.Notes, s.db.Replaced...)
	sortArchs(st.GPUArchs)
	sortArchs(st.PTXArchs)
	return st
}

// pythonSource says where the stack's Python comes from and why.
func (s *search) pythonSource(o OS, p *picked) *PythonSource {
	switch {
	case p.standalone != nil:
		sp := p.standalone
		return &PythonSource{Kind: PythonStandalone, Version: sp.Version.String(), Release: sp.Release, Archives: slices.Clone(sp.Archives),
			Why: fmt.Sprintf("Python %s is CPython %s from python-build-standalone (release %s), pinned by sha256, in %s: no OS with a fitting nvidia/cuda image packages Python %s (%s packages %s)",
				p.python, sp.Version, sp.Release, StandalonePrefix, p.python, o.Name, JoinVersions(o.Pythons))}
	case p.python.Compare(o.Pythons[0]) == 0:
		return &PythonSource{Kind: PythonFromOS, Why: fmt.Sprintf("Python %s is %s's default python3", p.python, o.Name)}
	}
	return &PythonSource{Kind: PythonFromOS, Why: fmt.Sprintf("Python %s comes from %s's own packages (its default python3 is %s)", p.python, o.Name, o.Pythons[0])}
}

// frameworkNotes are the notes a framework choice adds to a stack on an
// image with CUDA cuda; requested says the user asked for a CUDA.
func frameworkNotes(ch fwChoice, cuda Version, requested bool) []string {
	var notes []string
	if n := variantNote(ch, cuda, requested); n != "" {
		notes = append(notes, n)
	}
	if ch.cuda.Compare(cuda.Trunc(2)) < 0 {
		notes = append(notes, fmt.Sprintf("%s %s wheels are built for CUDA %s; they run on the CUDA %s image through minor-version compatibility (same major, older minor)", ch.name, ch.version, ch.cuda, cuda))
	}
	if ch.status == "experimental" {
		notes = append(notes, fmt.Sprintf("%s %s cu%s is an experimental variant upstream", ch.name, ch.version, CUDATag(ch.cuda)))
	}
	if ch.name == FrameworkTorch && !ch.cudnn.IsZero() {
		bundled := "cuDNN " + ch.cudnn.String()
		if !ch.nccl.IsZero() {
			bundled += " and NCCL " + ch.nccl.String()
		}
		notes = append(notes, fmt.Sprintf("torch %s cu%s bundles %s as pip wheels; the base image needs no cuDNN", ch.version, CUDATag(ch.cuda), bundled))
	}
	if ch.pipAs != "" {
		notes = append(notes, fmt.Sprintf("%s %s is installed as %s, the post release that fixed its pip packaging (the matrix row's notes say what)", ch.name, ch.version, ch.pipAs))
	}
	if ch.cudnnMin {
		notes = append(notes, fmt.Sprintf("%s installs the newest NVIDIA CUDA %d wheels at build time (cuDNN %s); gpuimg validate records what was installed", ch.fw.Packages[0], ch.cuda.Major(), ch.fw.CuDNN))
	}
	for _, n := range ch.notes {
		notes = append(notes, fmt.Sprintf("%s %s: %s", ch.name, ch.version, n))
	}
	return notes
}

// variantNote says why the wheel variant of ch was chosen among its
// release's variants on an image with CUDA cuda (see compareForCUDA); ""
// when the release has one variant.
func variantNote(ch fwChoice, cuda Version, requested bool) string {
	if len(ch.siblings) < 2 {
		return ""
	}
	what := fmt.Sprintf("%s %s cu%s", ch.name, ch.version, CUDATag(ch.cuda))
	if !requested {
		newestStable := ch.status == "stable"
		for _, v := range ch.siblings {
			newestStable = newestStable && (v.status != "stable" || !ch.cuda.Less(v.cuda))
		}
		if newestStable {
			return fmt.Sprintf("%s is the newest stable wheel variant, preferred as no CUDA version was requested", what)
		}
		return fmt.Sprintf("%s: no CUDA version was requested and no variant preferred before it (stable first, newest CUDA first) fits the other constraints", what)
	}
	mm := cuda.Trunc(2)
	best := -1
	var closest []variantFacts
	for _, v := range ch.siblings {
		d := variantDistance(v.cuda, mm)
		if d < 0 || (best >= 0 && d > best) {
			continue
		}
		if d < best || best < 0 {
			best, closest = d, nil
		}
		closest = append(closest, v)
	}
	switch d := variantDistance(ch.cuda, mm); {
	case d != best:
		return fmt.Sprintf("%s is not the variant closest to the image's CUDA %s: the closer cu%s does not fit the other constraints", what, mm, CUDATag(closest[0].cuda))
	case len(closest) > 1:
		why := "the matrix lists it first"
		for _, v := range closest {
			if v.status == "experimental" && ch.status != "experimental" {
				why = "upstream marks it stable"
				break
			}
		}
		if why != "upstream marks it stable" && ch.pypi {
			why = "it is the variant PyPI installs by default"
		}
		return fmt.Sprintf("%s: %d variants are built for CUDA %s, the image's; it was preferred because %s", what, len(closest), ch.cuda, why)
	case d == 0:
		return fmt.Sprintf("%s is built for the image's CUDA %s: with a CUDA version requested, the variant for it wins and upstream status only breaks ties", what, mm)
	default:
		return fmt.Sprintf("%s: no variant is built for the image's CUDA %s; cu%s is the nearest older one of the same major", what, mm, CUDATag(ch.cuda))
	}
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

// JoinVersions writes versions as "2.21.5, 2.22.3".
func JoinVersions(vs []Version) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// sortArchs sorts architectures by number (sm_90 before sm_100).
func sortArchs(a []string) {
	slices.SortStableFunc(a, CompareArchs)
}

// pinNotes say, for a stack of several frameworks, which frameworks' exact
// pins were compared and which were not recorded (pip may then still
// refuse the pair); unknown lists the latter. Components one side leaves
// to an unrecorded cuda-toolkit release are named in an "unconfirmed"
// note (ComparePins' NotCompared).
func (db *DB) pinNotes(combo []fwChoice) (notes, unknown []string) {
	if len(combo) < 2 {
		return nil, nil
	}
	for i := range combo {
		for j := i + 1; j < len(combo); j++ {
			a, b := combo[i], combo[j]
			if nc := db.ComparePins(a.pins, b.pins).NotCompared; len(nc) > 0 {
				notes = append(notes, fmt.Sprintf("unconfirmed: %s and %s were not compared on %s", a.label(), b.label(), strings.Join(nc, "; ")))
			}
		}
	}
	var known, partial, ranged []string
	for _, ch := range combo {
		switch {
		case ch.sysLibs:
		case len(ch.pins) == 0 && len(ch.ranges) > 0:
			ranged = append(ranged, ch.label())
		case len(ch.pins) == 0:
			unknown = append(unknown, ch.label())
		case ch.pinsPartial:
			partial = append(partial, ch.label())
			known = append(known, ch.label())
		default:
			known = append(known, ch.label())
		}
	}
	if len(known) > 1 {
		notes = append(notes, fmt.Sprintf("the exact pins of %s agree (every package they both pin has one version)", strings.Join(known, " and ")))
	}
	if len(ranged) > 0 && len(known) > 0 {
		notes = append(notes, fmt.Sprintf("the exact pins of %s fall inside the nvidia-* version ranges of %s", strings.Join(known, " and "), strings.Join(ranged, " and ")))
	}
	if len(partial) > 0 {
		notes = append(notes, fmt.Sprintf("of %s the matrix records only the nvidia-cudnn and nvidia-nccl pins; its other nvidia-* pins were not compared", strings.Join(partial, " and ")))
	}
	if len(unknown) > 0 {
		notes = append(notes, fmt.Sprintf("the matrix does not record the exact nvidia-* pins of %s, so gpuimg could not check that pip installs them in one environment", strings.Join(unknown, " and ")))
	}
	return notes, unknown
}

package builder

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// VenvDir is where the stack's Python environment lives in the image.
const VenvDir = "/opt/venv"

// Secret ids with a meaning to gpuimg. Any other id is mounted at
// /run/secrets/ID in the package steps.
const (
	// SecretPipMirror carries the pip.conf gpuimg writes for
	// --pip-index-url and friends, so index URLs (which may hold
	// credentials) never reach the image's history.
	SecretPipMirror = "gpuimg-pip"
	// SecretNetrc is mounted at /root/.netrc (private index credentials).
	SecretNetrc = "netrc"
	// SecretPipConf is the user's own pip.conf, mounted at
	// /root/.config/pip/pip.conf.
	SecretPipConf = "pip.conf"
)

// DockerfileSyntax is the Dockerfile frontend the generated Dockerfiles
// name in their "# syntax=" line: the oldest release with every feature
// they use (RUN --mount 1.2, COPY --link and named contexts 1.4, the
// SOURCE_DATE_EPOCH build argument 1.5, ADD --checksum 1.6 and ADD
// --unpack 1.17 for a standalone Python, per the frontend's reference), so
// docker buildx or buildctl elsewhere pull a frontend that can build them.
// gpuimg's own solves keep the frontend built into buildkitd (Build sets
// the frontend attribute "cmdline", which the built-in frontend reads as
// "already forwarded" and so does not pull this image).
const DockerfileSyntax = "docker/dockerfile:1.17"

// Context file names inside the generated build context.
const (
	ctxVerify       = "gpuimg/verify.py"
	ctxRequirements = "gpuimg/requirements.txt"
	ctxPlan         = "gpuimg/plan.py"
	ctxLayered      = "gpuimg/Dockerfile.layered"
	ctxProof        = "gpuimg/proof.py"
	ctxHostLibs     = "gpuimg/hostlibs.json"
	// UserContext is the named build context holding --copy sources.
	UserContext = "user"
)

//go:embed verify.py
var verifyPyTemplate []byte

// verifyPy is verify.py with matrix.TorchCUDAPattern rendered in: one
// rule for torch/version.py's CUDA line, here and in validate.
var verifyPy = bytes.Replace(verifyPyTemplate, []byte("@TORCH_CUDA_PATTERN@"), []byte(matrix.TorchCUDAPattern), 1)

//go:embed plan.py
var planPy []byte

//go:embed proof.py
var proofPy []byte

// Definition is everything the generated Dockerfile depends on.
type Definition struct {
	Stack matrix.Stack
	// Base is the FROM reference, pinned by digest.
	Base   string
	Extras Extras
	// PipMirror says the gpuimg-pip secret (pip.conf with the mirror
	// settings) is available; frameworks are then installed through it
	// instead of their own index URLs.
	PipMirror bool
	// PipFindLinks says that pip.conf (PipMirror) sets find-links: the
	// frameworks' own find-links pages are then left out, as their index
	// URLs are.
	PipFindLinks bool
	// Secrets are the ids of user secrets to mount in package steps.
	Secrets []string
	// HasRequirements says the build context carries requirements.txt.
	HasRequirements bool
	// NoChecks leaves out the build's proof (the check stages, proof.py):
	// the image is the same, unproven.
	NoChecks bool
	// PythonMirror replaces matrix.StandalonePythonURL in the URL of a
	// standalone Python's archive (Stack.PythonSource); the archive's
	// name and sha256 stay. Empty: python-build-standalone's releases.
	PythonMirror string
	// NoTorchCompile leaves out what torch.compile needs in the image (a
	// C compiler and the Python headers, compilerPackages) for a stack
	// whose torch brings triton, and verify.py's check of them.
	NoTorchCompile bool
}

// torchCompile says the build installs torch.compile's C compiler and
// Python headers: the stack's frameworks bring triton
// (matrix.Stack.BringsTriton) and NoTorchCompile is not set.
func (d Definition) torchCompile() bool { return d.Stack.BringsTriton() && !d.NoTorchCompile }

type osKind struct {
	family string // apt or dnf
}

func osOf(name string) (osKind, error) {
	if pm := matrix.PackageManager(name); pm != "" {
		return osKind{family: pm}, nil
	}
	return osKind{}, fmt.Errorf("gpuimg does not know how to install packages on %s", name)
}

// pythonPackages names the OS packages that provide python X.Y with venv.
func pythonPackages(osName, py string) []string {
	if k, _ := osOf(osName); k.family == "apt" {
		return []string{"python" + py, "python" + py + "-venv"}
	}
	// RHEL 8 names its extra Pythons python38/python39 but python3.11 and
	// later with a dot; the default is "python3" on both RHEL 8 and 9.
	el8 := strings.HasSuffix(osName, "8")
	switch {
	case el8 && py == "3.6", !el8 && py == "3.9":
		return []string{"python3"}
	case el8 && (py == "3.8" || py == "3.9"):
		return []string{"python" + strings.ReplaceAll(py, ".", "")}
	}
	return []string{"python" + py}
}

// compilerPackages names the OS packages that give triton what it builds
// its C helper with at torch.compile's first use (triton's
// runtime/build.py: $CC, else gcc, else clang on PATH, with -I the
// include directory of Python's sysconfig): gcc, the C library's headers
// (gcc only recommends them) and python X.Y's Python.h: pythonX.Y-dev on
// Debian and Ubuntu (the package their Python docs name for C
// extensions; Python.h itself is in its dependency libpythonX.Y-dev, as
// dpkg -S reads on Debian 12), and on RHEL the -devel package of the
// Python's own package name (python3-devel, python39-devel,
// python3.11-devel).
// A standalone CPython (python-build-standalone) carries its own
// Python.h, so only the compiler and the C library's headers come from
// the OS then: the OS may not package python X.Y at all.
func compilerPackages(osName, py string, standalone bool) []string {
	k, _ := osOf(osName)
	switch {
	case k.family == "apt" && standalone:
		return []string{"gcc", "libc6-dev"}
	case k.family == "apt":
		return []string{"gcc", "libc6-dev", "python" + py + "-dev"}
	case standalone:
		return []string{"gcc"} // gcc requires glibc-devel on RHEL
	}
	return []string{"gcc", pythonPackages(osName, py)[0] + "-devel"}
}

// compilerCheck is a shell test that holds when the image has what
// compilerPackages install: gcc or clang on PATH, and Python.h in the
// include directory of python X.Y's posix_prefix scheme (the one triton
// uses for Debian's posix_local, and the venv's).
const compilerCheck = `{ command -v gcc || command -v clang; } >/dev/null && python%[1]s -c 'import os, sysconfig, sys; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths("posix_prefix")["include"], "Python.h")))' 2>/dev/null`

func (d Definition) secretMounts() string {
	var b strings.Builder
	if d.PipMirror {
		fmt.Fprintf(&b, " --mount=type=secret,id=%s,target=/etc/pip.conf", SecretPipMirror)
	}
	ids := slices.Sorted(slices.Values(d.Secrets))
	for _, id := range ids {
		switch id {
		case SecretNetrc:
			fmt.Fprintf(&b, " --mount=type=secret,id=%s,target=/root/.netrc", id)
		case SecretPipConf:
			fmt.Fprintf(&b, " --mount=type=secret,id=%s,target=/root/.config/pip/pip.conf", id)
		default:
			fmt.Fprintf(&b, " --mount=type=secret,id=%s", id)
		}
	}
	return b.String()
}

func pkgCacheMounts(k osKind, osName string) string {
	if k.family == "apt" {
		return fmt.Sprintf(" --mount=type=cache,id=gpuimg-apt-%[1]s-$TARGETARCH,target=/var/cache/apt,sharing=locked --mount=type=cache,id=gpuimg-aptlists-%[1]s-$TARGETARCH,target=/var/lib/apt/lists,sharing=locked", osName)
	}
	return fmt.Sprintf(" --mount=type=cache,id=gpuimg-dnf-%s-$TARGETARCH,target=/var/cache/dnf,sharing=locked", osName)
}

// installCmd installs pkgs with the OS's package manager and then removes
// what the install writes that differs on every build (pkgRunFiles), in
// the same step, so the layer depends only on the packages. apt runs dpkg
// with --force-unsafe-io (dpkg(1): no sync of each file it unpacks): a
// build step's files reach a layer only after the step ends, so the
// syncs cost time and protect nothing; unpacking torch.compile's
// packages took 45 s of a 68 s step with them, on 2 cores.
func installCmd(k osKind, pkgs []string) string {
	clean := " && rm -rf " + strings.Join(pkgRunFiles(k), " ")
	if k.family == "apt" {
		return "rm -f /etc/apt/apt.conf.d/docker-clean && apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends " + strings.Join(pkgs, " ") + " -o Dpkg::Options::=--force-unsafe-io" + clean
	}
	return "dnf install -y --setopt=install_weak_deps=False " + strings.Join(pkgs, " ") + clean
}

// stepStart begins a step that clamps its files' times (clampStep): it
// records when the step began as the mtime of a marker file written on
// the step's own file system (so at that file system's timestamp
// granularity), in nanoseconds, and removes the marker. A pause on each
// side keeps the files of earlier steps and of the base (unpacked just
// before the step on a fresh daemon) strictly older, and the step's own
// files strictly newer, on the kernel's coarse file clock; a file system
// with whole-second times (the marker's nanoseconds are 0) gets a pause of
// a second. Picking the step's files by ctime since a whole second before
// the step (the first try) could also pick base files unpacked in that
// second, on some daemons and not others.
const stepStart = `sleep 0.02; : > /tmp/.gpuimg-t0; gpuimg_t0=$(date -r /tmp/.gpuimg-t0 +%s.%N); rm -f /tmp/.gpuimg-t0; case $gpuimg_t0 in *.000000000) sleep 1;; *) sleep 0.02;; esac`

// clampStep ends a step that writes files into the image: every file and
// directory the step created or changed (ctime after stepStart's marker)
// whose mtime is later than
// SOURCE_DATE_EPOCH gets the epoch as its mtime and atime, so that the
// layer is the same on every build without BuildKit's rewrite-timestamp
// (which decompresses and rescans every layer gpuimg built on every
// export, cached or not). It is what rewrite-timestamp did to the layer's
// tar headers, done in the step: files older than the epoch keep their
// times (a base's files are never touched, so never copied up).
// Directories that held BuildKit's mount stubs (the bind and cache mount
// targets, /etc/hosts and resolv.conf) changed before the step began, and
// BuildKit restores their times to what they are when it removes the
// stubs, so they are clamped by name. The mounts themselves are pruned
// (their times are not the layer's, and most are read-only): gpuimg's
// bind mounts are all /tmp/gpuimg-*, its secrets are secretMounts'
// targets or under /run/secrets. Whiteouts carry
// time 0 (containerd v2's archive). Without SOURCE_DATE_EPOCH (the
// Dockerfile built elsewhere) it does nothing.
const clampStep = `if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then find / -xdev \( ` + stepPrune + ` \) -prune -o -newermt "@$SOURCE_DATE_EPOCH" \( -newerct "@$gpuimg_t0" -o -path / -o -path /tmp -o -path /etc -o -path /root -o -path /root/.cache -o -path /root/.config -o -path /root/.config/pip -o -path /run -o -path /var -o -path /var/cache -o -path /var/lib -o -path /var/lib/apt \) -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +; fi`

// stepPrune is find's test for what a step's find (clampStep, osStage)
// leaves out: the kernel's file systems, gpuimg's bind mounts and the
// secrets' targets.
const stepPrune = `-path /proc -o -path /sys -o -path /dev -o -path '/tmp/gpuimg-*' -o -path /etc/resolv.conf -o -path /etc/hosts -o -path /etc/hostname -o -path /etc/pip.conf -o -path /root/.netrc -o -path /root/.config/pip/pip.conf -o -path /run/secrets`

// LayerMTime is the modification time (Unix seconds) of every file and
// directory a layer stage puts under layerRoot, and of a standalone
// CPython's layer (standaloneStages), whatever the build's
// SOURCE_DATE_EPOCH.
// A layer reaches the image by COPY --link, and BuildKit keys a COPY by
// its files' contents, not their times, and merges equal steps of builds
// that run at once: a layer whose times followed the epoch (the first
// try) was taken from a build with another epoch, so one daemon gave
// other digests than a fresh one (TestBuildLayerSharing). With one
// time, a COPY's cached result is always the one a fresh daemon makes,
// and variants on bases of different dates share these layers. The pip
// installs ran with SOURCE_DATE_EPOCH set, so their .pyc files are
// checked by hash, not by their sources' times.
const LayerMTime = 0

// fixTimes sets the times of every file and directory under root (a
// tree the step made whole: a layer stage's root) to LayerMTime.
func fixTimes(root string) string {
	return fmt.Sprintf(`find %s -exec touch -h -d @%d {} +`, root, LayerMTime)
}

// clamped is cmd (shell commands joined by &&) as a step that clamps its
// files' times (clampStep).
func clamped(cmd string) string {
	return "{ " + stepStart + "; } && " + cmd + " \\\n && " + clampStep
}

// pkgRunFiles are the files a package install writes that hold the time
// of the run or inode numbers rather than anything about the packages:
// the logs and histories of dpkg, apt and dnf, and ldconfig's aux-cache
// (inode numbers and times of the libraries it scanned). debuerreotype
// strips the same from Debian's images (scripts/debuerreotype-fixup:
// var/log/dpkg.log, var/log/alternatives.log, var/cache/ldconfig/aux-cache).
// apt's and dnf's caches and apt's lists are cache mounts
// (pkgCacheMounts), never in a layer. The rpm database keeps each
// package's install time; rpm needs it, so it stays.
func pkgRunFiles(k osKind) []string {
	if k.family == "apt" {
		return []string{"/var/log/dpkg.log", "/var/log/alternatives.log", "/var/log/apt/*", "/var/cache/ldconfig/aux-cache"}
	}
	return []string{"/var/log/dnf.log", "/var/log/dnf.librepo.log", "/var/log/dnf.rpm.log", "/var/log/hawkey.log", "/var/lib/dnf/history*", "/var/cache/ldconfig/aux-cache"}
}

// Dockerfile renders the build as a Dockerfile for BuildKit's Dockerfile
// frontend. Layers go from least to most often changing: base, Python,
// frameworks, user OS packages, user pip packages, copied files, metadata.
// It is a complete build on its own (docker buildx, buildctl); its
// gpuimg-plan stage lists what the framework steps installed, which
// LayeredDockerfile splits into layers. The result depends only on d.
func Dockerfile(d Definition) (string, error) {
	g, err := newGen(d)
	if err != nil {
		return "", err
	}
	g.python()
	if err := g.frameworks(); err != nil {
		return "", err
	}
	g.w("\n# The image: the frameworks' environment, then what you add.\n")
	g.w("FROM %s AS %s\n", stageFrameworks, StageImage)
	g.args()
	g.extras()
	g.proveImage()
	return g.b.String(), nil
}

// Stage names of the generated Dockerfiles.
const (
	stagePython     = "gpuimg-python"
	stageFrameworks = "gpuimg-frameworks"
	// StagePlan is the stage holding gpuimg-plan.json, what the framework
	// steps installed (PlannedDist), for LayeredDockerfile.
	StagePlan = "gpuimg-plan"
	// PlanFile is the plan's name in StagePlan.
	PlanFile  = "gpuimg-plan.json"
	planState = VenvDir + "/gpuimg-steps.json"
	// StageImage is the image, what you add included; the Dockerfile's
	// last stage is a copy of it (FROM StageImage), so that StageCheck
	// can stand between them.
	StageImage = "gpuimg-image"
	// StageCheckEnv proves the frameworks' environment (proof.py on
	// stageFrameworks); the plan stage is built on it, so the layered
	// build starts only from a proven environment.
	StageCheckEnv = "gpuimg-check-env"
	// StageCheck proves the image (proof.py on StageImage). Nothing
	// depends on it, so it adds nothing to the image: Build solves it
	// beside the image and exports the image only when it succeeds
	// (elsewhere: build it with --target gpuimg-check).
	StageCheck = "gpuimg-check"
)

// proofRun is the step that proves the stage it is in: every ELF file
// of the venv and of CUDA's library directories finds its libraries
// (the driver's excepted: matrix.HostLibsJSON), and each framework
// imports (proof.py).
func (g *gen) proofRun() {
	mods := tfProofArgs(g.d.Stack)
	for _, fw := range g.d.Stack.FrameworkList() {
		mods = append(mods, fw.Name) // each framework's module is its name
	}
	g.w("RUN --mount=type=bind,source=%s,target=/tmp/gpuimg-proof.py --mount=type=bind,source=%s,target=/tmp/gpuimg-hostlibs.json \\\n    %s/bin/python -B /tmp/gpuimg-proof.py /tmp/gpuimg-hostlibs.json %s%s\n",
		ctxProof, ctxHostLibs, VenvDir, VenvDir, strings.Join(append([]string{""}, mods...), " "))
}

// proveImage ends the Dockerfile after StageImage: the check stage, then
// the image again, as the last (default) stage.
func (g *gen) proveImage() {
	if g.d.NoChecks {
		return
	}
	g.w("\n# The proof, on the image as built: libraries resolve, frameworks import.\n")
	g.w("FROM %s AS %s\n", StageImage, StageCheck)
	g.proofRun()
	g.w("\n# The image, unchanged by the proof.\n")
	g.w("FROM %s\n", StageImage)
}

// gen writes a Dockerfile.
type gen struct {
	d         Definition
	k         osKind
	b         strings.Builder
	secrets   string
	pipMounts string
	fabric    *fabric
}

func newGen(d Definition) (*gen, error) {
	if d.Base == "" || !strings.Contains(d.Base, "@sha256:") {
		return nil, fmt.Errorf("base image %q is not pinned by digest", d.Base)
	}
	k, err := osOf(d.Stack.OS)
	if err != nil {
		return nil, err
	}
	if err := d.Extras.Validate(); err != nil {
		return nil, err
	}
	if len(d.Extras.Dnf) > 0 && k.family != "dnf" {
		return nil, fmt.Errorf("%w (%s), and the stack's OS %s installs with apt: set os: to rockylinux9, rockylinux8, ubi9 or ubi8 (gpuimg matrix list), or list the packages' Debian/Ubuntu names in apt: instead", ErrDnfNeedsRPMBase, strings.Join(d.Extras.Dnf, ", "), d.Stack.OS)
	}
	f, err := newFabric(d)
	if err != nil {
		return nil, err
	}
	g := &gen{d: d, k: k, secrets: d.secretMounts(), fabric: f}
	g.pipMounts = " --mount=type=cache,id=gpuimg-pip,target=/root/.cache/pip" + g.secrets
	g.w("# syntax=%s\n", DockerfileSyntax)
	g.w("# Generated by gpuimg for the stack in the label dev.gpuimg.stack.\n")
	return g, nil
}

func (g *gen) w(format string, args ...any) { fmt.Fprintf(&g.b, format, args...) }

// args declares the build arguments a stage's steps read.
func (g *gen) args() {
	// SOURCE_DATE_EPOCH makes Python write hash-based .pyc files, so the
	// layers do not depend on when they were built.
	g.w("ARG SOURCE_DATE_EPOCH\n")
	// One package cache per architecture: a multi-platform build runs its
	// platforms at once, and a shared locked cache would make them wait
	// on each other (and mix architectures' package lists).
	g.w("ARG TARGETARCH\n")
}

// from starts a stage on the pinned base with NVIDIA's environment.
func (g *gen) from(as string) {
	s := g.d.Stack
	if as != "" {
		as = " AS " + as
	}
	g.w("FROM %s%s\n", g.d.Base, as)
	g.args()
	g.w("ENV CUDA_VERSION=%s \\\n    NVIDIA_REQUIRE_CUDA=%s \\\n    NVIDIA_VISIBLE_DEVICES=all \\\n    NVIDIA_DRIVER_CAPABILITIES=compute,utility\n",
		s.CUDA, dockerQuote(s.RequireCUDA))
}

// venvRun brings in the OS packages the stack's Python and
// torch.compile need (osCopy: the files osStage installed; withShared,
// also those any Python shares, osSharedRoot, which a layered image has
// in a layer of their own below) and makes the virtual environment with
// venv (python -m venv when empty), then runs more (shell commands, may
// be empty).
func (g *gen) venvRun(withShared bool, mounts, venv, more string) {
	py := g.d.Stack.Python
	if venv == "" {
		venv = fmt.Sprintf("python%s -m venv %s", py, VenvDir)
	}
	copyOS := ""
	if pkgs, _ := g.osPackages(); len(pkgs) > 0 {
		mounts = fmt.Sprintf(" --mount=type=bind,from=%s,source=%s,target=%s", stageOS, layerRoot, osMount) + mounts
		copyOS = g.osCopy() + "; \\\n    "
		if withShared && g.osSplit() {
			mounts = fmt.Sprintf(" --mount=type=bind,from=%s,source=%s,target=%s", stageOS, osSharedRoot, osSharedMount) + mounts
			copyOS = fmt.Sprintf(`if [ -n "$(ls -A %[1]s)" ]; then cp -a %[1]s/. /; fi; `, osSharedMount) + copyOS
		}
	}
	g.w("RUN%s%s \\\n    set -eu; %s; \\\n    %s%s%s; \\\n    %s\n",
		g.secrets, mounts, stepStart, copyOS, venv, more, clampStep)
	g.w("ENV VIRTUAL_ENV=%s \\\n    PATH=%s/bin:$PATH\n", VenvDir, VenvDir)
}

// stageOS is the stage that installs the OS packages of osPackages once
// (osStage); the python stage and the image copy its files (osCopy).
const stageOS = "gpuimg-os"

// osMount is where a step mounts stageOS's files.
const osMount = "/tmp/gpuimg-os"

// osSharedRoot is where stageOS stages the files of the OS packages it
// installed that are not Python's (osSplit), and osSharedMount where the
// python stage mounts them.
const (
	osSharedRoot  = "/gpuimg/os-shared"
	osSharedMount = "/tmp/gpuimg-os-shared"
)

// osSplit says stageOS splits what it installed by package (plan.py
// ossplit, on dpkg's lists): the files of packages any Python shares
// (torch.compile's compiler and the C library's headers, the libraries a
// Python pulls in) go to osSharedRoot, which a layered image copies as a
// layer of its own below the venv's, so variants on one base that differ
// in Python share it (a node that has one pulls only the other's Python
// packages); Python's own packages and dpkg's database stay in the
// venv's layer. apt only (an rpm system stages everything as before).
func (g *gen) osSplit() bool {
	pkgs, _ := g.osPackages()
	return len(pkgs) > 0 && g.k.family == "apt"
}

// osPackages are the OS packages the python stage and the image need, and
// the shell test that holds when the base has them: the stack's Python
// with venv (none for a standalone CPython, which standaloneLayer
// brings), and torch.compile's compiler and headers (compilerPackages).
func (g *gen) osPackages() (pkgs []string, have string) {
	s := g.d.Stack
	py := s.Python
	if !g.standalone() {
		pkgs = pythonPackages(s.OS, py)
	}
	have = fmt.Sprintf("python%s -c 'import ensurepip, venv' 2>/dev/null", py)
	if g.d.torchCompile() {
		pkgs = append(pkgs, compilerPackages(s.OS, py, g.standalone())...)
		have = "{ " + have + " && " + fmt.Sprintf(compilerCheck, py) + "; }"
	}
	return pkgs, have
}

// osStage is the stage that installs osPackages on the base as the
// python stage and the image have it (standalone CPython, fabric), when
// the base lacks them, and then stages what the install created or
// changed (ctime since the step began, as clampStep reads it; files, links
// and empty directories, each with its parents' attributes) under
// layerRoot as hard links: the install's diff, which osCopy copies into
// the python stage and into the image. Before staging, the OS Python's
// stale standard-library .pyc files are recompiled (plan.py pycs): the
// clamp gives what the install brought the epoch as its time, and a base
// built with clamped times has them stale already, so Python would
// compile those modules again at every start (0.3 s of each pip step's
// start in the test environment's base). The packages are installed once
// per build, not once in each (9.9 s of a 1 GB cold build); the image's
// layers stay in their order, the OS packages in the venv's layer.
// Nothing when the stack needs no OS packages.
func (g *gen) osStage() {
	pkgs, have := g.osPackages()
	if len(pkgs) == 0 {
		return
	}
	g.w("\n# The OS packages (%s), installed once: the python stage (and a layered build's image) copy their files.\n", strings.Join(pkgs, ", "))
	g.from(stageOS)
	g.standaloneLayer()
	g.fabricLayer()
	// What the install created or changed: files, links and empty
	// directories, since the step began.
	changed := fmt.Sprintf("find / -xdev \\( %s -o -path %s \\) -prune -o -newerct \"@$gpuimg_t0\" \\( ! -type d -o -empty \\) -print0", stepPrune, path.Dir(layerRoot))
	stage := fmt.Sprintf("mkdir -p %[1]s; \\\n    %[2]s | xargs -0 -r cp -al --parents -t %[1]s", layerRoot, changed)
	if g.osSplit() {
		// The paths the install changed, split by package (plan.py
		// ossplit): what any Python shares to osSharedRoot, with one
		// time (LayerMTime: it reaches the image by COPY --link).
		stage = fmt.Sprintf("mkdir -p %[1]s %[3]s; \\\n    %[2]s | python%[4]s -B /tmp/gpuimg-plan.py ossplit \"$gpuimg_t0\" /tmp/gpuimg-own.list /tmp/gpuimg-shared.list; \\\n    xargs -0 -r cp -al --parents -t %[1]s < /tmp/gpuimg-own.list; xargs -0 -r cp -al --parents -t %[3]s < /tmp/gpuimg-shared.list; rm -f /tmp/gpuimg-own.list /tmp/gpuimg-shared.list; %[5]s",
			layerRoot, changed, osSharedRoot, g.d.Stack.Python, fixTimes(osSharedRoot))
	}
	pycs := ""
	if !g.standalone() {
		// After the clamp, which may have changed the stdlib's times, and
		// clamped again: the .pyc files it rewrote are new.
		pycs = fmt.Sprintf("if command -v python%[1]s >/dev/null; then PYTHONHASHSEED=0 python%[1]s -B /tmp/gpuimg-plan.py pycs; fi; \\\n    %[2]s; \\\n    ", g.d.Stack.Python, clampStep)
	}
	g.w("RUN%s%s --mount=type=bind,source=%s,target=/tmp/gpuimg-plan.py \\\n    set -eu; %s; \\\n    if ! %s; then %s; fi; \\\n    %s; \\\n    %s%s\n",
		pkgCacheMounts(g.k, g.d.Stack.OS), g.secrets, ctxPlan, stepStart, have, installCmd(g.k, pkgs), clampStep, pycs, stage)
}

// osCopy is the shell command that copies osStage's files (mounted at
// osMount) into the stage, and removes what the install removed: apt's
// docker-clean (installCmd) and the package managers' run files
// (pkgRunFiles). Nothing when the base had the packages (osStage staged
// nothing).
func (g *gen) osCopy() string {
	rm := "rm -rf " + strings.Join(pkgRunFiles(g.k), " ")
	if g.k.family == "apt" {
		rm = "rm -f /etc/apt/apt.conf.d/docker-clean; " + rm
	}
	return fmt.Sprintf(`if [ -n "$(ls -A %[1]s)" ]; then cp -a %[1]s/. /; %[2]s; fi`, osMount, rm)
}

// python is the stage with the stack's Python in a virtual environment.
func (g *gen) python() {
	s := g.d.Stack
	g.fabricStages()
	if g.standalone() {
		g.standaloneStages()
	}
	g.osStage()
	if g.standalone() {
		g.w("\n# Python %s from the standalone CPython, in a virtual environment at %s.\n", s.Python, VenvDir)
	} else {
		g.w("\n# Python %s from %s's own packages, in a virtual environment at %s.\n", s.Python, s.OS, VenvDir)
	}
	g.from(stagePython)
	g.standaloneLayer()
	g.fabricLayer()
	g.venvRun(true, fmt.Sprintf(" --mount=type=cache,id=gpuimg-pip,target=/root/.cache/pip --mount=type=bind,source=%s,target=/tmp/gpuimg-plan.py", ctxPlan), "",
		fmt.Sprintf("; \\\n    if ! %[1]s/bin/python -c %[2]s; then %[1]s/bin/python -m pip install --disable-pip-version-check %[3]s; fi; \\\n    %[1]s/bin/python -B /tmp/gpuimg-plan.py record 0 %[4]s",
			VenvDir, quoteAll([]string{pipFloorCheck})[0], PipUpgrade, planState))
}

// PipUpgrade is the pip the python stage installs in the venv when the
// OS's own is older than 20.3, the first that installs manylinux_2_28
// wheels (PEP 600's manylinux_x_y tags): torch 2.7 and later, and torch
// 2.6's CUDA 12.6 builds, ship only those, while Ubuntu 20.04's venv
// brings pip 20.0.2 and EL8's python39 pip 20.2.4. It comes from the pip
// index the build uses (--pip-index-url and the other mirror settings,
// else PyPI), like every package. 23.0.1 runs on Python 3.7 and later and
// is the pip Debian 12 packages (python3-pip-whl 23.0.1+dfsg-1), so a
// mirror built from Debian's packages can serve it.
const PipUpgrade = "pip==23.0.1"

// pipFloorCheck exits 0 when the venv's pip is 20.3 or later (a version
// it cannot parse counts as older).
const pipFloorCheck = `import sys, pip; sys.exit(tuple(int(x) for x in pip.__version__.split(".")[:2]) < (20, 3))`

// indexArgs are the pip index arguments of a framework's step: its index
// URL unless a pip mirror is configured, and its find-links page (pip
// --find-links: wheels some pins need that no index serves) unless the
// configuration sets find-links (a mirror of the page). A mirror of the
// index alone keeps the page: an index mirror cannot serve what the
// index lacks.
func (g *gen) indexArgs(fw matrix.Framework) (args, from string) {
	switch {
	case g.d.PipMirror:
		from = "the configured pip index"
	case fw.IndexURL != "":
		args, from = " --index-url "+fw.IndexURL, fw.IndexURL
	default:
		from = "PyPI"
	}
	if fw.FindLinks != "" && !g.d.PipFindLinks {
		args += " --find-links " + fw.FindLinks
		from += " and " + fw.FindLinks
	}
	return args, from
}

// frameworks is the stage that installs the frameworks, one pip step
// each, checks each with verify.py and records what each step installed;
// then the plan stage.
func (g *gen) frameworks() error {
	g.w("\nFROM %s AS %s\n", stagePython, stageFrameworks)
	g.args()
	// One fixed order (matrix.FrameworkNames) keeps the Dockerfile, and so
	// the cache, deterministic.
	// verify.py checks torch.compile's compiler and headers wherever
	// triton is installed, unless the build leaves them out.
	verifyOpts := ""
	if g.d.NoTorchCompile {
		verifyOpts = " --no-torch-compile"
	}
	xla, err := tfXLAWheel(g.d.Stack)
	if err != nil {
		return err
	}
	for i, fw := range g.d.Stack.FrameworkList() {
		index, from := g.indexArgs(fw.Framework)
		pkgs := fw.Packages
		if fw.Name == matrix.FrameworkTensorFlow && xla != "" {
			pkgs = append(slices.Clone(pkgs), xla)
		}
		g.w("\n# %s %s (wheels for CUDA %s) from %s, checked after install.\n", fw.Name, fw.Version, fw.CUDA, from)
		g.w("RUN%s --mount=type=bind,source=%s,target=/tmp/gpuimg-verify.py --mount=type=bind,source=%s,target=/tmp/gpuimg-plan.py \\\n    %s\n",
			g.pipMounts, ctxVerify, ctxPlan, clamped(fmt.Sprintf("pip install --disable-pip-version-check%s %s \\\n && python /tmp/gpuimg-verify.py%s %s %s %s \\\n && python -B /tmp/gpuimg-plan.py record %d %s",
				index, strings.Join(quoteAll(pkgs), " "), verifyOpts, fw.Name, fw.Version, fw.CUDA, i+1, planState)))
	}
	g.tfCUDASteps()
	planFrom := stageFrameworks
	if !g.d.NoChecks {
		g.w("\n# The proof, on the frameworks' environment: libraries resolve, frameworks import.\n")
		g.w("FROM %s AS %s\n", stageFrameworks, StageCheckEnv)
		g.proofRun()
		planFrom = StageCheckEnv
	}
	g.w("\n# What the framework steps installed, for the layered build.\n")
	g.w("FROM %s AS %s-files\n", planFrom, StagePlan)
	g.w("RUN --mount=type=bind,source=%s,target=/tmp/gpuimg-plan.py \\\n    python -B /tmp/gpuimg-plan.py finish %s /%s\n", ctxPlan, planState, PlanFile)
	g.w("FROM scratch AS %s\n", StagePlan)
	g.w("COPY --from=%s-files /%s /%s\n", StagePlan, PlanFile, PlanFile)
	return nil
}

// extras are the user's layers: OS packages, pip packages, files,
// environment, workdir, entrypoint.
func (g *gen) extras() {
	d, k, s := g.d, g.k, g.d.Stack
	if pkgs := append(slices.Clone(d.Extras.Apt), d.Extras.Dnf...); len(pkgs) > 0 {
		apt := slices.Sorted(slices.Values(pkgs))
		g.w("\n# Extra OS packages.\n")
		g.w("RUN%s%s \\\n    %s\n", pkgCacheMounts(k, s.OS), g.secrets, clamped(installCmd(k, apt)))
	}
	if len(d.Extras.Pip) > 0 || d.HasRequirements {
		args := append([]string(nil), d.Extras.Pip...)
		mounts := g.pipMounts
		if d.HasRequirements {
			mounts += fmt.Sprintf(" --mount=type=bind,source=%s,target=/tmp/gpuimg-requirements.txt", ctxRequirements)
			args = append(args, "-r", "/tmp/gpuimg-requirements.txt")
		}
		g.w("\n# Extra Python packages.\n")
		g.w("RUN%s \\\n    %s\n", mounts, clamped("pip install --disable-pip-version-check "+strings.Join(quoteAll(args), " ")))
	}
	if len(d.Extras.Copy) > 0 {
		g.w("\n# Files from the context directory.\n")
		for _, c := range d.Extras.Copy {
			cp, _ := ParseCopySpec(c) // Dockerfile validated the extras
			g.w("COPY --link --from=%s %s %s\n", UserContext, jsonString(cp.Src), jsonString(cp.Dst))
		}
	}
	if len(d.Extras.Env) > 0 || d.Extras.Workdir != "" || len(d.Extras.Entrypoint) > 0 {
		g.w("\n")
	}
	for _, key := range slices.Sorted(maps.Keys(d.Extras.Env)) {
		g.w("ENV %s=%s\n", key, dockerQuote(d.Extras.Env[key]))
	}
	if d.Extras.Workdir != "" {
		g.w("WORKDIR %s\n", d.Extras.Workdir)
	}
	if len(d.Extras.Entrypoint) > 0 {
		g.w("ENTRYPOINT [%s]\n", strings.Join(jsonAll(d.Extras.Entrypoint), ", "))
	}
}

// dockerQuote quotes a value for ENV: double quotes, with backslashes,
// quotes and $ escaped so the frontend takes it literally.
func dockerQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func jsonString(s string) string { return strconv.Quote(s) }

func jsonAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = jsonString(s)
	}
	return out
}

// quoteAll single-quotes shell words that need it.
func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = ShellQuote(s)
	}
	return out
}

// ShellQuote returns s as one word of a POSIX shell command: in single
// quotes when it has a character the shell would read (jax[cuda12_pip],
// nvidia-cudnn-cu12<9), else unchanged.
func ShellQuote(s string) string {
	if strings.ContainsAny(s, " <>|&;$`'\"\\*?[]()!{}~#") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

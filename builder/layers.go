package builder

import (
	"cmp"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// DefaultLargeWheel is the installed size from which a distribution gets
// a layer of its own: 50 MB. Below it, distributions share one layer per
// pip step (a layer costs a registry round trip and an unpack, and most
// of a stack's ~40 distributions are a few hundred kB).
const DefaultLargeWheel = 50_000_000

// SharedSite is where the Python-version-independent distributions (every
// wheel tag py3-none-*, like all nvidia-* wheels) are installed: a site
// directory inside the virtual environment (so pip can upgrade and
// uninstall them) whose path has no Python version, put on sys.path by a
// .pth file in the venv's own site-packages. Their layers are then
// byte-identical under any Python version.
const SharedSite = VenvDir + "/lib/gpuimg-shared/site-packages"

// layerRoot is where a layer stage installs the files of its layer.
const layerRoot = "/gpuimg/layer"

// PlannedDist is one distribution the framework steps installed, as the
// build's plan stage (plan.py) lists it.
type PlannedDist struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Step is the framework step (1 for the first framework of
	// matrix.Stack.FrameworkList) that installed this version.
	Step int `json:"step"`
	// Size is the installed size in bytes.
	Size int64 `json:"size"`
	// Shared says the wheel is for any Python 3 (tags py3-none-*), has
	// no files outside the site directory and shares no top-level
	// directory with a version-specific distribution: it goes to
	// SharedSite.
	Shared bool `json:"shared"`
	// Top are the top-level directories of the site directory the
	// distribution installs into (nvidia, cusparselt, torch); the layered
	// build links a shared distribution's into the venv.
	Top []string `json:"top,omitempty"`
}

// Layer is one layer of the Python environment in a layered build.
type Layer struct {
	// Dists are the distributions in the layer, NAME==VERSION.
	Dists []string `json:"dists"`
	// Size is their installed size in bytes.
	Size int64 `json:"size"`
	// Shared says the layer is in SharedSite (the same bytes under any
	// Python version).
	Shared bool `json:"shared"`
	// Step is the framework step that installed the distributions.
	Step int `json:"step"`
}

// LayerPlan splits the plan into the Python environment's layers, most
// shared first: each shared distribution of at least large bytes alone
// (by name), then the other shared ones of each step together, then each
// large version-specific one alone (torch, triton), then the other
// version-specific ones of each step together. large ≤ 0 means
// DefaultLargeWheel.
func LayerPlan(plan []PlannedDist, large int64) []Layer {
	if large <= 0 {
		large = DefaultLargeWheel
	}
	var out []Layer
	for _, shared := range []bool{true, false} {
		var big []PlannedDist
		small := map[int]*Layer{}
		for _, p := range plan {
			if p.Shared != shared {
				continue
			}
			if p.Size >= large {
				big = append(big, p)
				continue
			}
			l := small[p.Step]
			if l == nil {
				l = &Layer{Shared: shared, Step: p.Step}
				small[p.Step] = l
			}
			l.Dists = append(l.Dists, p.Name+"=="+p.Version)
			l.Size += p.Size
		}
		slices.SortFunc(big, func(a, b PlannedDist) int { return cmp.Compare(normName(a.Name), normName(b.Name)) })
		for _, p := range big {
			out = append(out, Layer{Dists: []string{p.Name + "==" + p.Version}, Size: p.Size, Shared: shared, Step: p.Step})
		}
		for _, step := range slices.Sorted(func(yield func(int) bool) {
			for k := range small {
				if !yield(k) {
					return
				}
			}
		}) {
			l := small[step]
			slices.SortFunc(l.Dists, func(a, b string) int { return cmp.Compare(strings.ToLower(a), strings.ToLower(b)) })
			out = append(out, *l)
		}
	}
	return out
}

var nameRE = regexp.MustCompile(`[-_.]+`)

func normName(n string) string { return strings.ToLower(nameRE.ReplaceAllString(n, "-")) }

// LayeredDockerfile renders the build of Dockerfile(d) with the Python
// environment split into content-addressed layers (LayerPlan(plan,
// large)), plan being what Dockerfile(d)'s plan stage listed. Nothing is
// installed twice: each layer's files are copied (plan.py copy, file by
// file from each distribution's RECORD) from the environment the
// framework steps' pip installs made, and the venv from the stage that
// made it. Each shared or large layer is copied in a stage of its own and
// added with COPY --link, so its digest depends only on its files: the
// nvidia-* layers are the same for every Python version and on every
// builder. The image, base first:
//
//  1. the shared layers (SharedSite): each large distribution, by name,
//     then the small ones of each step;
//  2. the stack's Python and the virtual environment, with the .pth file
//     that puts SharedSite on sys.path, a link in the venv's
//     site-packages to each top-level directory a shared distribution
//     installs (plan.py link: torch's libraries find nvidia/*/lib and
//     cuSPARSELt 0.6's cusparselt/lib through their RPATH
//     $ORIGIN/../../…), and the .pyc files of SharedSite for this Python;
//  3. the version-specific large layers (torch, triton);
//  4. the other distributions of each framework step, one layer per step;
//  5. the user's OS packages, pip packages, files and settings, last.
//
// The installed set is exactly plan's: the files the framework steps'
// pip installs left, each distribution once.
func LayeredDockerfile(d Definition, plan []PlannedDist, large int64) (string, error) {
	g, err := newGen(d)
	if err != nil {
		return "", err
	}
	fws := d.Stack.FrameworkList()
	for _, p := range plan {
		if p.Step < 1 || p.Step > len(fws) {
			return "", fmt.Errorf("plan: %s %s was installed by step %d; the stack has %d framework steps", p.Name, p.Version, p.Step, len(fws))
		}
	}
	g.python()
	if err := g.frameworks(); err != nil {
		return "", err
	}
	layers := LayerPlan(plan, large)
	shared := false
	for _, l := range layers {
		shared = shared || l.Shared
	}
	names := make([]string, len(layers))
	for i, l := range layers {
		names[i] = fmt.Sprintf("gpuimg-layer-%d", i+1)
		if l.Shared || len(l.Dists) == 1 {
			g.layerStage(names[i], l)
		}
	}

	g.w("\n# The image: the Python environment in %d layers, most shared first, then what you add.\n", len(layers))
	g.from(StageImage)
	g.standaloneLayer()
	g.fabricLayer()
	for i, l := range layers {
		if l.Shared {
			g.w("COPY --link --from=%s %s/ /\n", names[i], layerRoot)
		}
	}
	if g.osSplit() {
		g.w("COPY --link --from=%s %s/ /\n", stageOS, osSharedRoot)
	}
	more := fmt.Sprintf("; \\\n    site=$(%[1]s/bin/python -c 'import sysconfig; print(sysconfig.get_path(\"purelib\"))'); \\\n    echo %[2]s > \"$site/gpuimg-shared.pth\"", VenvDir, SharedSite)
	if shared {
		more += fmt.Sprintf("; \\\n    %s/bin/python -B /tmp/gpuimg-plan.py link %s /tmp/%s", VenvDir, SharedSite, PlanFile)
	}
	more += fmt.Sprintf("; \\\n    if [ -d %[1]s ]; then %[2]s/bin/python -m compileall -q %[1]s; fi", SharedSite, VenvDir)
	// The venv is the one the python stage made (its pip included),
	// copied. The plan stage is mounted so that this build's graph (and
	// its cache export) holds the steps the plan came from.
	// Each distribution the framework steps upgraded (pip, setuptools) is
	// removed from the copy first (plan.py prune), as pip uninstall would:
	// its layer brings the new version, and the image holds one.
	g.venvRun(false, fmt.Sprintf(" --mount=type=bind,from=%s,source=/%s,target=/tmp/%s --mount=type=bind,from=%s,source=%s,target=%s --mount=type=bind,source=%s,target=/tmp/gpuimg-plan.py", StagePlan, PlanFile, PlanFile, stagePython, VenvDir, stageVenv, ctxPlan),
		fmt.Sprintf("mkdir -p %[2]s; cp -a %[1]s/. %[2]s/; rm %[3]s; \\\n    %[2]s/bin/python -B /tmp/gpuimg-plan.py prune %[2]s /tmp/%[4]s", stageVenv, VenvDir, planState, PlanFile), more)
	for i, l := range layers {
		switch {
		case l.Shared:
		case len(l.Dists) == 1:
			g.w("COPY --link --from=%s %s/ /\n", names[i], layerRoot)
		default:
			g.w("\n# %s's other distributions (%d, %s), as its pip install put them.\n", fws[l.Step-1].Name, len(l.Dists), sizeMB(l.Size))
			g.w("RUN --mount=type=bind,from=%s,source=%s,target=%s --mount=type=bind,source=%s,target=/tmp/gpuimg-plan.py \\\n    %s\n",
				stageFrameworks, VenvDir, stageVenv, ctxPlan, clamped(fmt.Sprintf("python -B /tmp/gpuimg-plan.py copy %s / %s", stageVenv, strings.Join(quoteAll(l.Dists), " "))))
		}
	}
	g.tfCUDASteps()
	g.extras()
	g.proveImage()
	return g.b.String(), nil
}

// stageVenv is where a step mounts another stage's venv.
const stageVenv = "/tmp/gpuimg-venv"

// layerStage copies layer l's distributions, as the framework steps' pip
// installs left them in the venv, into layerRoot: into SharedSite for a
// shared layer (no .pyc files: they depend on the Python version), else
// to where they were installed (under layerRoot).
func (g *gen) layerStage(name string, l Layer) {
	dest, what, shared := layerRoot, "for this Python", ""
	if l.Shared {
		dest, what, shared = path.Join(layerRoot, SharedSite), "for any Python", " --shared"
	}
	g.w("\n# %s (%s, %s), as the framework step's pip install put it.\n", strings.Join(l.Dists, " "), sizeMB(l.Size), what)
	g.w("FROM %s AS %s\n", stageFrameworks, name)
	g.w("RUN --mount=type=bind,source=%s,target=/tmp/gpuimg-plan.py \\\n    python -B /tmp/gpuimg-plan.py copy%s %s %s %s \\\n && %s\n", ctxPlan, shared, VenvDir, dest, strings.Join(quoteAll(l.Dists), " "), fixTimes(layerRoot))
}

func sizeMB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

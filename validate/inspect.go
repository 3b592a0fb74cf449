package validate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// Status is a check's outcome: pass, warn or fail.
type Status = matrix.Status

// Check is one validation result: the matrix's Finding, so a report and
// `gpuimg matrix check` speak one format.
type Check = matrix.Finding

// SizeInfo describes the image's size and layers.
type SizeInfo struct {
	Compressed   int64        `json:"compressed"`
	Uncompressed int64        `json:"uncompressed"`
	Layers       int          `json:"layers"`
	Largest      []LayerStats `json:"largest"`
	// PullSeconds estimates the download at Options.Bandwidth (0 if unset).
	PullSeconds float64 `json:"pull_seconds,omitempty"`
}

// MarshalJSON writes Largest as [] when there are none (a GPU report's
// size is empty): a list is never null in gpuimg's JSON.
func (s SizeInfo) MarshalJSON() ([]byte, error) {
	type plain SizeInfo // without this method
	p := plain(s)
	if p.Largest == nil {
		p.Largest = []LayerStats{}
	}
	return json.Marshal(p)
}

// Report is the result of validating an image, static or on a GPU. The
// same type serves both so promotion reads one format.
type Report struct {
	Kind     string    `json:"kind"` // static
	Image    string    `json:"image"`
	Digest   string    `json:"digest"`
	Platform string    `json:"platform,omitempty"`
	Created  time.Time `json:"created"`
	Found    Found     `json:"found"`
	Size     SizeInfo  `json:"size"`
	Checks   []Check   `json:"checks"`
	Verdict  Status    `json:"verdict"` // pass, unknown, fail, or no-gpu for a GPU run without a GPU
	// Strict says the verdict was taken under Options.Strict: unknown and
	// warning checks fail it.
	Strict bool `json:"strict,omitempty"`
	// Probe holds the GPU run's raw result (kind gpu).
	Probe *gpuprobe.Result `json:"probe,omitempty"`
	// Coverage is the device code of the whole image against the
	// matrix's architectures and GPUs (static reports with device code).
	Coverage *Coverage `json:"coverage,omitempty"`
	// Inventory is set when Options.Inventory asked for it; it is not
	// part of the report's JSON (the SBOM carries it).
	Inventory *Inventory `json:"-"`
}

// Options for Inspect. DB is required.
type Options struct {
	Name, Digest, Platform string
	DB                     *matrix.DB
	// Driver and GPU, when set, ask whether the image runs there.
	Driver matrix.Version
	GPU    string
	// Targets are fleets the image is judged against (validate --target):
	// each one's driver, GPUs, runtime contract and size limit, and, with
	// Packaging (how the image is wrapped, from images.Source), its
	// platform, manifest format, index, attestations and compression.
	Targets   []matrix.Target
	Packaging *matrix.Packaging
	// Fabrics are multi-node networks whose user space the image must
	// carry (validate --fabric); a target whose row names a fabric adds
	// it. Each is checked once (fabric.go).
	Fabrics []matrix.Fabric
	// Bandwidth in bits per second, for the pull-time estimate.
	Bandwidth float64
	Limits    Limits
	// Now stamps the report; default time.Now.
	Now func() time.Time
	// Inventory also collects what an SBOM lists (Report.Inventory) in
	// the same walk: dpkg's status files, each Python distribution, the
	// CUDA components by file. Off, the walk reads nothing extra.
	Inventory bool
	// Strict fails the verdict on unknown and warning checks too
	// (validate --strict, publish.yaml's validate: strict: true), for CI;
	// matrix.StrictVerdict. The default judges by matrix.Verdict: a
	// failed check fails, an unknown one makes the verdict unknown.
	Strict bool
}

// Inspect reads the image's final filesystem (streaming every layer once,
// nothing extracted) and checks what it finds.
func Inspect(ctx context.Context, img v1.Image, opt Options) (*Report, error) {
	if opt.DB == nil {
		return nil, fmt.Errorf("validate: no matrix")
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	det := newDetector()
	det.elf = newELFDeps(opt.Limits)
	det.scan = newScanBudget(opt.Limits)
	det.tools = toolAdvisories(opt.DB)
	det.toolNames = toolNames(det.tools)
	if opt.Inventory {
		det.inv = &invCollector{dpkg: map[string][]OSPackage{}}
	}
	walk, err := Walk(ctx, img, opt.Limits, det.visit)
	if err != nil {
		return nil, err
	}
	found := det.finish(walk)
	r := &Report{Kind: "static", Image: opt.Name, Digest: opt.Digest, Platform: opt.Platform, Created: now().UTC(), Found: found}
	for _, l := range walk.Layers {
		r.Size.Compressed += l.Size
		r.Size.Uncompressed += l.Uncompressed
	}
	r.Size.Layers = len(walk.Layers)
	largest := append([]LayerStats(nil), walk.Layers...)
	sort.SliceStable(largest, func(i, j int) bool { return largest[i].Size > largest[j].Size })
	r.Size.Largest = largest[:min(3, len(largest))]
	if opt.Bandwidth > 0 {
		r.Size.PullSeconds = float64(r.Size.Compressed) * 8 / opt.Bandwidth
	}

	r.Coverage = rollUp(opt.DB, found.Kernels)
	c := &checker{r: r, db: opt.DB, env: envMap(cfg.Config.Env), labels: cfg.Config.Labels}
	c.stack, c.hasStack, c.stackErr = matrix.StackFromLabels(c.labels)
	c.stackLabel()
	c.frameworks()
	c.requireCUDA()
	var gpu *matrix.GPU
	if opt.GPU != "" {
		g, err := c.db.FindGPU(opt.GPU)
		if err != nil {
			return nil, err
		}
		gpu = &g
	}
	if !opt.Driver.IsZero() {
		c.driver(opt.Driver, gpu)
	}
	if gpu != nil {
		if err := c.gpu(*gpu); err != nil {
			return nil, err
		}
	}
	fabrics := opt.Fabrics
	for _, t := range opt.Targets {
		if err := c.target(t, cfg, opt.Packaging); err != nil {
			return nil, err
		}
		f, ok, err := c.targetFabric(t)
		if err != nil {
			return nil, err
		}
		if ok && !slices.ContainsFunc(fabrics, func(g matrix.Fabric) bool { return g.Name == f.Name }) {
			fabrics = append(slices.Clone(fabrics), f)
		}
	}
	if f, ok := c.labelFabric(); ok && !slices.ContainsFunc(fabrics, func(g matrix.Fabric) bool { return g.Name == f.Name }) {
		fabrics = append(slices.Clone(fabrics), f)
	}
	c.duplicates()
	c.driverLibs()
	c.advisories(opt.Targets)
	c.r.Checks = append(c.r.Checks, det.elf.check(walk, c.env)...)
	c.fabrics(fabrics, det.elf, walk)
	c.unreadable(cfg.RootFS.DiffIDs)
	secrets := fileSecrets(found.secrets, walk, cfg.RootFS.DiffIDs)
	secrets = append(secrets, secretInEnv(cfg.Config.Env)...)
	created := make([]string, len(cfg.History))
	for i, h := range cfg.History {
		created[i] = h.CreatedBy
	}
	secrets = append(secrets, secretsInHistory(created)...)
	labels := secretsInLabels(cfg.Config.Labels)
	sort.Strings(labels)
	secrets = append(secrets, labels...)
	switch cut := det.scan.cut.Load(); {
	case len(secrets) > 0:
		c.add("secrets", matrix.Fail, "%s", strings.Join(secrets, "; "))
	case cut > 0:
		c.add("secrets", matrix.Warn, "no credentials found in what was read, but %d text files were not read to the end (%s): past %s a file, or %s in all (Limits.MaxSecretScanFileBytes, MaxSecretScanBytes), a credential is not looked for",
			cut, strings.Join(det.scanCut, ", "), humanize.Bytes(det.scan.perFile), humanize.Bytes(det.scan.total))
	default:
		c.add("secrets", matrix.Pass, "no credentials found in files, environment, labels or history")
	}
	if len(walk.Unsafe) > 0 {
		c.add("unsafe-paths", matrix.Fail, "layer entries that would escape the root when extracted: %s", unsafeList(walk.Unsafe))
	}
	if err := c.layerMediaTypes(img); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%s compressed (%s unpacked) in %d layers; largest %s", humanize.Bytes(r.Size.Compressed), humanize.Bytes(r.Size.Uncompressed), r.Size.Layers, humanize.Bytes(largestSize(r.Size.Largest)))
	if opt.Bandwidth > 0 {
		msg += fmt.Sprintf("; about %.0f s to pull at %s", r.Size.PullSeconds, humanize.Rate(opt.Bandwidth))
	}
	c.add("size", matrix.Pass, "%s", msg)

	if opt.Inventory {
		mf, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("read image manifest: %w", err)
		}
		r.Inventory = c.buildInventory(det, walk, cfg, mf)
	}
	r.Strict = opt.Strict
	r.Verdict = matrix.VerdictOf(r.Checks, r.Strict)
	return r, nil
}

// Add appends checks judged after the walk (another target's, a
// recorded NCCL log's) and recomputes the verdict over all of them.
func (r *Report) Add(checks ...Check) {
	r.Checks = append(r.Checks, checks...)
	r.Verdict = matrix.VerdictOf(r.Checks, r.Strict)
}

type checker struct {
	r      *Report
	db     *matrix.DB
	env    map[string]string
	labels map[string]string
	// stack is the dev.gpuimg.stack label, parsed once (hasStack: the
	// image has one; stackErr: it does not parse).
	stack    matrix.Stack
	hasStack bool
	stackErr error
}

func (c *checker) add(name string, st Status, format string, args ...any) {
	c.r.Checks = append(c.r.Checks, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func mm(v string) string {
	p, err := matrix.ParseVersion(v)
	if err != nil || v == "" {
		return ""
	}
	return p.Trunc(2).String()
}

func baseVersion(v string) string { return strings.SplitN(v, "+", 2)[0] }

// stackLabel compares the dev.gpuimg.stack label with the files.
func (c *checker) stackLabel() {
	s := c.stack
	if !c.hasStack {
		return
	}
	if c.stackErr != nil {
		c.add("stack-label", matrix.Fail, "%v", c.stackErr)
		return
	}
	f := c.r.Found
	var bad []string
	if f.CUDA != "" && mm(f.CUDA) != mm(s.CUDA) {
		bad = append(bad, fmt.Sprintf("CUDA %s in the files, %s in the label", f.CUDA, s.CUDA))
	}
	if f.Python != "" && s.Python != "" && f.Python != s.Python {
		bad = append(bad, fmt.Sprintf("Python %s in the files, %s in the label", f.Python, s.Python))
	}
	if fw, ok := s.Frameworks["torch"]; ok {
		switch {
		case f.Torch == nil:
			bad = append(bad, "torch is in the label but not installed")
		case !samePublic(f.Torch.Version, fw.Version):
			bad = append(bad, fmt.Sprintf("torch %s installed, %s in the label", f.Torch.Version, fw.Version))
		case mm(f.Torch.CUDA) != fw.CUDA:
			bad = append(bad, fmt.Sprintf("torch built for CUDA %q, the label says %s", f.Torch.CUDA, fw.CUDA))
		}
	}
	for _, fw := range s.FrameworkList() {
		if want := fw.Installed(fw.Name); fw.Name != matrix.FrameworkTorch && !samePublic(f.Packages[fw.Name], want) {
			bad = append(bad, fmt.Sprintf("%s %q installed, %s in the label", fw.Name, f.Packages[fw.Name], want))
		}
	}
	if f.OS != "" && s.OS != "" && f.OS != s.OS {
		// A derivative base (another distribution under NVIDIA's tag) is
		// worth knowing about, not necessarily broken.
		c.add("stack-label/os", matrix.Warn, "the files say %s (%s), the label says %s", f.OS, f.OSPretty, s.OS)
	}
	if len(bad) > 0 {
		c.add("stack-label", matrix.Fail, "the image is not what its label says: %s", strings.Join(bad, "; "))
		return
	}
	c.add("stack-label", matrix.Pass, "files agree with the %s label (CUDA %s, Python %s)", matrix.StackLabel, s.CUDA, s.Python)
	c.baseImage(s.BaseImage)
}

// baseImage warns when the image was built FROM an nvidia/cuda tag NVIDIA
// has marked end of life (base_images eol: in the matrix).
func (c *checker) baseImage(ref string) {
	if c.db == nil || ref == "" {
		return
	}
	eol, supported, known := c.db.BaseImageSupport(ref)
	if !known || !eol {
		return
	}
	instead := "rebuild on a supported CUDA release (gpuimg matrix list images)"
	if !supported.IsZero() {
		instead = fmt.Sprintf("rebuild on %s, the supported point release of that CUDA minor", supported)
	}
	c.add("base-image", matrix.Warn, "built FROM %s, which NVIDIA has marked end of life: it gets no security updates and NVIDIA deletes such tags six months later; %s", ref, instead)
}

// floors are the driver floors of what is inside (matrix.DB.FloorsOf, as
// the resolver computes a stack's): the image's CUDA release, torch's
// CUDA and the nvidia-cuda-runtime wheels, each wheel's CUDA counted at
// its newest patch.
func (c *checker) floors() matrix.DriverFloors {
	f := c.r.Found
	parts := []matrix.FloorPart{{}}
	if v, err := matrix.ParseVersion(f.CUDA); err == nil && f.CUDA != "" {
		parts[0] = matrix.FloorPart{What: "the image's CUDA " + f.CUDA, CUDA: v}
	}
	wheel := func(what, cuda string) {
		if v, err := matrix.ParseVersion(mm(cuda)); err == nil && mm(cuda) != "" {
			parts = append(parts, matrix.FloorPart{What: what, CUDA: v})
		}
	}
	if f.Torch != nil {
		wheel(fmt.Sprintf("torch %s", f.Torch.Version), f.Torch.CUDA)
	}
	for _, p := range matrix.LibraryWheels("cuda-runtime") {
		if v := f.Packages[p]; v != "" {
			wheel(p+" "+v, v)
		}
	}
	if parts[0].CUDA.IsZero() && len(parts) > 1 {
		// No toolkit in the image: the family is the wheels'.
		parts[0] = parts[1]
	}
	return c.db.FloorsOf("the image", parts)
}

// neededCUDA is the newest CUDA anything inside needs the driver to support.
func (c *checker) neededCUDA() string {
	f := c.r.Found
	need := mm(f.CUDA)
	consider := func(v string) {
		if m := mm(v); m != "" && newer(m, need) {
			need = m
		}
	}
	if f.Torch != nil {
		consider(f.Torch.CUDA)
	}
	for _, p := range matrix.LibraryWheels("cuda-runtime") {
		consider(f.Packages[p])
	}
	return need
}

// frameworks checks the frameworks against the image CUDA and the matrix.
func (c *checker) frameworks() {
	f := c.r.Found
	if f.Torch == nil {
		return
	}
	t := f.Torch
	if t.CUDA == "" {
		c.add("torch-cuda", matrix.Fail, "torch %s is a CPU-only build", t.Version)
		return
	}
	tc, err := matrix.ParseVersion(t.CUDA)
	if err != nil {
		c.add("torch-cuda", matrix.Warn, "torch reports CUDA %q, which gpuimg cannot read", t.CUDA)
		return
	}
	if f.CUDA != "" {
		if ic, err := matrix.ParseVersion(f.CUDA); err == nil {
			switch matrix.FitWheel(tc, ic) {
			case matrix.WheelOtherMajor:
				c.add("torch-cuda", matrix.Fail, "torch %s is built for CUDA %s but the image has CUDA %s: the wheel's CUDA must have the image's major version", t.Version, t.CUDA, f.CUDA)
			case matrix.WheelNewer:
				c.add("torch-cuda", matrix.Fail, "torch %s is built for CUDA %s, newer than the image's CUDA %s", t.Version, t.CUDA, f.CUDA)
			case matrix.WheelMinorCompat:
				c.add("torch-cuda", matrix.Pass, "torch %s (CUDA %s) runs on the image's CUDA %s through minor-version compatibility", t.Version, t.CUDA, f.CUDA)
			case matrix.WheelSameCUDA:
				c.add("torch-cuda", matrix.Pass, "torch %s is built for the image's CUDA %s", t.Version, t.CUDA)
			}
		}
	}
	// Against the matrix: the release, its variant, Python, cuDNN.
	tv, err := matrix.ParseVersion(baseVersion(t.Version))
	if err != nil {
		return
	}
	for _, row := range c.db.Torch {
		if row.Version.Compare(tv) != 0 {
			continue
		}
		if f.Python != "" {
			if py, err := matrix.ParseVersion(f.Python); err == nil && !row.Python.Check(py) {
				c.add("python", matrix.Fail, "torch %s supports Python %s; the image has Python %s", t.Version, row.Python, f.Python)
			} else if err == nil {
				c.add("python", matrix.Pass, "Python %s is supported by torch %s (%s)", f.Python, row.Version, row.Python)
			}
		}
		for _, v := range row.Variants {
			if v.CUDA.Trunc(2).Compare(tc.Trunc(2)) != 0 || v.CuDNN.IsZero() || f.CuDNN == "" {
				continue
			}
			got, err := matrix.ParseVersion(f.CuDNN)
			if err != nil {
				continue
			}
			if got.Major() != v.CuDNN.Major() {
				c.add("cudnn", matrix.Fail, "torch %s cu%d%d expects cuDNN %s; the image provides cuDNN %s", row.Version, tc.Major(), tc.Minor(), v.CuDNN, f.CuDNN)
			} else {
				c.add("cudnn", matrix.Pass, "cuDNN %s matches torch %s cu%d%d (%s)", f.CuDNN, row.Version, tc.Major(), tc.Minor(), v.CuDNN)
			}
		}
	}
}

// requireCUDA checks what the NVIDIA container runtime will require of
// the image's CUDA (matrix.RuntimeEnv: NVIDIA_REQUIRE_CUDA, or, when it is
// unset or empty and CUDA_VERSION is set, the toolkit's own
// cuda>=MAJOR.MINOR of CUDA_VERSION) against what is inside.
func (c *checker) requireCUDA() {
	need := c.neededCUDA()
	req, set := c.env["NVIDIA_REQUIRE_CUDA"]
	if need == "" {
		if set {
			c.add("require-cuda", matrix.Pass, "NVIDIA_REQUIRE_CUDA=%s; no CUDA found inside", req)
		}
		return
	}
	floor := c.db.DriverFloorsFor(matrix.MustVersion(need)).Strict
	want := matrix.RequireCUDA(matrix.MustVersion(need))
	reqs, disabled, err := matrix.RuntimeEnv(c.env)
	what := "NVIDIA_REQUIRE_CUDA=" + req
	switch {
	case disabled:
		c.add("require-cuda", matrix.Warn, "NVIDIA_DISABLE_REQUIRE=%s: the NVIDIA container runtime checks no requirement, so it starts this image on drivers too old for CUDA %s (needs >= %s); remove it and set NVIDIA_REQUIRE_CUDA=%s", c.env["NVIDIA_DISABLE_REQUIRE"], need, floor, want)
		return
	case err != nil:
		c.add("require-cuda", matrix.Fail, "%v: its hook fails (\"failed to get requirements\") and no container of the image starts; set CUDA_VERSION to the CUDA inside (%s) or NVIDIA_REQUIRE_CUDA=%s", err, need, want)
		return
	case req == "":
		i := slices.IndexFunc(reqs, func(q matrix.RuntimeReq) bool { return q.Legacy })
		if i < 0 {
			c.add("require-cuda", matrix.Warn, "neither NVIDIA_REQUIRE_CUDA nor CUDA_VERSION is set: the NVIDIA container runtime will start this image on drivers too old for CUDA %s (needs >= %s); set NVIDIA_REQUIRE_CUDA=%s", need, floor, want)
			return
		}
		// The toolkit's legacy rule (nvidia-container-toolkit
		// internal/config/image/cuda_image.go IsLegacy, GetRequirements).
		req = reqs[i].Value
		what = fmt.Sprintf("CUDA_VERSION=%s without NVIDIA_REQUIRE_CUDA (the NVIDIA container toolkit requires %s of it)", c.env["CUDA_VERSION"], req)
	}
	got, ok := matrix.ParseRequireCUDA(req)
	if !ok {
		c.add("require-cuda", matrix.Fail, "%s bounds no CUDA: an alternative holds without a cuda>= term, or none can hold (as the NVIDIA container runtime reads it); set it to %s", what, want)
		return
	}
	if newer(need, got.Trunc(2).String()) {
		c.add("require-cuda", matrix.Fail, "%s is weaker than what is inside: it lets drivers that report CUDA %s start the image, and CUDA %s needs driver >= %s; set %s", what, got, need, floor, want)
		return
	}
	c.add("require-cuda", matrix.Pass, "%s covers CUDA %s (driver >= %s)", what, need, floor)
}

// driver judges driver d against the floors of the newest CUDA inside,
// whether the NVIDIA container runtime starts the image on it (on GPU g,
// when named): matrix.DB.JudgeRuntime, and whether it knows GPU g:
// matrix.DB.JudgeGPUDriver, the rules matrix check uses.
func (c *checker) driver(d matrix.Version, g *matrix.GPU) {
	var gpus []matrix.GPU
	if g != nil {
		gpus = []matrix.GPU{*g}
	}
	if c.neededCUDA() == "" {
		c.add("driver", matrix.Pass, "no CUDA inside; any driver %s loads it", d)
	} else {
		c.r.Checks = append(c.r.Checks, c.floors().Judge("driver", d))
	}
	c.r.Checks = append(c.r.Checks, c.db.JudgeRuntime("driver/require-cuda", c.env, d, gpus))
	if g != nil {
		if f, ok := c.db.JudgeGPUDriver("gpu/driver", *g, d); ok {
			c.r.Checks = append(c.r.Checks, f)
		}
	}
}

func (c *checker) gpu(g matrix.GPU) error {
	fs, err := c.gpuFindings(g, false)
	c.r.Checks = append(c.r.Checks, fs...)
	return err
}

// gpuFindings are the gpu/cuda and gpu findings for GPU g: can the
// image's CUDA target it, and does every library's device code run on it
// (under minor-version compatibility PTX cannot be JIT-compiled, so
// PTX-only libraries fail).
func (c *checker) gpuFindings(g matrix.GPU, underCompat bool) ([]Check, error) {
	var out []Check
	add := func(name string, st Status, format string, args ...any) {
		out = append(out, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
	if _, ok := c.db.Arch(g.Arch); !ok {
		return nil, fmt.Errorf("GPU %s has architecture %s, which the matrix does not know", g.Name, g.Arch)
	}
	if c.r.Found.CUDA != "" {
		if err := c.db.CUDATargets(matrix.MustVersion(mm(c.r.Found.CUDA)), g); err != nil {
			add("gpu/cuda", matrix.Fail, "%v", err)
		}
	}
	_, native, jit, missing := imageCoverage(g.Arch, c.r.Found.Kernels)
	libs := c.r.Found.Kernels
	switch {
	case len(libs) == 0 && len(c.r.Found.Unreadable) > 0:
		add("gpu", matrix.Warn, "the device code of %d libraries could not be read (see the device-code check), so the image cannot be checked against %s", len(c.r.Found.Unreadable), g.Arch)
	case len(libs) == 0:
		add("gpu", matrix.Warn, "no CUDA device code found in the image to check against %s", g.Arch)
	case len(missing) > 0:
		add("gpu", matrix.Fail, "%d libraries have no kernels for %s (%s): %s", len(missing), g.Name, g.Arch, strings.Join(missing, "; "))
	case len(jit) > 0 && !matrix.ViaPTX.Runs(underCompat):
		add("gpu", matrix.Fail, "%d libraries have only PTX for %s (%s), and the driver runs this image only under minor-version compatibility, which cannot JIT-compile PTX: %s", len(jit), g.Name, g.Arch, strings.Join(jit, ", "))
	case len(jit) > 0:
		add("gpu", matrix.Warn, "%d libraries run on %s (%s) only by JIT-compiling PTX (slow first start; impossible under minor-version compatibility): %s", len(jit), g.Name, g.Arch, strings.Join(jit, ", "))
	default:
		add("gpu", matrix.Pass, "all %d libraries with device code have native kernels for %s (%s)", len(native), g.Name, g.Arch)
	}
	return out, nil
}

// driverLibs fails an image that ships the NVIDIA driver's own libraries.
// They belong to the host: the NVIDIA container toolkit mounts the host
// driver's libcuda and libnvidia-ml into the container, and copies of
// another driver version in the image can win the linker's lookup (after
// the toolkit's ldconfig a newer copy in the image takes the soname
// link), so the container fails with "Driver/library version mismatch"
// on every host whose driver differs (NVIDIA/libnvidia-container#266).
// CUDA's forward-compatibility libraries (/usr/local/cuda-X/compat) and
// the link stubs are meant to be there and are not counted.
func (c *checker) driverLibs() {
	libs := c.r.Found.DriverLibs
	if len(libs) == 0 {
		return
	}
	var names []string
	versions := map[string]bool{}
	for _, l := range libs {
		names = append(names, path2(l.Path))
		versions[l.Version] = true
	}
	vs := make([]string, 0, len(versions))
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	c.add("driver-libs", matrix.Fail, "the image ships NVIDIA driver %s libraries (%s): the host's driver must provide them, and these can shadow it (\"Driver/library version mismatch\" on any other driver); remove the driver packages from the image (for newer CUDA on an older driver use cuda-compat in /usr/local/cuda/compat)", strings.Join(vs, ", "), truncate(strings.Join(names, ", "), 300))
}

// duplicates reports CUDA libraries present both from the OS and from pip.
func (c *checker) duplicates() {
	type pair struct{ sys, pip int64 }
	fam := map[string]*pair{}
	for _, l := range c.r.Found.Libraries {
		p := fam[l.Family]
		if p == nil {
			p = &pair{}
			fam[l.Family] = p
		}
		if l.Pip {
			p.pip += l.Size
		} else {
			p.sys += l.Size
		}
	}
	var dups []string
	var wasted int64
	names := make([]string, 0, len(fam))
	for n := range fam {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := fam[n]
		if p.sys > 0 && p.pip > 0 {
			w := min(p.sys, p.pip)
			wasted += w
			dups = append(dups, fmt.Sprintf("%s (system %s, pip %s)", n, humanize.Bytes(p.sys), humanize.Bytes(p.pip)))
		}
	}
	switch {
	case len(dups) > 0:
		c.add("duplicate-libs", matrix.Warn, "CUDA libraries installed twice, about %s wasted: %s; a base image without them (the base flavor, when the frameworks bring them as pip wheels) avoids it", humanize.Bytes(wasted), strings.Join(dups, ", "))
	case len(fam) > 0:
		c.add("duplicate-libs", matrix.Pass, "no CUDA library is installed twice (0 B duplicated)")
	}
}

// fileSecrets describes the secrets found in layer entries. A file that
// a later layer deletes or replaces is still in its own layer, and
// anyone who pulls the image can read it there (docker save, then tar).
func fileSecrets(hits []secretHit, w *WalkResult, diffIDs []v1.Hash) []string {
	var out []string
	for _, h := range hits {
		msg := fmt.Sprintf("%s in /%s (%s)", joinMatches(h.matches), h.path, layerName(h.layer, diffIDs))
		if !w.Visible(h.layer, h.path) {
			msg += ": a later layer deletes or replaces it, which does not remove it from this layer; everyone who pulls the image gets it"
		}
		out = append(out, msg)
	}
	return out
}

// layerName names layer i by index and short diff ID.
func layerName(i int, diffIDs []v1.Hash) string {
	if i < len(diffIDs) {
		return fmt.Sprintf("layer %d, %s", i, shortDigest(diffIDs[i].String()))
	}
	return fmt.Sprintf("layer %d", i)
}

func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return algo + ":" + hex[:12]
}

// unreadable warns about libraries whose device code could not be read:
// what they hold is unknown, which is not the same as nothing.
func (c *checker) unreadable(diffIDs []v1.Hash) {
	var msgs []string
	for _, u := range c.r.Found.Unreadable {
		read := "nothing before the damage"
		if !u.Kernels.Empty() {
			read = "read before the damage: " + strings.Join(append(append([]string(nil), u.Kernels.SASS...), ptxNames(u.Kernels.PTX)...), " ")
		}
		msgs = append(msgs, fmt.Sprintf("%s (%s): %s; %s", path2(u.Path), layerName(u.Layer, diffIDs), u.Error, read))
	}
	if len(msgs) > 0 {
		c.add("device-code", matrix.Warn, "the device code of %d libraries could not be read, so their GPU architectures are unknown: %s", len(msgs), strings.Join(msgs, "; "))
	}
}

func ptxNames(archs []string) []string {
	out := make([]string, len(archs))
	for i, a := range archs {
		out[i] = a + " (PTX)"
	}
	return out
}

func path2(p string) string { return "/" + p }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func largestSize(ls []LayerStats) int64 {
	if len(ls) == 0 {
		return 0
	}
	return ls[0].Size
}

// maxUnsafeShown is how many unsafe entries the message names; it then
// counts the rest.
const maxUnsafeShown = 20

// unsafeList names the unsafe entries, each with how it escapes.
func unsafeList(us []Unsafe) string {
	var names []string
	for i, u := range us {
		if i == maxUnsafeShown {
			names = append(names, fmt.Sprintf("and %d more", len(us)-i))
			break
		}
		s := fmt.Sprintf("%q (layer %d)", truncate(u.Name, 200), u.Layer)
		if u.Reason != "" {
			s += ": " + u.Reason
		}
		names = append(names, s)
	}
	return strings.Join(names, ", ")
}

// knownLayerTypes are the layer media types containerd unpacks (its
// images.DiffCompression and the OCI image-spec's layer types, the
// non-distributable ones included).
var knownLayerTypes = map[types.MediaType]bool{
	types.DockerLayer: true, types.DockerForeignLayer: true, types.DockerUncompressedLayer: true,
	types.OCILayer: true, types.OCILayerZStd: true, types.OCIUncompressedLayer: true,
	types.OCIRestrictedLayer: true, types.OCIUncompressedRestrictedLayer: true,
	"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd": true,
}

// layerMediaTypes fails the image when a layer's media type is none that
// containerd unpacks (text/html from a misconfigured proxy, a typo): its
// content is not a layer, whatever the walk made of the bytes.
func (c *checker) layerMediaTypes(img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("list layers: %w", err)
	}
	var bad []string
	for i, l := range layers {
		mt, err := l.MediaType()
		if err != nil {
			return fmt.Errorf("layer %d media type: %w", i, err)
		}
		if !knownLayerTypes[mt] {
			bad = append(bad, fmt.Sprintf("layer %d is %q", i, truncate(string(mt), 100)))
		}
	}
	if len(bad) > 0 {
		c.add("layer-media-types", matrix.Fail, "%s, which containerd and docker cannot unpack (a layer is application/vnd.oci.image.layer.v1.tar[+gzip|+zstd] or application/vnd.docker.image.rootfs.diff.tar.gzip); rebuild or push the image again", strings.Join(bad, "; "))
	}
	return nil
}

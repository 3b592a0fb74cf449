package gpuprobe

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

//go:embed probe.py
var probePy []byte

// NoGPU is the verdict of a probe that found no usable NVIDIA driver or GPU.
const NoGPU Status = "no-gpu"

// Result is what `gpuimg probe` prints: the driver and GPUs from
// NVML, what the Python frameworks see, benchmark figures, and checks.
type Result struct {
	Driver  *DriverInfo `json:"driver,omitempty"`
	GPUs    []GPUInfo   `json:"gpus"`
	NoGPU   string      `json:"no_gpu,omitempty"` // why, when there is no driver or GPU
	Python  *PyProbe    `json:"python,omitempty"`
	Checks  []Check     `json:"checks"`
	Verdict Status      `json:"verdict"` // pass, fail or no-gpu
	Created time.Time   `json:"created"`
	// ProbeVersion is the probe that measured the figures (ProbeVersion).
	ProbeVersion string `json:"probe_version,omitempty"`
	// Acceptance is the verdict against a baseline or the references
	// (--baseline, --reference, gpuimg probe judge).
	Acceptance *Acceptance `json:"acceptance,omitempty"`
}

// PyProbe is probe.py's output: its last snapshot.
type PyProbe struct {
	Python     string                     `json:"python"`
	Frameworks map[string]json.RawMessage `json:"frameworks"`
	Checks     []Check                    `json:"checks"`
	Bench      map[string]float64         `json:"bench"`
	// Conditions says how each figure was measured, by the figure's key:
	// the ResNet-50 batch and precision, the GEMM size; figures measured
	// under other conditions are not comparable.
	Conditions map[string]BenchConditions `json:"conditions,omitempty"`
	// Spread is each figure's repeated runs: a run far below the median
	// is the signature of a noisy neighbour.
	Spread map[string]BenchSpread `json:"spread,omitempty"`
	// Env holds the variables that change what the figures mean (TF32
	// overrides, CUDA_VISIBLE_DEVICES), as the probe found them.
	Env map[string]string `json:"env,omitempty"`
	// Host is what the probe saw of the CPUs: those it may run on, and the
	// container's cgroup CPU quota in CPUs (nil: none).
	Host *PyHost `json:"host,omitempty"`
	// Device is the GPU torch ran on (cuda:0), nil without torch or GPU.
	Device *TorchDevice `json:"device,omitempty"`
	// Step is the step the snapshot follows; Complete is false when the
	// probe hung or died after it.
	Step     string `json:"step,omitempty"`
	Complete bool   `json:"complete"`
}

// BenchConditions are how one benchmark figure was measured; fields that
// do not apply are zero.
type BenchConditions struct {
	Batch          int    `json:"batch,omitempty"`
	ImageSize      int    `json:"image_size,omitempty"`
	Precision      string `json:"precision,omitempty"` // "bf16 autocast"
	MemoryFormat   string `json:"memory_format,omitempty"`
	CUDNNBenchmark bool   `json:"cudnn_benchmark,omitempty"`
	Mode           string `json:"mode,omitempty"` // eager
	Optimizer      string `json:"optimizer,omitempty"`
	N              int    `json:"n,omitempty"` // GEMM size
	DType          string `json:"dtype,omitempty"`
	TF32           string `json:"tf32,omitempty"`
	GPUs           int    `json:"gpus,omitempty"` // all-reduce
	MessageBytes   int64  `json:"message_bytes,omitempty"`
}

// PyHost is the CPUs a probe saw.
type PyHost struct {
	CPUsSeen int      `json:"cpus_seen"`
	CPUQuota *float64 `json:"cpu_quota"`
}

// BenchSpread is one figure's repeated measurements.
type BenchSpread struct {
	Runs []float64 `json:"runs"`
	// SpreadPct is (max - min) / median, in percent.
	SpreadPct float64 `json:"spread_pct"`
}

// TorchDevice is the GPU torch ran its checks and benchmarks on.
type TorchDevice struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// UUID is CUDA's ("ffc79498-8ff3-…", NVML prints it with a GPU-
	// prefix); empty with torch older than 2.4, which does not expose it.
	UUID        string `json:"uuid,omitempty"`
	TotalMemory uint64 `json:"total_memory,omitempty"`
}

// Options tune Probe.
type Options struct {
	// Bench runs the benchmarks.
	Bench bool
	// Python is the interpreter; default python3 on PATH (none: skipped).
	Python string
	// Budget bounds the Python probe (default 2 min, 12 min with Bench).
	Budget time.Duration
	// DB and MinEfficiency judge the benchmarks against the GPU's peaks.
	DB            *matrix.DB
	MinEfficiency map[string]float64
	// RequireCUDA is the image's NVIDIA_REQUIRE_CUDA, checked against the
	// driver; RequireEnv, when set, replaces it: what the NVIDIA
	// container runtime reads of the environment (matrix.RuntimeEnviron:
	// NVIDIA_REQUIRE_*, CUDA_VERSION for the toolkit's legacy rule,
	// NVIDIA_DISABLE_REQUIRE). gpuimg probe passes its environment's,
	// which inside a container is the image's.
	RequireCUDA string
	RequireEnv  map[string]string
	// Sample polls NVML while the benchmarks run (gpuimg probe sets it).
	Sample bool
	// Progress, when set, is told each step the Python probe finishes
	// (torch/cuda, bench/gemm, …) as it finishes, and how long it has run.
	Progress func(step string, elapsed time.Duration)
	// Host, when set, adds the host checks (HostChecks: /dev/shm, CPU
	// steal, SMT siblings, the data directory's reads, host memory, slice
	// memory); gpuimg probe sets it. Nil: none.
	Host *HostOptions
}

// Probe checks this machine's GPUs and Python frameworks.
func Probe(ctx context.Context, opt Options) *Result {
	res := &Result{Created: time.Now().UTC(), GPUs: []GPUInfo{}, ProbeVersion: ProbeVersion}
	add := func(name string, st Status, format string, args ...any) {
		res.Checks = append(res.Checks, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
	drv, gpus, err := ProbeGPUs()
	res.Driver, res.GPUs = drv, append(res.GPUs, gpus...)
	if err != nil {
		res.NoGPU = err.Error()
		add("nvidia-driver", matrix.Fail, "%s", err.Error())
	} else {
		checkGPUs(drv, gpus, add)
		env := opt.RequireEnv
		if env == nil && opt.RequireCUDA != "" {
			env = map[string]string{"NVIDIA_REQUIRE_CUDA": opt.RequireCUDA}
		}
		checkRequire(opt.DB, env, drv, gpus, add)
	}
	if opt.Host != nil {
		res.Checks = append(res.Checks, HostChecks(ctx, *opt.Host, res.GPUs)...)
	}
	// Without a GPU the Python probe still runs: a CPU-only torch, or one
	// that does not import, is a finding on any machine.
	// NVML is polled while the benchmarks run: throttling and a link
	// that never trains up show under load, not when probed idle.
	var sampler *Sampler
	if opt.Bench && res.NoGPU == "" && opt.Sample {
		sampler = StartSampler(500 * time.Millisecond)
	}
	res.Python = runPyProbe(ctx, opt, res.NoGPU != "", add)
	if samples := sampler.Stop(); samples != nil {
		for i := range res.GPUs {
			res.GPUs[i].DuringBench = samples[res.GPUs[i].Index]
		}
		for _, g := range res.GPUs {
			checkDuringBench(g, add)
		}
	}
	if res.Python != nil {
		res.Checks = append(res.Checks, res.Python.Checks...)
		if opt.Bench {
			judgePyBench(opt, gpus, res.Python, add)
		}
	}
	res.Verdict = matrix.Verdict(res.Checks)
	if res.NoGPU != "" {
		res.Verdict = NoGPU
	}
	return res
}

// judgePyBench judges the Python probe's benchmark figures against the GPU
// that produced them.
func judgePyBench(opt Options, gpus []GPUInfo, pp *PyProbe, add func(string, Status, string, ...any)) {
	if len(pp.Bench) == 0 {
		return
	}
	if g, ok := benchGPU(gpus, pp, add); ok {
		judgeBench(opt, g, pp.Bench, pp.Env, add)
	}
	judgeNCCL(opt, gpus, pp, add)
}

// RuntimeRefused is the result of a container the NVIDIA container
// runtime refused to start: its stderr (nvidia-container-cli:
// "requirement error: unsatisfied condition: cuda>=12.8, please update
// your driver …") means the host's driver is older than the image's
// NVIDIA_REQUIRE_CUDA. ok is false when stderr says something else. The
// driver and GPUs come from this host's NVML (the engine runs here).
//
// libnvidia-container's dsl_evaluate (src/cli/dsl.c at 5823754b,
// L149-152, L159-170) says "invalid expression", or "unsatisfied
// condition: " and the requirement's first space-separated alternative
// (which has no space; for a cuda>= one, ", please update your driver …"
// follows), and configure.c prefixes "requirement error: "; docker
// appends ": unknown".
func RuntimeRefused(stderr string) (res *Result, ok bool) {
	_, why, found := strings.Cut(stderr, "requirement error: ")
	if !found {
		return nil, false
	}
	why, _, _ = strings.Cut(why, "\n")
	var msg string
	switch cond, ok := strings.CutPrefix(why, "unsatisfied condition: "); {
	case ok:
		if i := strings.IndexAny(cond, " \t"); i >= 0 {
			cond = cond[:i]
		}
		cond = strings.TrimSuffix(strings.TrimSuffix(cond, ","), ":")
		msg = "the NVIDIA container runtime refused to start the image: its requirement " + cond + " is not met"
	case strings.HasPrefix(why, "invalid expression"):
		msg = "the NVIDIA container runtime refused to start the image: it reached a term of the image's requirements (NVIDIA_REQUIRE_*, or cuda>= of CUDA_VERSION) that it cannot read (invalid expression); gpuimg validate IMAGE --driver VERSION names it"
	default:
		return nil, false
	}
	res = &Result{Created: time.Now().UTC(), GPUs: []GPUInfo{}, Verdict: matrix.Fail}
	if drv, gpus, err := ProbeGPUs(); err == nil {
		res.Driver, res.GPUs = drv, gpus
		msg += fmt.Sprintf(" by this host's driver %s (CUDA %s)", drv.Version, drv.CUDAVersion)
	}
	msg += "; update the driver, or use an image built for an older CUDA (gpuimg matrix resolve --driver VERSION)"
	res.Checks = []Check{{Name: "driver-floor", Status: matrix.Fail, Message: msg}}
	return res, true
}

// checkGPUs reports the GPUs NVML opened, and a failed check for each it
// could not: one lost or cgroup-blocked GPU must not hide the others.
func checkGPUs(drv *DriverInfo, gpus []GPUInfo, add func(string, Status, string, ...any)) {
	var names []string
	for _, g := range gpus {
		if g.Error != "" {
			add(fmt.Sprintf("nvidia-driver/gpu%d", g.Index), matrix.Fail, "GPU %d: %s", g.Index, g.Error)
			continue
		}
		names = append(names, g.Name+" ("+g.Arch+")")
	}
	for _, g := range gpus {
		if g.Error == "" {
			checkHealth(g, add)
		}
	}
	st := matrix.Pass
	if len(names) == 0 {
		st = matrix.Fail
	}
	count := strconv.Itoa(len(names))
	if len(names) < len(gpus) {
		count += " of " + strconv.Itoa(len(gpus))
	}
	add("nvidia-driver", st, "driver %s (CUDA %s), %s GPU(s): %s", drv.Version, drv.CUDAVersion, count, strings.Join(names, ", "))
}

// checkHealth judges what NVML says of one GPU's condition: a power limit
// below the default, uncorrected memory errors and row remapping, clocks
// held down by heat or hardware. Nothing NVML did not answer is judged.
func checkHealth(g GPUInfo, add func(string, Status, string, ...any)) {
	name := fmt.Sprintf("gpu%d/", g.Index)
	if h := g.Health; h.PowerLimitW > 0 && h.DefaultPowerLimitW > 0 {
		if h.PowerLimitW < 0.95*h.DefaultPowerLimitW {
			add(name+"power", matrix.Warn, "power limit %.0f W is below the default %.0f W: the card is capped and its figures fall short (nvidia-smi -q -d POWER)", h.PowerLimitW, h.DefaultPowerLimitW)
		} else {
			add(name+"power", matrix.Pass, "power limit %.0f W (default %.0f W)", h.PowerLimitW, h.DefaultPowerLimitW)
		}
	}
	h := g.Health
	switch {
	case h.UncorrectedECC != nil && *h.UncorrectedECC > 0:
		add(name+"memory", matrix.Fail, "%d uncorrected ECC memory errors since the driver loaded: the card's memory is failing (nvidia-smi -q -d ECC)", *h.UncorrectedECC)
	case h.RemapFailed:
		add(name+"memory", matrix.Fail, "a memory row remapping failed: the card needs service (nvidia-smi -q -d ROW_REMAPPER)")
	case h.RemapPending:
		add(name+"memory", matrix.Warn, "a memory row remapping is pending: it takes effect after a GPU reset")
	case h.ECC == "enabled":
		add(name+"memory", matrix.Pass, "ECC enabled, no uncorrected errors, no row remapping pending")
	}
	var hot []string
	for _, e := range h.ClockEvents {
		if strings.Contains(e, "thermal") || strings.HasPrefix(e, "hardware") {
			hot = append(hot, e)
		}
	}
	if len(hot) > 0 {
		add(name+"clocks", matrix.Warn, "clocks held down when probed: %s (SM %d of %d MHz)", strings.Join(hot, ", "), h.SMClockMHz, h.MaxSMClockMHz)
	}
	checkSharing(g, add)
	checkNVLink(g, add)
}

// checkSharing reports what shares the GPU: other processes, a vGPU, a
// MIG slice, a slot slower than the GPU.
func checkSharing(g GPUInfo, add func(string, Status, string, ...any)) {
	name := fmt.Sprintf("gpu%d/", g.Index)
	if g.Processes != nil && *g.Processes > 0 {
		add(name+"processes", matrix.Warn, "%d other compute process(es) on the GPU before the probe started: another tenant or job shares it, and its figures with it (nvidia-smi lists them on the host)", *g.Processes)
	}
	switch g.Virtualization {
	case "vgpu":
		add(name+"virtualization", matrix.Warn, "the GPU is a vGPU: a time-sliced share of a physical card, whose figures depend on the other guests (nvidia-smi vgpu on the host)")
	case "passthrough":
		add(name+"virtualization", matrix.Pass, "the whole GPU is passed through to this virtual machine")
	}
	if g.MIG == "enabled" {
		var slices []string
		for _, d := range g.MIGDevices {
			slices = append(slices, fmt.Sprintf("%s (%d SMs, %.1f GiB)", orNA(d.Name), d.SMs, float64(d.MemoryBytes)/(1<<30)))
		}
		add(name+"mig", matrix.Warn, "MIG is enabled: work runs on a slice of the card's %.1f GiB, not the whole GPU: %s", float64(g.MemoryBytes)/(1<<30), orNA(strings.Join(slices, ", ")))
	}
	if g.PCIeGPUMaxGen > g.PCIeMaxGen && g.PCIeMaxGen > 0 {
		add(name+"pcie", matrix.Warn, "the slot or system limits the link to PCIe gen%d x%d; the GPU itself can do gen%d", g.PCIeMaxGen, g.PCIeMaxWidth, g.PCIeGPUMaxGen)
	}
}

// checkDuringBench judges what NVML reported while the benchmarks ran:
// hardware slowdowns reject the card (cooling or power delivery is
// failing), a software thermal slowdown warns, a power cap or sync boost
// is normal at full load and only recorded; a link that never reached its
// maximum under load is degraded, whatever the copy benchmark says.
func checkDuringBench(g GPUInfo, add func(string, Status, string, ...any)) {
	b := g.DuringBench
	if b == nil || b.Samples == 0 || g.Error != "" {
		return
	}
	name := fmt.Sprintf("gpu%d/", g.Index)
	var hard, soft, normal []string
	for _, e := range slices.Sorted(maps.Keys(b.ClockEvents)) {
		s := fmt.Sprintf("%s in %d of %d samples", e, b.ClockEvents[e], b.Samples)
		switch {
		case strings.HasPrefix(e, "hardware"):
			hard = append(hard, s)
		case e == "software thermal slowdown":
			soft = append(soft, s)
		default:
			normal = append(normal, s)
		}
	}
	clocks := fmt.Sprintf("SM clock %d to %d MHz (max %d)", b.MinSMClockMHz, b.MaxSMClockMHz, g.MaxSMClockMHz)
	switch {
	case len(hard) > 0:
		add(name+"bench-clocks", matrix.Fail, "clocks held down during the benchmarks: %s; %s: the card's cooling or power delivery is failing", strings.Join(hard, ", "), clocks)
	case len(soft) > 0:
		add(name+"bench-clocks", matrix.Warn, "clocks held down during the benchmarks: %s; %s: the card runs hot", strings.Join(soft, ", "), clocks)
	case len(normal) > 0:
		add(name+"bench-clocks", matrix.Pass, "during the benchmarks: %s (normal at full load); %s", strings.Join(normal, ", "), clocks)
	default:
		add(name+"bench-clocks", matrix.Pass, "no clock event during the benchmarks; %s", clocks)
	}
	if g.PCIeMaxGen > 0 && !hostLinkIsC2C(g.Name) && (b.PCIeGen < g.PCIeMaxGen || b.PCIeWidth < g.PCIeMaxWidth) {
		add(name+"pcie", matrix.Fail, "the PCIe link never reached gen%d x%d under load (fastest seen gen%d x%d): the link is degraded (a riser, a slot or a card to reseat), whatever the copy benchmark says", g.PCIeMaxGen, g.PCIeMaxWidth, b.PCIeGen, b.PCIeWidth)
	}
}

// checkRequire judges the requirements of the image's environment env as
// the NVIDIA container runtime does (matrix.DB.JudgeRuntimeOn: its
// NVIDIA_REQUIRE_* and the toolkit's cuda>= of CUDA_VERSION), with what
// NVML says: the driver, the CUDA it reports and each GPU's compute
// capability. Nothing is said when env asks for nothing.
func checkRequire(db *matrix.DB, env map[string]string, drv *DriverInfo, gpus []GPUInfo, add func(string, Status, string, ...any)) {
	if reqs, disabled, err := matrix.RuntimeEnv(env); (len(reqs) == 0 && !disabled && err == nil) || drv.CUDAVersion == "" {
		return
	}
	d, err := matrix.ParseVersion(drv.Version)
	if err != nil {
		return
	}
	h := matrix.RuntimeHost{Driver: d}
	h.CUDA, _ = matrix.ParseVersion(drv.CUDAVersion)
	var hosts []matrix.RuntimeHost
	for _, g := range gpus {
		gh := h
		gh.Arch, gh.GPU = g.ComputeCapability, g.Name
		hosts = append(hosts, gh)
	}
	if len(hosts) == 0 {
		hosts = []matrix.RuntimeHost{h}
	}
	f := db.JudgeRuntimeOn("driver-floor", env, fmt.Sprintf("driver %s reports CUDA %s (NVML)", drv.Version, drv.CUDAVersion), hosts)
	add(f.Name, f.Status, "%s", f.Message)
}

// GPURow finds a GPU in the matrix's table by a name as NVML prints it
// ("NVIDIA H200", "NVIDIA A100-SXM4-80GB") or as a user writes it ("h200").
func GPURow(db *matrix.DB, name string) (matrix.GPU, bool) { return gpuRow(db, name) }

// SameGPU says whether two GPU names (an NVML name, a matrix name or
// alias) mean the same card: the same row of the matrix's table, or, for
// cards it does not know, the same name.
func SameGPU(db *matrix.DB, a, b string) bool {
	if strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b)) {
		return true
	}
	if db == nil {
		return false
	}
	ra, oka := gpuRow(db, a)
	rb, okb := gpuRow(db, b)
	return oka && okb && ra.Name == rb.Name
}

// gpuRow is matrix's one GPU-name rule (DB.LookupGPU), for NVML's names.
func gpuRow(db *matrix.DB, nvmlName string) (matrix.GPU, bool) {
	g, err := db.LookupGPU(nvmlName)
	return g, err == nil
}

// CheckStackDriver judges the driver a probe saw against the driver floor
// recorded in the image's dev.gpuimg.stack label (labels: the image's),
// which is finer than NVIDIA_REQUIRE_CUDA's CUDA version: CUDA 12.2 Update
// 2 needs driver 535.104.05, while a 535.54.03 driver already reports CUDA
// 12.2. It adds a driver-floor/stack check and updates the verdict; it
// does nothing without a driver or a label.
func CheckStackDriver(p *Result, labels map[string]string) {
	if p.Driver == nil || p.Driver.Version == "" {
		return
	}
	s, ok, err := matrix.StackFromLabels(labels)
	if !ok {
		return
	}
	var floors matrix.DriverFloors
	if err == nil {
		floors, err = s.DriverFloors()
	}
	if err != nil {
		// A label that is there but unreadable is worth saying: the
		// driver was not judged against the stack's floor.
		p.Checks = append(p.Checks, Check{Name: "driver-floor/stack", Status: matrix.Warn, Message: fmt.Sprintf("%v; the driver was not judged against the stack's floor", err)})
		return
	}
	d, err := matrix.ParseVersion(p.Driver.Version)
	if err != nil {
		return
	}
	floors.Detail += ", from the " + matrix.StackLabel + " label"
	c := floors.Judge("driver-floor/stack", d)
	p.Checks = append(p.Checks, c)
	if c.Status == matrix.Fail && p.Verdict == matrix.Pass {
		p.Verdict = matrix.Fail
	}
}

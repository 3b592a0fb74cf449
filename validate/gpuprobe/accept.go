package gpuprobe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

// ProbeVersion identifies what the probe measures and how: a digest of
// probe.py, which holds every benchmark. A baseline recorded by another
// probe measured with other code.
var ProbeVersion = func() string {
	sum := sha256.Sum256(probePy)
	return hex.EncodeToString(sum[:6])
}()

// BaselineKind is the kind field of a baseline file.
const BaselineKind = "gpuimg-probe-baseline"

// DefaultMaxLoss is how far a figure may fall below its baseline or
// reference before the instance is rejected: 5%, the loss a virtualization
// layer is commonly allowed.
const DefaultMaxLoss = 0.05

// Baseline is a trusted machine's benchmark figures and the hardware and
// software they were measured with (gpuimg probe --bench --save-baseline).
type Baseline struct {
	Kind         string    `json:"kind"`
	ProbeVersion string    `json:"probe_version"`
	Created      time.Time `json:"created"`
	GPU          string    `json:"gpu"`
	Arch         string    `json:"arch,omitempty"`
	Driver       string    `json:"driver"`
	CUDA         string    `json:"cuda"` // the newest CUDA the driver supports
	Python       string    `json:"python,omitempty"`
	// Frameworks are the versions the figures were measured with:
	// torch, torch.cuda, torch.cudnn, tensorflow, jax.
	Frameworks map[string]string          `json:"frameworks"`
	Bench      map[string]float64         `json:"bench"`
	Spread     map[string]BenchSpread     `json:"spread,omitempty"`
	Conditions map[string]BenchConditions `json:"conditions,omitempty"`
}

// NewBaseline makes a baseline of a probe result. Only a passing result
// with benchmark figures from a GPU the probe identified makes one.
func NewBaseline(res *Result) (*Baseline, error) {
	switch {
	case res.Verdict == NoGPU:
		return nil, errors.New("save baseline: the probe found no GPU")
	case res.Python == nil || len(res.Python.Bench) == 0:
		return nil, errors.New("save baseline: the result has no benchmark figures (run the probe with --bench)")
	case res.Verdict != matrix.Pass:
		return nil, fmt.Errorf("save baseline: the probe failed (%s): a baseline must come from a passing run on a machine you trust", strings.Join(failedChecks(res.Checks), ", "))
	}
	g, ok := benchGPU(res.GPUs, res.Python, func(string, Status, string, ...any) {})
	if !ok {
		return nil, errors.New("save baseline: the GPU torch benchmarked is none NVML lists, so the baseline could not name its GPU")
	}
	b := &Baseline{Kind: BaselineKind, ProbeVersion: orNA(res.ProbeVersion), Created: res.Created, GPU: g.Name, Arch: g.Arch,
		Python: res.Python.Python, Frameworks: frameworkVersions(res.Python), Bench: maps.Clone(res.Python.Bench),
		Spread: maps.Clone(res.Python.Spread), Conditions: maps.Clone(res.Python.Conditions)}
	if res.Driver != nil {
		b.Driver, b.CUDA = res.Driver.Version, res.Driver.CUDAVersion
	}
	return b, nil
}

// ReadBaseline parses a baseline file's content.
func ReadBaseline(data []byte) (*Baseline, error) {
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil || b.Kind != BaselineKind {
		return nil, errors.New("not a gpuimg probe baseline (write one with gpuimg probe --bench --save-baseline FILE)")
	}
	if len(b.Bench) == 0 || b.GPU == "" {
		return nil, errors.New("the baseline has no GPU or no figures (write it again with gpuimg probe --bench --save-baseline FILE)")
	}
	return &b, nil
}

func failedChecks(cs []Check) []string {
	var out []string
	for _, c := range cs {
		if c.Status == matrix.Fail {
			out = append(out, c.Name)
		}
	}
	return out
}

// frameworkVersions flattens what probe.py found of each framework into
// torch, torch.cuda, torch.cudnn, …
func frameworkVersions(pp *PyProbe) map[string]string {
	out := map[string]string{}
	for name, raw := range pp.Frameworks {
		var info map[string]any
		if json.Unmarshal(raw, &info) != nil {
			continue
		}
		for _, k := range []string{"version", "cuda", "cudnn"} {
			v, ok := info[k]
			if !ok || v == nil {
				continue
			}
			key := name
			if k != "version" {
				key += "." + k
			}
			out[key] = fmt.Sprint(v)
		}
	}
	return out
}

// AcceptOptions say what a probe result is judged against.
type AcceptOptions struct {
	// Baseline, when set, is the trusted machine's figures.
	Baseline *Baseline
	// Reference judges against the matrix's published references (DB).
	Reference bool
	DB        *matrix.DB
	// MaxLoss is the largest allowed shortfall, a fraction (default 5%).
	MaxLoss float64
}

// Acceptance is the verdict on a new instance: each figure against its
// baseline or reference, and accept or reject.
type Acceptance struct {
	Against string            `json:"against"` // baseline, reference
	MaxLoss float64           `json:"max_loss"`
	Figures []FigureJudgement `json:"figures"`
	Verdict string            `json:"verdict"` // accept, reject
}

// FigureJudgement is one figure against what it was expected to reach.
type FigureJudgement struct {
	Figure   string  `json:"figure"`
	Value    float64 `json:"value"`
	Expected float64 `json:"expected"`
	// LossPct is how far the figure fell short, in percent; negative
	// when it is above.
	LossPct float64 `json:"loss_pct"`
	Status  Status  `json:"status"`
	// Basis is "baseline" or the reference's source id.
	Basis string `json:"basis"`
}

// Accept judges a probe result against a baseline or the published
// references, adds an accept/… check per figure and the Acceptance, and
// updates the verdict: any failed check, health and datasheet floors
// included, rejects the instance.
func Accept(res *Result, opt AcceptOptions) {
	if opt.MaxLoss == 0 {
		opt.MaxLoss = DefaultMaxLoss
	}
	acc := &Acceptance{MaxLoss: opt.MaxLoss, Figures: []FigureJudgement{}}
	res.Acceptance = acc
	add := func(name string, st Status, format string, args ...any) {
		res.Checks = append(res.Checks, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case res.Verdict == NoGPU:
		acc.Against = "none"
	case res.Python == nil || len(res.Python.Bench) == 0:
		acc.Against = "none"
		add("accept", matrix.Fail, "the result has no benchmark figures to judge (run the probe with --bench)")
	case opt.Baseline != nil:
		acc.Against = "baseline"
		judgeBaseline(res, opt, acc, add)
	case opt.Reference:
		acc.Against = "reference"
		judgeReference(res, opt, acc, add)
	}
	if res.Verdict != NoGPU {
		res.Verdict = matrix.Verdict(res.Checks)
	}
	acc.Verdict = "reject"
	if res.Verdict == matrix.Pass {
		acc.Verdict = "accept"
	}
}

// figureUnit is a figure's unit, from its key's suffix.
func figureUnit(key string) string {
	switch {
	case strings.HasSuffix(key, "_tflops"):
		return "TFLOP/s"
	case strings.HasSuffix(key, "_gbs"):
		return "GB/s"
	case strings.HasSuffix(key, "_images_per_s"):
		return "images/s"
	}
	return ""
}

// lossStatus judges a loss: above max fails, or only warns when the
// comparison is not like for like.
func lossStatus(loss, max float64, like bool) Status {
	switch {
	case loss <= max:
		return matrix.Pass
	case like:
		return matrix.Fail
	}
	return matrix.Warn
}

func lossText(got, want float64, unit, of string, maxLoss float64) (float64, string) {
	loss := (want - got) / want
	if loss >= 0 {
		return loss, fmt.Sprintf("%.1f %s against %s %.1f: %.1f%% short (allowed %.0f%%)", got, unit, of, want, 100*loss, 100*maxLoss)
	}
	return loss, fmt.Sprintf("%.1f %s against %s %.1f: %.1f%% above", got, unit, of, want, 100*-loss)
}

func judgeBaseline(res *Result, opt AcceptOptions, acc *Acceptance, add func(string, Status, string, ...any)) {
	b := opt.Baseline
	g, ok := benchGPU(res.GPUs, res.Python, func(string, Status, string, ...any) {})
	if !ok {
		add("accept/gpu", matrix.Fail, "the GPU that produced the figures is unknown (see bench/gpu), so they cannot be judged against the baseline for %s", b.GPU)
		return
	}
	if !SameGPU(opt.DB, g.Name, b.GPU) {
		add("accept/gpu", matrix.Fail, "the baseline is for %s, this result is from %s: judge it against a baseline recorded on the same model", b.GPU, g.Name)
		return
	}
	if g.MIG == "enabled" {
		add("accept/gpu", matrix.Fail, "MIG is enabled on %s: the figures are of a MIG slice, not the whole card the baseline measured", g.Name)
		return
	}
	diffs := softwareDiffs(b, res)
	like := len(diffs) == 0
	if !like {
		add("accept/software", matrix.Warn, "the baseline was measured with other software (%s): a figure that fell short is a warning, not a failure, and one within the allowed loss is not proof of a like-for-like pass", strings.Join(diffs, "; "))
	}
	for _, k := range slices.Sorted(maps.Keys(b.Bench)) {
		want := b.Bench[k]
		got, ok := res.Python.Bench[k]
		name := "accept/" + k
		if !ok {
			add(name, matrix.Warn, "%s was not measured in this run (the baseline has %.1f %s)", k, want, figureUnit(k))
			continue
		}
		if d := conditionDiff(b.Conditions[k], res.Python.Conditions[k]); d != "" {
			add(name, matrix.Warn, "%.1f %s measured under other conditions than the baseline's %.1f (%s): not judged", got, figureUnit(k), want, d)
			continue
		}
		loss, msg := lossText(got, want, figureUnit(k), "the baseline's", opt.MaxLoss)
		st := lossStatus(loss, opt.MaxLoss, like)
		add(name, st, "%s", msg)
		acc.Figures = append(acc.Figures, FigureJudgement{Figure: k, Value: got, Expected: want, LossPct: 100 * loss, Status: st, Basis: "baseline"})
	}
}

// softwareDiffs lists what differs between the baseline's software and
// the result's: driver, CUDA, framework versions, probe version.
func softwareDiffs(b *Baseline, res *Result) []string {
	var diffs []string
	diff := func(what, was, now string) {
		if was != now {
			diffs = append(diffs, fmt.Sprintf("%s %s, now %s", what, orNA(was), orNA(now)))
		}
	}
	if res.Driver != nil {
		diff("driver", b.Driver, res.Driver.Version)
		diff("CUDA", b.CUDA, res.Driver.CUDAVersion)
	}
	now := frameworkVersions(res.Python)
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(b.Frameworks, now))) {
		diff(k, b.Frameworks[k], now[k])
	}
	if res.ProbeVersion != "" {
		diff("probe", b.ProbeVersion, res.ProbeVersion)
	}
	return diffs
}

func mergeKeys(a, b map[string]string) map[string]string {
	m := maps.Clone(a)
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, b)
	return m
}

func orNA(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// conditionDiff says how two figures' conditions differ, "" when alike.
func conditionDiff(a, b BenchConditions) string {
	var d []string
	if a.Batch != b.Batch {
		d = append(d, fmt.Sprintf("batch %d, now %d", a.Batch, b.Batch))
	}
	if a.Precision != b.Precision {
		d = append(d, fmt.Sprintf("precision %q, now %q", a.Precision, b.Precision))
	}
	if a.N != b.N || a.DType != b.DType || a.MessageBytes != b.MessageBytes || a.GPUs != b.GPUs {
		d = append(d, "size or type")
	}
	return strings.Join(d, "; ")
}

// referencePrecision maps the probe's recorded precision to a reference's.
var referencePrecision = map[string]string{"bf16 autocast": "amp-bf16", "fp16 autocast": "amp-fp16"}

// ProbeSoftware is how a reference row names figures measured with this
// probe: only those are like for like with the probe's own.
const ProbeSoftware = "gpuimg probe"

func judgeReference(res *Result, opt AcceptOptions, acc *Acceptance, add func(string, Status, string, ...any)) {
	g, ok := benchGPU(res.GPUs, res.Python, func(string, Status, string, ...any) {})
	if !ok {
		add("accept/reference", matrix.Warn, "the GPU that produced the figures is unknown (see bench/gpu): not judged against a reference")
		return
	}
	row, ok := GPURow(opt.DB, g.Name)
	if !ok {
		add("accept/reference", matrix.Warn, "%s is not in the matrix's GPU table, so it has no reference figure: not judged (record a baseline on a trusted machine with --save-baseline)", g.Name)
		return
	}
	if g.MIG == "enabled" {
		add("accept/reference", matrix.Warn, "MIG is enabled on %s: the figures are of a slice, not judged against the whole card's references", g.Name)
		return
	}
	refs := opt.DB.ReferencesFor(row.Name)
	torch := frameworkVersions(res.Python)["torch"]
	judged := 0
	for _, fig := range slices.Sorted(maps.Keys(matrix.ReferenceFigures)) {
		key, peak, peakName := fig, 0.0, ""
		switch fig {
		case "gemm_bf16_share":
			key, peak, peakName = "gemm_bf16_tflops", row.BF16TFLOPS, "bf16"
		case "gemm_fp16_share":
			key, peak, peakName = "gemm_fp16_tflops", row.FP16TFLOPS, "fp16"
		case "memory_bandwidth_share":
			key, peak, peakName = "memory_bandwidth_gbs", row.MemoryBandwidthGBs, "memory bandwidth"
		case "nccl_allreduce_busbw_share":
			// The share of the links the GPUs have, active or not: what
			// a whole card reaches, as the reference measured it.
			key, peakName = ncclBusBW, "link"
			link, why := ncclLink(opt.DB, ncclGPUs(res.GPUs, res.Python.Conditions[ncclBusBW].GPUs, res.Python.Env), true)
			if _, measured := res.Python.Bench[key]; measured && why != "" {
				add("accept/"+fig, matrix.Warn, "the link NCCL ran on is not known, so the reference share cannot be applied: %s", why)
				continue
			}
			peak, peakName = link.gbs, link.what
		}
		got, measured := res.Python.Bench[key]
		cond := res.Python.Conditions[key]
		r, ok := pickReference(refs, fig, cond)
		if !ok || !measured {
			continue
		}
		want, of := r.Value, fmt.Sprintf("the reference (%s, %s", r.Precision, r.Software)
		if peakName != "" {
			if peak == 0 {
				add("accept/"+fig, matrix.Warn, "%s has no %s peak in the matrix, so its reference share %.1f%% cannot be applied", row.Name, peakName, 100*r.Value)
				continue
			}
			want = r.Value * peak
			of = fmt.Sprintf("the reference %.1f%% of %.1f (%s, %s", 100*r.Value, peak, r.Precision, r.Software)
			if key == ncclBusBW {
				of = fmt.Sprintf("the reference %.1f%% of %.1f, %s (%s, %s", 100*r.Value, peak, peakName, r.Precision, r.Software)
			}
		}
		if r.Batch != 0 {
			of += fmt.Sprintf(", batch %d", r.Batch)
		}
		if r.Torch != "" {
			of += ", torch " + r.Torch
		}
		of += ", " + r.Source + ")"
		var unlike []string
		if !strings.HasPrefix(r.Software, ProbeSoftware) {
			unlike = append(unlike, "measured with other software")
		}
		if p := precisionOf(cond, key); p != r.Precision {
			unlike = append(unlike, fmt.Sprintf("precision %s, here %s", r.Precision, p))
		}
		if r.Batch != 0 && r.Batch != cond.Batch {
			unlike = append(unlike, fmt.Sprintf("batch %d, here %d", r.Batch, cond.Batch))
		}
		if r.Torch != "" && matrix.MajorMinor(r.Torch) != matrix.MajorMinor(torch) {
			unlike = append(unlike, fmt.Sprintf("torch %s, here %s", r.Torch, orNA(torch)))
		}
		loss, msg := lossText(got, want, figureUnit(key), of, opt.MaxLoss)
		st := lossStatus(loss, opt.MaxLoss, len(unlike) == 0)
		if len(unlike) > 0 {
			msg += "; not like for like (" + strings.Join(unlike, "; ") + "), so a shortfall is a warning"
		}
		add("accept/"+fig, st, "%s", msg)
		acc.Figures = append(acc.Figures, FigureJudgement{Figure: key, Value: got, Expected: want, LossPct: 100 * loss, Status: st, Basis: r.Source})
		judged++
	}
	if judged == 0 {
		add("accept/reference", matrix.Warn, "no published reference figure for %s matches a figure this run measured: not judged (record a baseline on a trusted machine with --save-baseline)", row.Name)
	}
}

// pickReference is the reference for a figure that matches the probe's
// conditions best: same precision and batch, then same precision, then
// the first.
func pickReference(refs []matrix.Reference, fig string, cond BenchConditions) (matrix.Reference, bool) {
	var cands []matrix.Reference
	for _, r := range refs {
		if r.Figure == fig {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return matrix.Reference{}, false
	}
	p := referencePrecision[cond.Precision]
	for _, r := range cands {
		if r.Precision == p && r.Batch == cond.Batch {
			return r, true
		}
	}
	for _, r := range cands {
		if strings.HasPrefix(r.Precision, "amp") == strings.HasPrefix(p, "amp") {
			return r, true
		}
	}
	return cands[0], true
}

// precisionOf is the precision of a probe figure as a reference names it.
func precisionOf(cond BenchConditions, key string) string {
	if p, ok := referencePrecision[cond.Precision]; ok {
		return p
	}
	if cond.DType != "" {
		return map[string]string{"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[cond.DType]
	}
	if dtype, ok := strings.CutPrefix(key, "gemm_"); ok {
		return strings.TrimSuffix(dtype, "_tflops")
	}
	return cond.Precision
}

// Rejudge judges a recorded result again with this gpuimg's rules, as
// Probe would have on the instance: NVML's health, sharing and what it saw
// during the benchmarks, the Python checks as recorded, and the figures
// against the datasheet floors (the defaults). The driver-floor checks
// (which needed the image's environment and labels) and probe/python
// (how the probe ran) are kept as recorded. A no-GPU result is left alone.
func Rejudge(res *Result, db *matrix.DB) {
	if res.Verdict == NoGPU || res.Driver == nil {
		return
	}
	var checks []Check
	add := func(name string, st Status, format string, args ...any) {
		checks = append(checks, Check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
	checkGPUs(res.Driver, res.GPUs, add)
	for _, g := range res.GPUs {
		checkDuringBench(g, add)
	}
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, "driver-floor") || c.Name == "probe/python" {
			checks = append(checks, c)
		}
	}
	if res.Python != nil {
		checks = append(checks, res.Python.Checks...)
		judgePyBench(Options{DB: db, Bench: true}, res.GPUs, res.Python, add)
	}
	res.Checks, res.Verdict = checks, matrix.Verdict(checks)
}

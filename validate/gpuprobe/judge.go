package gpuprobe

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// DefaultMinEfficiency are the fractions of a GPU's datasheet peak each
// benchmark must reach. Dense GEMM rarely passes 80% of peak and memory
// copies 85%; these thresholds catch a broken or throttled card, a
// noisy neighbour or a wrong build, not a well-tuned one.
//
// Pinned host<->device copies (h2d, d2h) are judged against the PCIe link
// NVML reports as the most the GPU and its slot can do; a GPU in a slot
// with fewer lanes, or behind a shared switch, falls below.
//
// NCCL's all-reduce bus bandwidth (nccl_busbw) is judged against the link
// it ran on (judgeNCCL). Its 50% is gpuimg's own default, not a published
// share: below it only warns, unless --min-efficiency sets it.
var DefaultMinEfficiency = map[string]float64{"gemm_bf16": 0.5, "gemm_fp16": 0.5, "gemm_fp32": 0.5, "memory_bandwidth": 0.6, "h2d": 0.5, "d2h": 0.5, "nccl_busbw": 0.5}

// ArchMinEfficiency replace DefaultMinEfficiency on some architectures
// (--min-efficiency still wins). On sm_86 and sm_89 (A10, A40, L4, L40S,
// GeForce 30 and 40) the datasheet's fp32 figure counts the second FP32
// datapath, which also runs integer instructions, so a GEMM cannot fill
// it: about 20 of the A10's 31.2 TFLOP/s are reachable, and the L4 is
// capped at 72 W, below the clocks its peak assumes.
var ArchMinEfficiency = map[string]map[string]float64{
	"sm_86": {"gemm_fp32": 0.3},
	"sm_89": {"gemm_fp32": 0.3},
}

// MaxOverPeak is the most a figure may exceed its peak before it is
// called out: above it the figure measured something else (TF32 in an
// fp32 GEMM, a copy served from cache, a host link that is not PCIe).
const MaxOverPeak = 1.05

// tf32Overrides are the variables that let cuBLAS use TF32 for float32
// whatever the framework asked for (NGC images set the first).
var tf32Overrides = []string{"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "TORCH_ALLOW_TF32_CNMATMUL_OVERRIDE", "NVIDIA_TF32_OVERRIDE"}

// PCIePeakGBs is a PCIe link's usable bandwidth per direction in GB/s:
// the matrix's rate per lane for the generation (links.yaml: transfer
// rate times encoding efficiency) times the width; 0 when the matrix has
// no rate for the generation (gen 6) or db is nil.
func PCIePeakGBs(db *matrix.DB, gen, width int) float64 {
	if db == nil {
		return 0
	}
	lane, _ := db.PCIeLaneGBs(gen)
	return lane * float64(width)
}

// hostLinkIsC2C says whether the GPU reaches its host over NVLink-C2C
// (Grace Hopper, Grace Blackwell) rather than PCIe: its host copies are not
// bounded by the PCIe link NVML reports.
func hostLinkIsC2C(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "GH200") || strings.Contains(n, "GB200") || strings.Contains(n, "GB300")
}

// benchGPU is the GPU torch benchmarked, among NVML's: the one with the
// UUID of torch's cuda:0, which CUDA_VISIBLE_DEVICES may have renumbered.
// A torch that gives no UUID (older than 2.4) falls back to NVML's first
// usable GPU with a warning; a UUID NVML does not list, or a name that
// differs, leaves the figures unjudged.
func benchGPU(gpus []GPUInfo, pp *PyProbe, add func(string, Status, string, ...any)) (GPUInfo, bool) {
	var usable []GPUInfo
	for _, g := range gpus {
		if g.Error == "" {
			usable = append(usable, g)
		}
	}
	if len(usable) == 0 {
		return GPUInfo{}, false
	}
	dev := pp.Device
	if dev != nil && dev.UUID != "" {
		for _, g := range usable {
			if sameUUID(g.UUID, dev.UUID) {
				return g, true
			}
		}
		add("bench/gpu", matrix.Warn, "torch's cuda:0 (%s, UUID %s) is none of the GPUs NVML lists (a MIG instance has its own UUID): the figures are recorded but not judged", dev.Name, dev.UUID)
		return GPUInfo{}, false
	}
	g := usable[0]
	visible := ""
	if v, ok := pp.Env["CUDA_VISIBLE_DEVICES"]; ok {
		visible = " (CUDA_VISIBLE_DEVICES=" + v + ")"
	}
	if dev != nil && dev.Name != "" && !strings.EqualFold(strings.TrimSpace(dev.Name), strings.TrimSpace(g.Name)) {
		add("bench/gpu", matrix.Warn, "torch's cuda:0 is a %s, NVML's GPU %d a %s%s: the figures are recorded but not judged; a torch that reports its GPU's UUID (2.4 or newer) is matched exactly", dev.Name, g.Index, g.Name, visible)
		return GPUInfo{}, false
	}
	add("bench/gpu", matrix.Warn, "torch does not report cuda:0's UUID (torch older than 2.4): the figures are judged against NVML's GPU %d (%s), which is torch's cuda:0 only when CUDA_VISIBLE_DEVICES does not select another card%s", g.Index, g.Name, visible)
	return g, true
}

// sameUUID compares NVML's "GPU-ffc79498-…" with CUDA's "ffc79498-…".
func sameUUID(nvml, cuda string) bool {
	norm := func(s string) string {
		s = strings.ToLower(strings.TrimSpace(s))
		for _, p := range []string{"gpu-", "mig-"} {
			s = strings.TrimPrefix(s, p)
		}
		return s
	}
	return nvml != "" && norm(nvml) == norm(cuda)
}

// minEfficiency is the floor for each figure on g: the defaults, then g's
// architecture's, then the caller's.
func minEfficiency(arch string, user map[string]float64) map[string]float64 {
	floor := maps.Clone(DefaultMinEfficiency)
	maps.Copy(floor, ArchMinEfficiency[arch])
	maps.Copy(floor, user)
	return floor
}

// judgeBench compares benchmark figures with the GPU's datasheet peaks:
// below the floor fails, above MaxOverPeak warns that the figure measured
// something else. env is the probe's recorded environment.
func judgeBench(opt Options, g GPUInfo, bench map[string]float64, env map[string]string, add func(string, Status, string, ...any)) {
	if opt.DB == nil || len(bench) == 0 {
		return
	}
	floor := minEfficiency(g.Arch, opt.MinEfficiency)
	type benchPeak struct {
		key, figure, unit, of string
		peak                  float64
	}
	var peaks []benchPeak
	row, ok := gpuRow(opt.DB, g.Name)
	switch {
	case g.MIG == "enabled":
		// torch sees a MIG instance, a slice of the card: its figures
		// are a fraction of the whole card's peaks by design.
		add("bench/peak", matrix.Warn, "MIG is enabled on %s: the figures are of a MIG instance, not judged against the whole card's peaks", g.Name)
	case ok:
		peaks = append(peaks,
			benchPeak{"gemm_bf16", "gemm_bf16_tflops", "TFLOP/s", row.Name, row.BF16TFLOPS},
			benchPeak{"gemm_fp16", "gemm_fp16_tflops", "TFLOP/s", row.Name, row.FP16TFLOPS},
			benchPeak{"gemm_fp32", "gemm_fp32_tflops", "TFLOP/s", row.Name, row.FP32TFLOPS},
			benchPeak{"memory_bandwidth", "memory_bandwidth_gbs", "GB/s", row.Name, row.MemoryBandwidthGBs})
	default:
		add("bench/peak", matrix.Warn, "%s is not in the matrix's GPU table: its GEMM and memory figures are recorded but not judged (add it with --matrix-file)", g.Name)
	}
	if hostLinkIsC2C(g.Name) {
		for _, k := range []string{"h2d", "d2h"} {
			if got, ok := bench[k+"_gbs"]; ok {
				add("bench/"+k, matrix.Pass, "%.1f GB/s over NVLink-C2C: %s reaches its host without PCIe, so the figure is recorded, not judged against the PCIe link", got, g.Name)
			}
		}
	} else if link := PCIePeakGBs(opt.DB, g.PCIeMaxGen, g.PCIeMaxWidth); link > 0 {
		of := fmt.Sprintf("PCIe gen%d x%d", g.PCIeMaxGen, g.PCIeMaxWidth)
		peaks = append(peaks, benchPeak{"h2d", "h2d_gbs", "GB/s", of, link}, benchPeak{"d2h", "d2h_gbs", "GB/s", of, link})
	}
	for _, p := range peaks {
		got, ok := bench[p.figure]
		if !ok || p.peak == 0 {
			continue
		}
		eff := got / p.peak
		st := matrix.Pass
		why := ""
		switch {
		case eff < floor[p.key]:
			st = matrix.Fail
		case eff > MaxOverPeak:
			st = matrix.Warn
			why = "; above the peak, so it measured something else: " + overPeakReason(p.key, env)
		}
		thr := fmt.Sprintf("%.0f%%", 100*floor[p.key])
		if a, ok := ArchMinEfficiency[g.Arch][p.key]; ok && a == floor[p.key] {
			thr += " for " + g.Arch
		}
		add("bench/"+p.key, st, "%.1f %s = %.0f%% of %s's %.1f (threshold %s)%s", got, p.unit, 100*eff, p.of, p.peak, thr, why)
	}
}

// overPeakReason says what a figure above its peak most likely measured.
func overPeakReason(key string, env map[string]string) string {
	switch key {
	case "gemm_fp32":
		var set []string
		for _, k := range tf32Overrides {
			if v, ok := env[k]; ok {
				set = append(set, k+"="+v)
			}
		}
		slices.Sort(set)
		if len(set) > 0 {
			return "TF32 tensor cores, not float32 on the CUDA cores; " + strings.Join(set, ", ") + " lets cuBLAS use TF32 whatever torch asks (unset it)"
		}
		return "TF32 tensor cores, not float32 on the CUDA cores (a TF32 override, or a torch that ignores its TF32 setting)"
	case "memory_bandwidth":
		return "a copy served from cache or counted wrongly, not device memory"
	case "h2d", "d2h":
		return "the copy did not cross this PCIe link (NVLink-C2C, or a link NVML misreports)"
	}
	return "a figure above the datasheet peak"
}

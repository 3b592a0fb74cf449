package gpuprobe

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// ncclBusBW is the probe's NCCL all-reduce bus bandwidth figure.
const ncclBusBW = "nccl_allreduce_busbw_gbs"

// busLink is the link an all-reduce over several GPUs runs on, and its
// bandwidth in one direction: a ring all-reduce moves at the pace of its
// slowest GPU's link.
type busLink struct {
	kind string // nvlink, pcie
	gbs  float64
	what string // "NVLink 4.0, 18 active links x 25.0 GB/s"
}

// ncclLink is the link NCCL ran on between gpus, as NVML reports it: the
// active NVLinks when every GPU has some, else PCIe (the ring then
// crosses PCIe at least once). With have, a GPU's NVLinks count whether
// active or not: the link the GPU should have, for a reference measured
// on a whole card. why says what could not be judged, "" when the link
// is known.
func ncclLink(db *matrix.DB, gpus []GPUInfo, have bool) (l busLink, why string) {
	links := func(n *NVLinkInfo) int {
		if n == nil {
			return 0
		}
		if have {
			return n.Links
		}
		return n.Active
	}
	if len(gpus) == 0 {
		return l, "NVML lists no usable GPU"
	}
	nvlink := true
	for _, g := range gpus {
		nvlink = nvlink && links(g.NVLink) > 0
	}
	l.gbs = math.Inf(1)
	if nvlink {
		l.kind = "nvlink"
		for _, g := range gpus {
			n := g.NVLink
			// No active link to ask the version (have): Major is 0, and
			// the matrix's row for the architecture answers.
			row, ok := db.NVLink(n.Major(), g.Arch)
			if !ok {
				return l, fmt.Sprintf("the matrix has no per-link rate for NVLink %s on %s (%s), so the links are not judged (add a links: row with --matrix-file)", orNA(n.Version), g.Name, g.Arch)
			}
			version := n.Version
			if version == "" {
				version = fmt.Sprint(row.Version)
			}
			if bw := float64(links(n)) * row.GBsPerLink; bw < l.gbs {
				l.gbs = bw
				l.what = fmt.Sprintf("NVLink %s, %d links x %.1f GB/s", version, links(n), row.GBsPerLink)
				if !have {
					l.what = fmt.Sprintf("NVLink %s, %d active links x %.1f GB/s", version, links(n), row.GBsPerLink)
				}
				if n.Active < n.Links && !have {
					l.what += fmt.Sprintf(", GPU %d's, %d of its %d links being active", g.Index, n.Active, n.Links)
				}
			}
		}
		return l, ""
	}
	l.kind = "pcie"
	var down []string
	for _, g := range gpus {
		if hostLinkIsC2C(g.Name) {
			return l, g.Name + " reaches its peers over NVLink-C2C and NVLink, which NVML reported no active link of: not judged"
		}
		bw := PCIePeakGBs(db, g.PCIeMaxGen, g.PCIeMaxWidth)
		if bw == 0 {
			return l, fmt.Sprintf("the matrix has no PCIe rate for GPU %d's link (gen%d x%d), so it is not judged", g.Index, g.PCIeMaxGen, g.PCIeMaxWidth)
		}
		if bw < l.gbs {
			l.gbs, l.what = bw, fmt.Sprintf("PCIe gen%d x%d", g.PCIeMaxGen, g.PCIeMaxWidth)
		}
		if g.NVLink != nil && g.NVLink.Active == 0 {
			down = append(down, fmt.Sprint(g.Index))
		}
	}
	if len(down) > 0 {
		l.what += fmt.Sprintf(" (no NVLink active on GPU %s, so NCCL went over PCIe)", strings.Join(down, ", "))
	}
	return l, ""
}

// ncclGPUs are the GPUs the all-reduce ran on: torch's first n, which are
// NVML's first n usable ones (the probe sets CUDA_DEVICE_ORDER=PCI_BUS_ID)
// unless CUDA_VISIBLE_DEVICES picked others; then every usable GPU, so
// that the slowest link is not missed.
func ncclGPUs(gpus []GPUInfo, n int, env map[string]string) []GPUInfo {
	var usable []GPUInfo
	for _, g := range gpus {
		if g.Error == "" {
			usable = append(usable, g)
		}
	}
	if _, picked := env["CUDA_VISIBLE_DEVICES"]; !picked && n > 0 && n < len(usable) {
		return usable[:n]
	}
	return usable
}

// judgeNCCL judges NCCL's all-reduce bus bandwidth against the link it ran
// on (ncclLink). The floor is gpuimg's own default (no public source gives
// an achievable share for every link and GPU count), so a figure below it
// warns; a floor set with --min-efficiency nccl_busbw fails. One GPU has
// no link to judge.
func judgeNCCL(opt Options, gpus []GPUInfo, pp *PyProbe, add func(string, Status, string, ...any)) {
	const name = "bench/nccl_busbw"
	got, measured := pp.Bench[ncclBusBW]
	if !measured {
		if len(ncclGPUs(gpus, 0, nil)) == 1 {
			add(name, matrix.Pass, "not judged (1 GPU): an all-reduce over one rank crosses no link")
		}
		return
	}
	if opt.DB == nil {
		return
	}
	ran := ncclGPUs(gpus, pp.Conditions[ncclBusBW].GPUs, pp.Env)
	if len(ran) < 2 {
		add(name, matrix.Warn, "%.1f GB/s over %d GPUs, but NVML lists %d usable: not judged against a link", got, pp.Conditions[ncclBusBW].GPUs, len(ran))
		return
	}
	link, why := ncclLink(opt.DB, ran, false)
	if why != "" {
		add(name, matrix.Warn, "%.1f GB/s recorded; %s", got, why)
		return
	}
	floor, set := opt.MinEfficiency["nccl_busbw"]
	thr := fmt.Sprintf("%.0f%%", 100*floor)
	if !set {
		floor = DefaultMinEfficiency["nccl_busbw"]
		thr = fmt.Sprintf("%.0f%%, gpuimg's default: no public source gives an achievable share for every link, so falling below it warns", 100*floor)
	}
	eff := got / link.gbs
	st, note := matrix.Pass, ""
	switch {
	case eff < floor && set:
		st = matrix.Fail
	case eff < floor:
		st = matrix.Warn
	case eff > MaxOverPeak && link.kind == "pcie":
		st, note = matrix.Warn, "; above the PCIe link, so the traffic did not cross it (a link NVML misreports)"
	case eff > MaxOverPeak:
		note = "; above the links' rate: NCCL's NVLS algorithm reduces inside the NVSwitch, so fewer bytes cross the links than busbw counts"
	}
	add(name, st, "%.1f GB/s over %d GPUs = %.0f%% of %s: %.1f GB/s a direction (threshold %s)%s", got, len(ran), 100*eff, link.what, link.gbs, thr, note)
}

// checkNVLink reports a GPU's NVLinks as NVML sees them: some inactive
// fails (a degraded link slows every ring through this GPU); all
// inactive warns, since NCCL then goes over PCIe, which is a fault on an
// NVLink board but what a PCIe card without its NVLink bridge looks like.
func checkNVLink(g GPUInfo, add func(string, Status, string, ...any)) {
	n := g.NVLink
	if n == nil {
		return
	}
	name := fmt.Sprintf("gpu%d/nvlink", g.Index)
	speed := ""
	if n.SpeedMBps > 0 {
		speed = fmt.Sprintf(", %d MB/s each as NVML reports", n.SpeedMBps)
	}
	switch n.Active {
	case n.Links:
		add(name, matrix.Pass, "%d NVLink %s links active%s", n.Links, orNA(n.Version), speed)
	case 0:
		add(name, matrix.Warn, "none of its %d NVLinks is active: NCCL between GPUs goes over PCIe. On an NVLink board (SXM, NVSwitch) the links are down (nvidia-smi nvlink -s -i %d; on NVSwitch systems the fabric manager); a PCIe card may have no NVLink bridge", n.Links, g.Index)
	default:
		add(name, matrix.Fail, "%d of %d NVLink %s links active (%s inactive): a degraded NVLink (a GPU, bridge or baseboard to service, nvidia-smi nvlink -s -i %d); every all-reduce ring through this GPU runs at its remaining links' pace", n.Active, n.Links, orNA(n.Version), linkList(n.Inactive), g.Index)
	}
}

func linkList(links []int) string {
	s := make([]string, len(links))
	for i, l := range links {
		s[i] = fmt.Sprint(l)
	}
	if len(s) == 1 {
		return "link " + s[0]
	}
	return "links " + strings.Join(s, ", ")
}

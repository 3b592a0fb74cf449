package gpuprobe

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpuimg/gpuimg/matrix"
)

// h200x8 is the recorded H200 as one GPU of an 8-GPU HGX node
// (testdata/probe/README.md): GPU 0 copied to GPUs 1-7 with their own
// UUIDs, each with 18 active NVLink 4.0 links (NVML's common speed 26562
// MB/s), and the all-reduce bus bandwidth over the 8 at 256 MiB: 436.2
// GB/s, ml-engineering's 8x H200 figure at that size.
func h200x8(t *testing.T) *Result {
	t.Helper()
	r := h200(t)
	g0 := r.GPUs[0]
	r.GPUs = nil
	for i := range 8 {
		g := g0
		g.Index = i
		g.UUID = fmt.Sprintf("%s%d", g0.UUID[:len(g0.UUID)-1], i)
		g.NVLink = &NVLinkInfo{Links: 18, Active: 18, Version: "4.0", SpeedMBps: 26562}
		r.GPUs = append(r.GPUs, g)
	}
	r.GPUs[0].UUID = g0.UUID // torch's cuda:0
	r.Python.Bench[ncclBusBW] = 436.2
	r.Python.Bench["nccl_allreduce_algbw_gbs"] = 249.3
	r.Python.Conditions[ncclBusBW] = BenchConditions{GPUs: 8, MessageBytes: 256 << 20, DType: "float32"}
	return r
}

// linksDown leaves every GPU's NVLinks inactive, as NVML reports a node
// whose NVLink fabric is down (or PCIe cards without bridges): NCCL falls
// back to PCIe, where 40.1 GB/s lies in the 35-45 GB/s a cloud's
// published nccl-tests figures give for 8x H100 PCIe.
func linksDown(r *Result) {
	for i := range r.GPUs {
		n := &NVLinkInfo{Links: 18, SpeedMBps: 0}
		for l := range 18 {
			n.Inactive = append(n.Inactive, l)
		}
		r.GPUs[i].NVLink = n
	}
	r.Python.Bench[ncclBusBW] = 40.1
}

// oneLinkDown leaves link 5 of GPU 3 inactive: every ring through GPU 3
// runs at its 17 links' pace, 17/18 of the bus bandwidth.
func oneLinkDown(r *Result) {
	r.GPUs[3].NVLink = &NVLinkInfo{Links: 18, Active: 17, Inactive: []int{5}, Version: "4.0", SpeedMBps: 26562}
	r.Python.Bench[ncclBusBW] = 412.0
}

// TestNCCLBusBW judges the all-reduce bus bandwidth of the 8-GPU node
// derived from the recorded H200, and of nodes derived from it by one
// transformation each, against the link NVML reports, a baseline of the
// good node and the published reference; and the one-GPU H200 as recorded.
func TestNCCLBusBW(t *testing.T) {
	d := db(t)
	good := h200x8(t)
	rejudge(d, good)
	base, err := NewBaseline(good)
	must(t, err)
	for _, tt := range []struct {
		name      string
		one       bool // the recorded one-GPU H200
		transform func(*Result)
		opt       *AcceptOptions // nil: the datasheet and health checks only
		check     string
		status    Status
		want      string
		verdict   string
	}{
		{"8x H200 NVLink 4", false, func(*Result) {}, nil, "bench/nccl_busbw", matrix.Pass,
			"436.2 GB/s over 8 GPUs = 97% of NVLink 4.0, 18 active links x 25.0 GB/s: 450.0 GB/s a direction (threshold 50%, gpuimg's default", "accept"},
		{"8x H200 NVLink 4: links", false, func(*Result) {}, nil, "gpu7/nvlink", matrix.Pass, "18 NVLink 4.0 links active, 26562 MB/s each as NVML reports", "accept"},
		{"8x H200 NVLink 4: reference", false, func(*Result) {}, &AcceptOptions{Reference: true}, "accept/nccl_allreduce_busbw_share", matrix.Pass,
			"436.2 GB/s against the reference 96.9% of 450.0, NVLink 4.0, 18 links x 25.0 GB/s (fp32, torch.distributed all_reduce", "accept"},
		{"8x H200 NVLink 4: baseline", false, func(*Result) {}, &AcceptOptions{Baseline: base}, "accept/nccl_allreduce_busbw_gbs", matrix.Pass,
			"436.2 GB/s against the baseline's 436.2: 0.0% short", "accept"},
		// Every NVLink down: NCCL over PCIe, judged against PCIe.
		{"links down: over PCIe", false, linksDown, nil, "bench/nccl_busbw", matrix.Pass,
			"40.1 GB/s over 8 GPUs = 64% of PCIe gen5 x16 (no NVLink active on GPU 0, 1, 2, 3, 4, 5, 6, 7, so NCCL went over PCIe): 63.0 GB/s a direction", "accept"},
		{"links down: each GPU says so", false, linksDown, nil, "gpu4/nvlink", matrix.Warn,
			"none of its 18 NVLinks is active: NCCL between GPUs goes over PCIe", "accept"},
		{"links down: against the baseline", false, linksDown, &AcceptOptions{Baseline: base}, "accept/nccl_allreduce_busbw_gbs", matrix.Fail,
			"40.1 GB/s against the baseline's 436.2: 90.8% short (allowed 5%)", "reject"},
		{"links down: against the reference", false, linksDown, &AcceptOptions{Reference: true}, "accept/nccl_allreduce_busbw_share", matrix.Warn,
			"40.1 GB/s against the reference 96.9% of 450.0, NVLink 4, 18 links x 25.0 GB/s", "accept"},
		// One link of one GPU down: a degraded NVLink rejects the node.
		{"one link inactive", false, oneLinkDown, nil, "gpu3/nvlink", matrix.Fail,
			"17 of 18 NVLink 4.0 links active (link 5 inactive): a degraded NVLink", "reject"},
		{"one link inactive: busbw against the links left", false, oneLinkDown, nil, "bench/nccl_busbw", matrix.Pass,
			"412.0 GB/s over 8 GPUs = 97% of NVLink 4.0, 17 active links x 25.0 GB/s, GPU 3's, 17 of its 18 links being active: 425.0 GB/s a direction", "reject"},
		// Slow on good links: below gpuimg's default floor only warns.
		{"busbw 40% of the links", false, func(r *Result) { r.Python.Bench[ncclBusBW] = 180 }, nil, "bench/nccl_busbw", matrix.Warn,
			"180.0 GB/s over 8 GPUs = 40% of NVLink 4.0", "accept"},
		// Turing's NVLink 2.2 (TU102: two links) against its own row.
		{"Turing: two NVLink 2.2 links", false, func(r *Result) {
			for i := range r.GPUs {
				r.GPUs[i].Arch, r.GPUs[i].NVLink = "sm_75", &NVLinkInfo{Links: 2, Active: 2, Version: "2.2", SpeedMBps: 25781}
			}
			r.Python.Bench[ncclBusBW] = 40.0
		}, nil, "bench/nccl_busbw", matrix.Pass, "40.0 GB/s over 8 GPUs = 80% of NVLink 2.2, 2 active links x 25.0 GB/s: 50.0 GB/s a direction", "accept"},
		{"a generation the matrix has no rate for", false, func(r *Result) {
			for i := range r.GPUs {
				r.GPUs[i].Arch, r.GPUs[i].NVLink.Version = "sm_89", "4.0"
			}
		}, nil, "bench/nccl_busbw", matrix.Warn, "436.2 GB/s recorded; the matrix has no per-link rate for NVLink 4.0 on NVIDIA H200 (sm_89)", "accept"},
		{"2 of 8 GPUs measured", false, func(r *Result) {
			oneLinkDown(r)
			r.Python.Bench[ncclBusBW] = 440
			r.Python.Conditions[ncclBusBW] = BenchConditions{GPUs: 2, MessageBytes: 256 << 20, DType: "float32"}
		}, nil, "bench/nccl_busbw", matrix.Pass, "440.0 GB/s over 2 GPUs = 98% of NVLink 4.0, 18 active links", "reject"},
		{"1 GPU", true, func(*Result) {}, nil, "bench/nccl_busbw", matrix.Pass, "not judged (1 GPU): an all-reduce over one rank crosses no link", "accept"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := h200x8(t)
			if tt.one {
				res = h200(t)
			}
			tt.transform(res)
			rejudge(d, res)
			if tt.opt != nil {
				opt := *tt.opt
				opt.DB = d
				Accept(res, opt)
			} else {
				Accept(res, AcceptOptions{DB: d})
			}
			c := checkNamed(res.Checks, tt.check)
			if c == nil || c.Status != tt.status || !strings.Contains(c.Message, tt.want) {
				t.Errorf("%s = %+v, want %s %q; all: %+v", tt.check, c, tt.status, tt.want, res.Checks)
			}
			if res.Acceptance.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s: %+v", res.Acceptance.Verdict, tt.verdict, res.Checks)
			}
		})
	}
	// A floor given with --min-efficiency fails below it.
	res := h200x8(t)
	res.Python.Bench[ncclBusBW] = 180
	c := checkNamed(judged(Options{DB: d, Bench: true, MinEfficiency: map[string]float64{"nccl_busbw": 0.8}}, res), "bench/nccl_busbw")
	if c == nil || c.Status != matrix.Fail || !strings.Contains(c.Message, "40% of NVLink 4.0, 18 active links x 25.0 GB/s: 450.0 GB/s a direction (threshold 80%)") {
		t.Errorf("--min-efficiency nccl_busbw=0.8: %+v", c)
	}
}

// TestNVMLNVLinks reads NVLinks through the stand-in NVML of
// TestNVMLLostGPU: the link count from NVML_FI_DEV_NVLINK_LINK_COUNT (or,
// without nvmlDeviceGetFieldValues, the links whose state NVML answers),
// the inactive ones, the version enumeration and the common speed.
func TestNVMLNVLinks(t *testing.T) {
	l := fakeNVML([]GPUInfo{{Name: "NVIDIA H200", UUID: "GPU-a"}})
	var asked []uint32
	l.nvlinkState = func(h uintptr, link uint32, st *uint32) int32 {
		asked = append(asked, link)
		if link >= 18 {
			return 2 // INVALID_ARGUMENT: no such link
		}
		*st = map[bool]uint32{true: 1}[link != 5]
		return nvmlSuccess
	}
	l.nvlinkVersion = func(h uintptr, link uint32, v *uint32) int32 { *v = 6; return nvmlSuccess } // NVML_NVLINK_VERSION_4_0
	l.fieldValues = func(h uintptr, n int32, v *nvmlFieldValue) int32 {
		for i, f := range unsafe.Slice(v, n) {
			f.ValueType, f.Return = 1, nvmlSuccess
			val := map[uint32]uint32{nvmlFieldNVLinkLinkCount: 18, nvmlFieldNVLinkSpeedCommon: 26562}[f.FieldID]
			f.Value = [8]byte{byte(val), byte(val >> 8), byte(val >> 16), byte(val >> 24)}
			unsafe.Slice(v, n)[i] = f
		}
		return nvmlSuccess
	}
	n := l.devices(1)[0].NVLink
	if n == nil || n.Links != 18 || n.Active != 17 || fmt.Sprint(n.Inactive) != "[5]" || n.Version != "4.0" || n.SpeedMBps != 26562 || n.Major() != 4 || len(asked) != 18 {
		t.Fatalf("NVLink %+v, links asked %v", n, asked)
	}
	// Without field values: every index up to NVML_NVLINK_MAX_LINKS is
	// asked, and only those NVML answers for count.
	l.fieldValues, asked = nil, nil
	if n := l.devices(1)[0].NVLink; n == nil || n.Links != 18 || n.SpeedMBps != 0 || len(asked) != nvmlNVLinkMaxLinks {
		t.Errorf("NVLink without field values %+v, %d links asked", n, len(asked))
	}
	// A GPU without NVLink (NOT_SUPPORTED for every link) has none.
	l.nvlinkState = func(uintptr, uint32, *uint32) int32 { return 3 }
	if n := l.devices(1)[0].NVLink; n != nil {
		t.Errorf("a GPU without NVLink: %+v", n)
	}
}

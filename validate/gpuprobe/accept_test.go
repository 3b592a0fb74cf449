package gpuprobe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gpuimg/gpuimg/matrix"
)

// h200 reads the recorded H200 result (testdata/probe/README.md).
func h200(t *testing.T) *Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "probe", "h200.json"))
	must(t, err)
	var res Result
	must(t, json.Unmarshal(b, &res))
	return &res
}

func rejudge(d *matrix.DB, res *Result) { Rejudge(res, d) }

func checkNamed(cs []Check, name string) *Check {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// TestAcceptTransformations judges the recorded H200 and instances derived
// from it, each by one documented transformation, against a baseline of
// the recorded H200 or against the published references, and checks the
// verdict and the message of the check that tells.
func TestAcceptTransformations(t *testing.T) {
	d := db(t)
	base, err := NewBaseline(func() *Result { r := h200(t); rejudge(d, r); return r }())
	must(t, err)
	slower := func(f float64, keys ...string) func(*Result) {
		return func(r *Result) {
			for _, k := range keys {
				r.Python.Bench[k] *= f
			}
		}
	}
	// An overlay with a reference recorded with this probe: like for like.
	overlay := filepath.Join(t.TempDir(), "refs.yaml")
	must(t, os.WriteFile(overlay, []byte(`sources:
  - {id: our-fleet, url: https://example.org/fleet}
references:
  - {gpu: H200-SXM, figure: resnet50_images_per_s, value: 3000, precision: amp-bf16, batch: 256, software: "gpuimg probe (our fleet)", torch: 2.9.1, source: our-fleet}
`), 0o644))
	withFleet, err := matrix.Load(overlay)
	must(t, err)
	for _, tt := range []struct {
		name      string
		transform func(*Result)
		opt       AcceptOptions
		check     string
		status    Status
		want      string
		verdict   string
	}{
		{"as recorded", func(*Result) {}, AcceptOptions{Baseline: base}, "accept/gemm_bf16_tflops", matrix.Pass, "720.0 TFLOP/s against the baseline's 720.0: 0.0% short (allowed 5%)", "accept"},
		// 1. GEMM 7% slower: within the datasheet floor, rejected by the baseline.
		{"GEMM 7% slower", slower(0.93, "gemm_bf16_tflops", "gemm_fp16_tflops", "gemm_fp32_tflops"), AcceptOptions{Baseline: base},
			"accept/gemm_bf16_tflops", matrix.Fail, "669.6 TFLOP/s against the baseline's 720.0: 7.0% short (allowed 5%)", "reject"},
		{"GEMM 7% slower, --max-loss 10%", slower(0.93, "gemm_bf16_tflops"), AcceptOptions{Baseline: base, MaxLoss: 0.10},
			"accept/gemm_bf16_tflops", matrix.Pass, "7.0% short (allowed 10%)", "accept"},
		{"GEMM 4% slower", slower(0.96, "gemm_bf16_tflops"), AcceptOptions{Baseline: base}, "accept/gemm_bf16_tflops", matrix.Pass, "4.0% short (allowed 5%)", "accept"},
		// 2. A link that trains at gen3 x8 under load in a gen5 x16 slot:
		// called out even where the copies would pass.
		{"link at gen3 x8", func(r *Result) {
			r.GPUs[0].DuringBench.PCIeGen, r.GPUs[0].DuringBench.PCIeWidth = 3, 8
		}, AcceptOptions{Baseline: base}, "gpu0/pcie", matrix.Fail, "the PCIe link never reached gen5 x16 under load (fastest seen gen3 x8): the link is degraded", "reject"},
		{"link at gen3 x8, copies too", func(r *Result) {
			r.GPUs[0].DuringBench.PCIeGen, r.GPUs[0].DuringBench.PCIeWidth = 3, 8
			r.Python.Bench["h2d_gbs"], r.Python.Bench["d2h_gbs"] = 7.1, 7.2
		}, AcceptOptions{Baseline: base}, "accept/h2d_gbs", matrix.Fail, "7.1 GB/s against the baseline's 53.0: 86.6% short", "reject"},
		// 3. A hardware thermal slowdown while the benchmarks ran.
		{"thermal throttle", func(r *Result) {
			r.GPUs[0].DuringBench.ClockEvents = map[string]int{"hardware thermal slowdown": 12, "software power cap": 41}
			r.GPUs[0].DuringBench.MinSMClockMHz = 1095
		}, AcceptOptions{Baseline: base}, "gpu0/bench-clocks", matrix.Fail, "clocks held down during the benchmarks: hardware thermal slowdown in 12 of 300 samples; SM clock 1095 to 1980 MHz (max 1980)", "reject"},
		{"software thermal slowdown", func(r *Result) {
			r.GPUs[0].DuringBench.ClockEvents = map[string]int{"software thermal slowdown": 3}
		}, AcceptOptions{Baseline: base}, "gpu0/bench-clocks", matrix.Warn, "software thermal slowdown in 3 of 300 samples", "accept"},
		// 4. A MIG slice: torch runs on a 1g.18gb instance.
		{"MIG slice", func(r *Result) {
			r.GPUs[0].MIG = "enabled"
			r.GPUs[0].MIGDevices = []MIGDevice{{UUID: "MIG-0d2f0b9e-5a2c-5c43-9d6a-3c1e6f1f3b11", Name: "NVIDIA H200 MIG 1g.18gb", MemoryBytes: 18 << 30, SMs: 16}}
			r.Python.Device.UUID = "0d2f0b9e-5a2c-5c43-9d6a-3c1e6f1f3b11"
			for k := range r.Python.Bench {
				r.Python.Bench[k] /= 7
			}
		}, AcceptOptions{Baseline: base}, "gpu0/mig", matrix.Warn, "MIG is enabled: work runs on a slice of the card's 140.4 GiB, not the whole GPU: NVIDIA H200 MIG 1g.18gb (16 SMs, 18.0 GiB)", "reject"},
		// Other tenants' processes and other software than the baseline's.
		{"other processes", func(r *Result) { n := 2; r.GPUs[0].Processes = &n }, AcceptOptions{Baseline: base},
			"gpu0/processes", matrix.Warn, "2 other compute process(es) on the GPU", "accept"},
		{"other torch, GEMM 7% slower", func(r *Result) {
			r.Python.Frameworks["torch"] = json.RawMessage(`{"version": "2.10.0+cu130", "cuda": "13.0", "cudnn": 91300}`)
			slower(0.93, "gemm_bf16_tflops")(r)
		}, AcceptOptions{Baseline: base}, "accept/software", matrix.Warn, "torch 2.9.1+cu130, now 2.10.0+cu130", "accept"},
		{"other torch: the loss warns", func(r *Result) {
			r.Python.Frameworks["torch"] = json.RawMessage(`{"version": "2.10.0+cu130"}`)
			slower(0.93, "gemm_bf16_tflops")(r)
		}, AcceptOptions{Baseline: base}, "accept/gemm_bf16_tflops", matrix.Warn, "7.0% short (allowed 5%)", "accept"},
		{"other batch", func(r *Result) {
			c := r.Python.Conditions["resnet50_images_per_s"]
			c.Batch = 128
			r.Python.Conditions["resnet50_images_per_s"] = c
		}, AcceptOptions{Baseline: base}, "accept/resnet50_images_per_s", matrix.Warn, "measured under other conditions than the baseline's 2900.0 (batch 256, now 128): not judged", "accept"},
		{"baseline of another GPU", func(r *Result) {
			r.GPUs[0].Name, r.Python.Device.Name = "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"
		}, AcceptOptions{Baseline: base}, "accept/gpu", matrix.Fail, "the baseline is for NVIDIA H200, this result is from NVIDIA H100 80GB HBM3", "reject"},
		// The published references: measured with other software, so a
		// shortfall warns.
		{"reference", func(*Result) {}, AcceptOptions{Reference: true},
			"accept/gemm_bf16_share", matrix.Warn, "720.0 TFLOP/s against the reference 80.3% of 989.5 (bf16, torch matmul, mamf-finder.py (best shape 2048x2048x13312, measured on an H100 SXM), torch 2.7.0+cu126, ref-mamf-table) 794.6: 9.4% short (allowed 5%); not like for like (measured with other software; torch 2.7.0+cu126, here 2.9.1+cu130)", "accept"},
		{"no reference for the GPU", func(r *Result) {
			r.GPUs[0].Name, r.Python.Device.Name = "NVIDIA L4", "NVIDIA L4"
		}, AcceptOptions{Reference: true}, "accept/reference", matrix.Warn, "no published reference figure for L4 matches a figure this run measured: not judged", "accept"},
		{"a reference measured with this probe", slower(0.9, "resnet50_images_per_s"), AcceptOptions{Reference: true, DB: withFleet},
			"accept/resnet50_images_per_s", matrix.Fail, "2610.0 images/s against the reference (amp-bf16, gpuimg probe (our fleet), batch 256, torch 2.9.1, our-fleet) 3000.0: 13.0% short (allowed 5%)", "reject"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := h200(t)
			tt.transform(res)
			rejudge(d, res)
			opt := tt.opt
			if opt.DB == nil {
				opt.DB = d
			}
			Accept(res, opt)
			c := checkNamed(res.Checks, tt.check)
			if c == nil || c.Status != tt.status || !strings.Contains(c.Message, tt.want) {
				t.Errorf("%s = %+v, want %s %q; all: %+v", tt.check, c, tt.status, tt.want, res.Checks)
			}
			if res.Acceptance.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s: %+v", res.Acceptance.Verdict, tt.verdict, res.Checks)
			}
		})
	}
}

// TestBaselineRoundTrip: a baseline saved from a passing run reads back
// with its GPU, software and figures; a failed run or another file makes
// none.
func TestBaselineRoundTrip(t *testing.T) {
	d := db(t)
	res := h200(t)
	rejudge(d, res)
	b, err := NewBaseline(res)
	must(t, err)
	data, err := json.Marshal(b)
	must(t, err)
	got, err := ReadBaseline(data)
	must(t, err)
	if got.GPU != "NVIDIA H200" || got.Driver != "580.95.05" || got.CUDA != "13.0" || got.Frameworks["torch"] != "2.9.1+cu130" ||
		got.Frameworks["torch.cudnn"] != "91300" || got.ProbeVersion != "fixture" || got.Bench["gemm_bf16_tflops"] != 720 ||
		got.Conditions["resnet50_images_per_s"].Batch != 256 || len(got.Spread["gemm_bf16_tflops"].Runs) != 5 {
		t.Errorf("baseline %+v", got)
	}
	// Judged against itself, every figure passes at 0%.
	again := h200(t)
	rejudge(d, again)
	Accept(again, AcceptOptions{Baseline: got, DB: d})
	if again.Acceptance.Verdict != "accept" || len(again.Acceptance.Figures) != 7 || checkNamed(again.Checks, "accept/software") != nil {
		t.Errorf("against itself: %+v %+v", again.Acceptance, again.Checks)
	}
	failed := h200(t)
	failed.GPUs[0].DuringBench.ClockEvents = map[string]int{"hardware slowdown": 1}
	rejudge(d, failed)
	if _, err := NewBaseline(failed); err == nil || !strings.Contains(err.Error(), "gpu0/bench-clocks") {
		t.Errorf("baseline of a failed run: %v", err)
	}
	for _, bad := range []string{`{"kind": "gpu"}`, `not json`, `{"kind": "gpuimg-probe-baseline"}`} {
		if _, err := ReadBaseline([]byte(bad)); err == nil || !strings.Contains(err.Error(), "--save-baseline") {
			t.Errorf("ReadBaseline(%s) = %v", bad, err)
		}
	}
}

// TestNVMLSharingAndSampler reads the sharing fields and samples a GPU
// while "benchmarks" run, through the stand-in NVML of TestNVMLLostGPU
// (the symbols themselves are checked against the real library).
func TestNVMLSharingAndSampler(t *testing.T) {
	gpus := []GPUInfo{{Name: "NVIDIA H200", UUID: "GPU-a", MemoryBytes: 141 << 30, PCIeGen: 3, PCIeWidth: 8, PCIeMaxGen: 5, PCIeMaxWidth: 16}}
	l := fakeNVML(gpus)
	l.deviceMIG = func(h uintptr, cur, pend *uint32) int32 { *cur = 1; return nvmlSuccess }
	l.gpuMaxPCIeGen = func(h uintptr, v *uint32) int32 { *v = 5; return nvmlSuccess }
	l.virtMode = func(h uintptr, v *uint32) int32 { *v = 2; return nvmlSuccess }
	l.computeProcs = func(h uintptr, n *uint32, _ unsafe.Pointer) int32 { *n = 2; return nvmlErrorInsufficientSize }
	l.maxMIGCount = func(h uintptr, n *uint32) int32 { *n = 3; return nvmlSuccess }
	l.migByIndex = func(h uintptr, i uint32, m *uintptr) int32 {
		if i != 1 {
			return 6 // NOT_FOUND: no instance in this slot
		}
		*m = h // the stand-in answers for the parent
		return nvmlSuccess
	}
	l.attributes = func(h uintptr, a *nvmlAttributes) int32 {
		a.MultiprocessorCount, a.MemorySizeMB = 16, 18<<10
		return nvmlSuccess
	}
	got := l.devices(1)[0]
	if got.Virtualization != "vgpu" || got.Processes == nil || *got.Processes != 2 || got.PCIeGPUMaxGen != 5 || got.MIG != "enabled" ||
		len(got.MIGDevices) != 1 || got.MIGDevices[0].SMs != 16 || got.MIGDevices[0].MemoryBytes != 18<<30 || got.MIGDevices[0].UUID != "GPU-a" {
		t.Fatalf("sharing fields %+v", got)
	}
	var checks []Check
	checkSharing(got, func(name string, st Status, format string, args ...any) {
		checks = append(checks, Check{Name: name, Status: st, Message: sprintf(format, args...)})
	})
	for _, name := range []string{"gpu0/processes", "gpu0/virtualization", "gpu0/mig"} {
		if c := checkNamed(checks, name); c == nil || c.Status != matrix.Warn {
			t.Errorf("%s = %+v", name, c)
		}
	}
	// Sampling: the stand-in holds the link at gen3 x8 and reports a
	// hardware thermal slowdown in every sample.
	l.deviceCount = func(n *uint32) int32 { *n = 1; return nvmlSuccess }
	shut := 0
	l.shutdown = func() int32 { shut++; return nvmlSuccess }
	s := l.startSampler(5 * time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	samples := s.Stop()
	b := samples[0]
	if b == nil || b.Samples < 2 || b.ClockEvents["hardware thermal slowdown"] != b.Samples || b.PCIeGen != 3 || b.PCIeWidth != 8 || shut != 1 {
		t.Fatalf("samples %+v, shutdown %d", b, shut)
	}
	got.DuringBench = b
	checks = nil
	checkDuringBench(got, func(name string, st Status, format string, args ...any) {
		checks = append(checks, Check{Name: name, Status: st, Message: sprintf(format, args...)})
	})
	if c := checkNamed(checks, "gpu0/bench-clocks"); c == nil || c.Status != matrix.Fail {
		t.Errorf("bench-clocks %+v", c)
	}
	if c := checkNamed(checks, "gpu0/pcie"); c == nil || c.Status != matrix.Fail || !strings.Contains(c.Message, "fastest seen gen3 x8") {
		t.Errorf("pcie %+v", c)
	}
	if (*Sampler)(nil).Stop() != nil {
		t.Error("a nil sampler sampled")
	}
}

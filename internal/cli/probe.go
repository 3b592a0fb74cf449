package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/gpurun"
)

// ExitNoGPU is the exit status of a probe (or GPU validation) that found no
// NVIDIA driver or GPU: distinct from pass (0), failed checks (1) and could
// not run (2).
const ExitNoGPU = 3

func parseEfficiency(pairs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		f, err := strconv.ParseFloat(v, 64)
		if _, known := validate.DefaultMinEfficiency[k]; !ok || err != nil || f < 0 || f > 1 || !known {
			return nil, invalid(fmt.Errorf("--min-efficiency %q", p), "write KEY=FRACTION with KEY one of gemm_bf16, gemm_fp16, gemm_fp32, memory_bandwidth, h2d, d2h, e.g. gemm_bf16=0.7")
		}
		out[k] = f
	}
	return out, nil
}

func newProbeCmd() *cobra.Command {
	mo := &MatrixOptions{}
	var bench bool
	var python, output string
	var eff []string
	var budget time.Duration
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Check this machine's (or container's) NVIDIA driver, GPUs and frameworks",
		Long: `probe reads the driver and GPUs through NVML (libnvidia-ml.so.1, loaded at run
time without cgo, so the gpuimg binary can be mounted into any glibc image),
checks NVIDIA_REQUIRE_CUDA against the driver, and, when python3 and a
framework are present, whether torch sees the GPU, has kernels for it, and
computes a matmul and a cuDNN convolution that match the CPU (NCCL all-reduce
with two or more GPUs). --bench adds dense GEMM (bf16, fp16, fp32 without
TF32), device memory bandwidth, pinned host<->device copies and ResNet-50
training throughput, each judged against the GPU's datasheet peaks.

Exit status: 0 pass, 1 a check failed, 2 could not run, 3 no NVIDIA driver or GPU.`,
		Example: `  gpuimg probe
  gpuimg probe --bench -o json > probe.json
  docker run --rm --gpus all -v $(command -v gpuimg):/gpuimg:ro --entrypoint /gpuimg IMAGE probe -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "text", "json"); err != nil {
				return err
			}
			me, err := parseEfficiency(eff)
			if err != nil {
				return err
			}
			db, err := mo.Load()
			if err != nil {
				return err
			}
			if budget < 0 {
				return invalid(fmt.Errorf("--budget %s", budget), "give a positive duration such as 5m")
			}
			res := validate.Probe(cmd.Context(), validate.ProbeOptions{Bench: bench, Python: python, DB: db, MinEfficiency: me, Budget: budget,
				RequireCUDA: os.Getenv("NVIDIA_REQUIRE_CUDA"), Progress: gpurun.Progress(cmd.ErrOrStderr())})
			if err := renderProbe(cmd.OutOrStdout(), output, res); err != nil {
				return err
			}
			return probeExit(res.Verdict)
		},
	}
	mo.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&bench, "bench", false, "run the benchmarks (GEMM, memory bandwidth, host<->device, ResNet-50)")
	cmd.Flags().StringVar(&python, "python", "", "Python interpreter for the framework checks (default python3 on PATH)")
	cmd.Flags().DurationVar(&budget, "budget", 0, "time for the Python checks and benchmarks; benchmarks that would start after 80% of it are skipped with a warning (default 2m, 12m with --bench)")
	cmd.Flags().StringArrayVar(&eff, "min-efficiency", nil, "benchmark threshold as a fraction of the GPU's peak, e.g. gemm_bf16=0.7 (repeatable)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func probeExit(v validate.Status) error {
	switch v {
	case validate.NoGPU:
		return &Error{Err: errors.New("no NVIDIA driver or GPU (see the nvidia-driver check)"), Code: ExitNoGPU}
	case matrix.Fail:
		return &Error{Err: errors.New("a GPU check failed (see the failed checks)"), Code: ExitFailed}
	}
	return nil
}

func renderProbe(w io.Writer, output string, res *validate.ProbeResult) error {
	if output == "json" {
		return writeJSON(w, res)
	}
	if res.Driver != nil {
		fmt.Fprintf(w, "driver  %s (CUDA %s)\n", res.Driver.Version, res.Driver.CUDAVersion)
	}
	for _, g := range res.GPUs {
		fmt.Fprintf(w, "GPU %d   %s %s, %s, %s, MIG %s, PCIe gen %d x%d (up to gen %d x%d)\n", g.Index, g.Name, g.Arch, g.UUID, humanBytesU(g.MemoryBytes), g.MIG, g.PCIeGen, g.PCIeWidth, g.PCIeMaxGen, g.PCIeMaxWidth)
	}
	if res.Python != nil {
		fmt.Fprintf(w, "python  %s\n", res.Python.Python)
		keys := make([]string, 0, len(res.Python.Bench))
		for k := range res.Python.Bench {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "bench   %-22s %.1f\n", k, res.Python.Bench[k])
		}
	}
	t := newTable(w)
	for _, c := range res.Checks {
		t.row(strings.ToUpper(string(c.Status)), c.Name, c.Message)
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", res.Verdict)
	return err
}

func humanBytesU(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

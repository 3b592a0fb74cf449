package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
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
		if _, known := gpuprobe.DefaultMinEfficiency[k]; !ok || err != nil || f < 0 || f > 1 || !known {
			return nil, invalid(fmt.Errorf("--min-efficiency %q", p), "write KEY=FRACTION with KEY one of gemm_bf16, gemm_fp16, gemm_fp32, memory_bandwidth, h2d, d2h, nccl_busbw, e.g. gemm_bf16=0.7")
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
	ao := &acceptFlags{}
	ho := &hostFlags{}
	var saveBaseline string
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
training throughput, each judged against the GPU's datasheet peaks, each
repeated to report its spread, with NVML's throttle reasons sampled meanwhile.

As an acceptance test for a new instance: --save-baseline FILE records the
figures of a machine you trust with its GPU, driver, CUDA, framework and probe
versions; --baseline FILE judges every figure against it (--max-loss, default
5%), --reference against the published figures in the matrix. Software that
differs from the baseline's is a warning, never a pass. gpuimg probe judge
judges results collected elsewhere, without a GPU.

Exit status: 0 pass, 1 a check failed, 2 could not run, 3 no NVIDIA driver or GPU.`,
		Example: `  gpuimg probe
  gpuimg probe --bench -o json > probe.json
  gpuimg probe --bench --save-baseline h100-baseline.json      # on a trusted machine
  gpuimg probe --bench --baseline h100-baseline.json           # on each new instance
  gpuimg probe --bench --reference --max-loss 10%
  docker run --rm --gpus all -v $(command -v gpuimg):/gpuimg:ro --entrypoint /gpuimg IMAGE probe -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
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
			accept, err := ao.options(db)
			if err != nil {
				return err
			}
			judging := accept.Baseline != nil || accept.Reference
			if (judging || saveBaseline != "") && !bench {
				return invalid(errors.New("--baseline, --reference and --save-baseline judge or record benchmark figures"), "add --bench")
			}
			host, err := ho.options()
			if err != nil {
				return err
			}
			res := gpuprobe.Probe(cmd.Context(), gpuprobe.Options{Bench: bench, Python: python, DB: db, MinEfficiency: me, Budget: budget,
				RequireEnv: matrix.RuntimeEnviron(os.Environ()), Progress: gpurun.Progress(chatter(cmd)), Sample: true, Host: host})
			if judging {
				gpuprobe.Accept(res, accept)
			}
			if err := renderProbe(cmd.OutOrStdout(), output, res); err != nil {
				return err
			}
			if saveBaseline != "" && res.Verdict != gpuprobe.NoGPU {
				if err := writeBaseline(saveBaseline, res); err != nil {
					return err
				}
				fmt.Fprintf(chatter(cmd), "gpuimg: baseline written to %s\n", saveBaseline)
			}
			return probeExit(res.Verdict)
		},
	}
	mo.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&bench, "bench", false, "run the benchmarks (GEMM, memory bandwidth, host<->device, ResNet-50)")
	cmd.Flags().StringVar(&python, "python", "", "Python interpreter for the framework checks (default python3 on PATH)")
	cmd.Flags().DurationVar(&budget, "budget", 0, "time for the Python checks and benchmarks; benchmarks that would start after 80% of it are skipped with a warning (default 2m, 12m with --bench)")
	cmd.Flags().StringArrayVar(&eff, "min-efficiency", nil, "benchmark threshold as a fraction of the GPU's peak, e.g. gemm_bf16=0.7 (repeatable)")
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	cmd.Flags().StringVar(&saveBaseline, "save-baseline", "", "write this run's figures and software versions to FILE as a baseline (with --bench, on a machine you trust; only a passing run)")
	ao.addFlags(cmd.Flags())
	ho.addFlags(cmd.Flags())
	cmd.AddCommand(newProbeJudgeCmd())
	return cmd
}

// acceptFlags are --baseline, --reference and --max-loss, shared by probe
// and probe judge.
type acceptFlags struct {
	baseline  string
	reference bool
	maxLoss   string
}

func (a *acceptFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.baseline, "baseline", "", "judge every benchmark figure against this baseline FILE (from gpuimg probe --bench --save-baseline)")
	fs.BoolVar(&a.reference, "reference", false, "judge the figures against the published references in the matrix (gpuimg matrix list references); a GPU without one is reported, not judged")
	fs.StringVar(&a.maxLoss, "max-loss", "5%", "largest shortfall allowed against the baseline or reference, e.g. 5% or 0.05")
}

// options reads the baseline file and the loss.
func (a *acceptFlags) options(db *matrix.DB) (gpuprobe.AcceptOptions, error) {
	opt := gpuprobe.AcceptOptions{Reference: a.reference, DB: db}
	if a.baseline != "" && a.reference {
		return opt, invalid(errors.New("--baseline and --reference both given"), "judge against one: your baseline, or the published references")
	}
	loss, err := parseLoss(a.maxLoss)
	if err != nil {
		return opt, err
	}
	opt.MaxLoss = loss
	if a.baseline != "" {
		b, err := bound.ReadFile(a.baseline, "", bound.MaxUserFile)
		if err != nil {
			return opt, invalid(fmt.Errorf("read baseline: %w", err), "give the file gpuimg probe --bench --save-baseline wrote")
		}
		if opt.Baseline, err = gpuprobe.ReadBaseline(b); err != nil {
			return opt, invalid(fmt.Errorf("baseline %s: %w", a.baseline, err), "")
		}
	}
	return opt, nil
}

// parseLoss reads "5%" or "0.05" as 0.05.
func parseLoss(s string) (float64, error) {
	t := strings.TrimSpace(s)
	div := 1.0
	if n, ok := strings.CutSuffix(t, "%"); ok {
		t, div = n, 100
	}
	f, err := strconv.ParseFloat(t, 64)
	f /= div
	if err != nil || f <= 0 || f >= 1 {
		return 0, invalid(fmt.Errorf("--max-loss %q", s), "write a percentage between 0 and 100 such as 5%, or a fraction such as 0.05")
	}
	return f, nil
}

// writeBaseline writes res's baseline to path atomically: path never holds
// half a file, and a failed run writes none.
func writeBaseline(path string, res *gpuprobe.Result) error {
	b, err := gpuprobe.NewBaseline(res)
	if err != nil {
		return &Error{Err: err, Hint: "fix the failed checks, or record the baseline on a machine that passes", Code: ExitFailed}
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return fmt.Errorf("encode baseline: %w", err)
	}
	return atomicfile.Write(path, append(data, '\n'))
}

func newProbeJudgeCmd() *cobra.Command {
	mo := &MatrixOptions{}
	ao := &acceptFlags{}
	var output string
	cmd := &cobra.Command{
		Use:   "judge RESULT.json...",
		Short: "Judge probe results collected elsewhere against a baseline or the published references, without a GPU",
		Long: `judge reads results of gpuimg probe --bench -o json, or GPU reports of gpuimg
validate --run … -o json (a fleet's, through validate --run kubernetes), and
judges each as gpuimg probe --baseline or --reference would on the instance:
every figure against the baseline or the reference with the loss in percent,
and the checks the instance recorded (health, datasheet floors) as they are.
It prints a table per instance and the verdict, or with -o json the verdict
and one GPU report per instance (the kind --attach and images promote read).

Exit status: 0 every instance accepted, 1 one rejected, 2 could not run,
3 no instance had a GPU.`,
		Example: `  gpuimg probe judge --baseline h100-baseline.json results/*.json
  gpuimg probe judge --reference -o json node-a.json node-b.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			db, err := mo.Load()
			if err != nil {
				return err
			}
			opt, err := ao.options(db)
			if err != nil {
				return err
			}
			if opt.Baseline == nil && !opt.Reference {
				return invalid(errors.New("nothing to judge against"), "give --baseline FILE or --reference")
			}
			data := make([][]byte, len(args))
			for i, a := range args {
				if data[i], err = bound.ReadFile(a, "", bound.MaxReport); err != nil {
					return invalid(fmt.Errorf("read result: %w", err), "")
				}
			}
			j, err := validate.Judge(args, data, opt)
			if err != nil {
				return invalid(err, "give files written by gpuimg probe --bench -o json or gpuimg validate --run … -o json")
			}
			if err := renderJudgement(cmd.OutOrStdout(), output, j); err != nil {
				return err
			}
			return judgeExit(j)
		},
	}
	mo.AddFlags(cmd.Flags())
	ao.addFlags(cmd.Flags())
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

func judgeExit(j *validate.Judgement) error {
	noGPU := 0
	for _, in := range j.Instances {
		if in.Report.Verdict == gpuprobe.NoGPU {
			noGPU++
		}
	}
	if noGPU == len(j.Instances) {
		return &Error{Err: errors.New("no instance had an NVIDIA driver or GPU"), Code: ExitNoGPU}
	}
	if j.Verdict != "accept" {
		return &Error{Err: errors.New("an instance was rejected (see its failed checks)"), Code: ExitFailed}
	}
	return nil
}

func renderJudgement(w io.Writer, output string, j *validate.Judgement) error {
	return render(w, output, j, func() error { return renderJudgementText(w, j) })
}

// renderJudgementText is renderJudgement's text.
func renderJudgementText(w io.Writer, j *validate.Judgement) error {
	rejected := 0
	for _, in := range j.Instances {
		p := in.Report.Probe
		gpu := "no GPU"
		if len(p.GPUs) > 0 {
			gpu = p.GPUs[0].Name
		}
		fmt.Fprintf(w, "== %s  %s", in.Name, gpu)
		if in.Report.Image != "" {
			fmt.Fprintf(w, "  %s", in.Report.Image)
		}
		fmt.Fprintln(w)
		t := newTable(w, 0)
		for _, c := range in.Report.Checks {
			t.row(strings.ToUpper(string(c.Status)), c.Name, c.Message)
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %s\n\n", in.Name, in.Verdict)
		if in.Verdict != "accept" {
			rejected++
		}
	}
	_, err := fmt.Fprintf(w, "verdict: %s (%d of %d instances rejected)\n", j.Verdict, rejected, len(j.Instances))
	return err
}

func probeExit(v validate.Status) error {
	switch v {
	case gpuprobe.NoGPU:
		return &Error{Err: errors.New("no NVIDIA driver or GPU (see the nvidia-driver check)"), Code: ExitNoGPU}
	case matrix.Fail:
		return &Error{Err: errors.New("a GPU check failed (see the failed checks)"), Code: ExitFailed}
	}
	return nil
}

func renderProbe(w io.Writer, output string, res *gpuprobe.Result) error {
	return render(w, output, res, func() error { return renderProbeText(w, res) })
}

// renderProbeText is renderProbe's text.
func renderProbeText(w io.Writer, res *gpuprobe.Result) error {
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
			spread := ""
			if sp, ok := res.Python.Spread[k]; ok {
				spread = fmt.Sprintf("  (%d runs, spread %.1f%%)", len(sp.Runs), sp.SpreadPct)
			}
			fmt.Fprintf(w, "bench   %-22s %.1f%s\n", k, res.Python.Bench[k], spread)
		}
	}
	t := newTable(w, 0)
	for _, c := range res.Checks {
		t.row(strings.ToUpper(string(c.Status)), c.Name, c.Message)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if a := res.Acceptance; a != nil {
		fmt.Fprintf(w, "acceptance: %s against the %s (max loss %.0f%%)\n", a.Verdict, a.Against, 100*a.MaxLoss)
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", res.Verdict)
	return err
}

func humanBytesU(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

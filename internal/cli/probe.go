package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
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
				RequireCUDA: os.Getenv("NVIDIA_REQUIRE_CUDA"), Progress: probeProgress(cmd.ErrOrStderr())})
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

// gpuRun is what validate --run needs to run the probe for an image.
type gpuRun struct {
	Mode     string // docker, podman or host
	Image    string
	ProbeBin string // the gpuimg mounted in (default: this one)
	// PlainHTTP lets podman pull over HTTP (loopback, --insecure).
	PlainHTTP bool
	Bench     bool
	Budget    time.Duration
	Eff       map[string]float64
	// MatrixFiles are mounted in and passed to the probe, so that it
	// judges against the same GPU table as this gpuimg.
	MatrixFiles []string
	DB          *matrix.DB
}

// runGPU runs the probe for an image: on this host, or inside the image
// with docker or podman (the gpuimg binary mounted in as the probe).
func runGPU(ctx context.Context, stderr io.Writer, r gpuRun) (*validate.ProbeResult, error) {
	if r.Mode == "host" {
		return validate.Probe(ctx, validate.ProbeOptions{Bench: r.Bench, DB: r.DB, MinEfficiency: r.Eff, Budget: r.Budget,
			RequireCUDA: os.Getenv("NVIDIA_REQUIRE_CUDA"), Progress: probeProgress(stderr)}), nil
	}
	bin := r.ProbeBin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin = exe
	}
	engine, err := exec.LookPath(r.Mode)
	if err != nil {
		return nil, fmt.Errorf("%s not found: install it, or use --run host inside the image", r.Mode)
	}
	args := func(gpus bool) []string {
		// The probe needs no network.
		// NCCL between GPUs in one container may go through /dev/shm,
		// which engines make 64 MB by default.
		a := []string{"run", "--rm", "--network", "none", "--shm-size", "1g"}
		if gpus {
			// Docker's --gpus goes through the NVIDIA container toolkit's
			// hook; podman takes the GPUs as CDI devices (nvidia-ctk cdi
			// generate), as NVIDIA documents for it.
			if r.Mode == "podman" {
				a = append(a, "--device", "nvidia.com/gpu=all")
			} else {
				a = append(a, "--gpus", "all")
			}
		}
		if r.Mode == "podman" && r.PlainHTTP {
			a = append(a, "--tls-verify=false")
		}
		a = append(a, "-v", bin+":/usr/local/bin/gpuimg-probe:ro")
		var probeArgs []string
		for i, f := range r.MatrixFiles {
			in := fmt.Sprintf("/run/gpuimg-matrix/%d.yaml", i)
			if abs, err := filepath.Abs(f); err == nil {
				f = abs
			}
			a = append(a, "-v", f+":"+in+":ro")
			probeArgs = append(probeArgs, "--matrix-file", in)
		}
		a = append(a, "--entrypoint", "/usr/local/bin/gpuimg-probe", r.Image, "probe", "-o", "json")
		a = append(a, probeArgs...)
		if r.Bench {
			a = append(a, "--bench")
		}
		if r.Budget > 0 {
			a = append(a, "--budget", r.Budget.String())
		}
		keys := make([]string, 0, len(r.Eff))
		for k := range r.Eff {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a = append(a, "--min-efficiency", fmt.Sprintf("%s=%g", k, r.Eff[k]))
		}
		return a
	}
	run := func(gpus bool) ([]byte, string, error) {
		cmd := exec.CommandContext(ctx, engine, args(gpus)...)
		var out, errb strings.Builder
		// The probe's progress lines pass through as they come; the rest
		// of the engine's stderr is kept for the error message.
		cmd.Stdout, cmd.Stderr = &out, &progressLines{keep: &errb, to: stderr}
		err := cmd.Run()
		return []byte(out.String()), errb.String(), err
	}
	out, errOut, err := run(true)
	if err != nil && len(out) == 0 {
		if res, ok := validate.RuntimeRefused(errOut); ok {
			return res, nil
		}
	}
	if err != nil && len(out) == 0 && noGPUEngine(errOut) {
		fmt.Fprintf(stderr, "gpuimg: %s cannot give the container a GPU (%s); probing without one\n", r.Mode, lastLineOf(errOut))
		out, errOut, err = run(false)
	}
	var res validate.ProbeResult
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		return nil, fmt.Errorf("%s run %s: %v: %s", r.Mode, r.Image, err, lastLineOf(errOut))
	}
	if res.Driver != nil {
		// The engine has the image now: judge the driver against the
		// floor its stack label records.
		validate.CheckStackDriver(&res, imageLabels(ctx, engine, r.Image))
	}
	return &res, nil
}

// imageLabels are an image's labels as docker or podman reports them; nil
// when the engine cannot say.
func imageLabels(ctx context.Context, engine, image string) map[string]string {
	out, err := exec.CommandContext(ctx, engine, "image", "inspect", "--format", "{{json .Config.Labels}}", image).Output()
	if err != nil {
		return nil
	}
	var labels map[string]string
	if json.Unmarshal(bytes.TrimSpace(out), &labels) != nil {
		return nil
	}
	return labels
}

// probeProgressPrefix starts the lines probeProgress writes, so that
// validate --run can pass the probe's progress through from a container.
const probeProgressPrefix = "gpuimg: probe: "

// probeProgress writes each step the probe finishes to w (stderr), so a
// 12-minute --bench shows where it is.
func probeProgress(w io.Writer) func(string, time.Duration) {
	return func(step string, elapsed time.Duration) {
		fmt.Fprintf(w, "%s%s done after %s\n", probeProgressPrefix, step, elapsed.Round(time.Second))
	}
}

// progressLines keeps everything written to it and copies the probe's
// progress lines to another writer as whole lines arrive.
type progressLines struct {
	keep    *strings.Builder
	to      io.Writer
	partial []byte
}

func (p *progressLines) Write(b []byte) (int, error) {
	p.keep.Write(b)
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if line := p.partial[:i+1]; bytes.HasPrefix(line, []byte(probeProgressPrefix)) {
			_, _ = p.to.Write(line)
		}
		p.partial = p.partial[i+1:]
	}
}

// noGPUEngine says whether an engine's error means it cannot give a
// container a GPU here (no NVIDIA container toolkit, no CDI spec, no
// driver), rather than that the image or the run failed.
func noGPUEngine(stderr string) bool {
	for _, s := range []string{"could not select device driver", "nvidia-container", "unknown flag: --gpus", "unresolvable CDI devices"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// kubernetesJob writes a Job that runs the probe in image on one GPU. The
// probe binary comes from probeImage (any image holding /gpuimg) through an
// init container and a shared volume.
func kubernetesJob(w io.Writer, image, probeImage string, bench bool) error {
	args := `["probe", "-o", "json"]`
	if bench {
		args = `["probe", "-o", "json", "--bench"]`
	}
	_, err := fmt.Fprintf(w, `# gpuimg validate --run kubernetes: kubectl apply -f this, then
# kubectl logs job/gpuimg-probe > probe.json
apiVersion: batch/v1
kind: Job
metadata:
  name: gpuimg-probe
  labels: {app.kubernetes.io/name: gpuimg-probe}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: 1800
  template:
    spec:
      restartPolicy: Never
      volumes:
        - name: probe
          emptyDir: {}
      initContainers:
        - name: gpuimg
          image: %q
          command: ["cp", "/gpuimg", "/probe/gpuimg"]
          volumeMounts: [{name: probe, mountPath: /probe}]
      containers:
        - name: probe
          image: %q
          command: ["/probe/gpuimg"]
          args: %s
          resources:
            limits:
              nvidia.com/gpu: 1
          volumeMounts: [{name: probe, mountPath: /probe}]
`, probeImage, image, args)
	return err
}

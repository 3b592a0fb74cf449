package gpurun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// Mode is where the probe runs.
type Mode string

// The modes.
const (
	// Docker runs the probe inside the image with docker run --gpus all.
	Docker Mode = "docker"
	// Podman runs it inside the image with podman run and the CDI device
	// nvidia.com/gpu=all.
	Podman Mode = "podman"
	// Host probes this environment (inside the image, when gpuimg runs there).
	Host Mode = "host"
	// Kubernetes writes a Job manifest that runs the probe on one GPU.
	Kubernetes Mode = "kubernetes"
)

// Options are what Run needs. Image and Mode are required.
type Options struct {
	Mode Mode
	// Image is the image to probe: docker runs registry and docker-daemon
	// images, podman and Kubernetes registry images; Host takes any (it
	// probes where it runs).
	Image images.Ref
	// ProbeBinary is the gpuimg binary mounted into the container as the
	// probe (docker, podman). Default: the running binary, which must then
	// be static (CGO_ENABLED=0, as make build does).
	ProbeBinary string
	// ProbeImage is an image holding the gpuimg binary at /gpuimg, which
	// the Kubernetes Job copies into the probed image's pod. Required for
	// Kubernetes.
	ProbeImage string
	// Bench also runs the benchmarks, judged against the GPU's peaks.
	Bench bool
	// Nodes, above 1 (Kubernetes only), writes the multi-node all-reduce
	// (MultiNodeJob) across that many pods instead of the probe's Job;
	// Fabric names the fabric it should run over, for its comments.
	Nodes  int
	Fabric string
	// Budget bounds the probe's Python checks and benchmarks (0: the
	// probe's default, 2 min, 12 min with Bench); negative is an error.
	Budget time.Duration
	// MinEfficiency overrides benchmark thresholds (gpuprobe.DefaultMinEfficiency keys).
	MinEfficiency map[string]float64
	// MatrixFiles are mounted into the container and handed to the probe,
	// so that it judges against the same GPU table as DB.
	MatrixFiles []string
	// DB is the matrix the host probe judges against.
	DB *matrix.DB
	// PlainHTTP lets the engine pull the image over plain HTTP (podman must
	// be told; the caller decides with images.PlainHTTP: an insecure or a
	// loopback registry).
	PlainHTTP bool
	// RequireCUDA is the NVIDIA_REQUIRE_CUDA the host probe checks the
	// driver against (the caller's environment's; inside a container, the
	// image's); RequireEnv, when set, replaces it with all the runtime
	// reads (gpuprobe.Options.RequireEnv).
	RequireCUDA string
	RequireEnv  map[string]string
	// Stderr receives the probe's progress lines as they come and a notice
	// when the engine cannot give the container a GPU. Nil discards them.
	Stderr io.Writer
	// Manifest receives the Job (Kubernetes). Nil discards it.
	Manifest io.Writer
	// Digest, when set, gives a registry image's digest for the report;
	// "" leaves it out. It is called after the probe ran.
	Digest func(ctx context.Context) string
	// Accept, when set, judges the run's figures against a baseline or
	// the published references (gpuprobe.Accept) before the report is
	// made, so that its checks and verdict are the judged ones. Nil
	// judges against the GPU's peaks only.
	Accept *gpuprobe.AcceptOptions
}

// Run probes the image as opt.Mode says and returns the GPU report, with
// the no-gpu verdict when the engine or host has no NVIDIA driver or GPU.
// For Kubernetes it writes the Job to opt.Manifest and returns a nil
// Report: the probe runs when the Job is applied.
func Run(ctx context.Context, opt Options) (*validate.Report, error) {
	image, err := opt.check()
	if err != nil {
		return nil, err
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	var res *gpuprobe.Result
	switch opt.Mode {
	case Kubernetes:
		w := opt.Manifest
		if w == nil {
			w = io.Discard
		}
		if len(opt.MatrixFiles) > 0 {
			return nil, fmt.Errorf("a Kubernetes Job cannot mount the matrix files %s; put the rows in the probe image's built-in matrix, or run the probe with docker or podman", strings.Join(opt.MatrixFiles, ", "))
		}
		if opt.Nodes > 1 {
			return nil, WriteMultiNodeJob(w, MultiNodeJob{Image: image, Nodes: opt.Nodes, Fabric: opt.Fabric})
		}
		return nil, WriteJob(w, Job{Image: image, ProbeImage: opt.ProbeImage, Bench: opt.Bench, Args: probeCommand(opt)})
	case Host:
		res = gpuprobe.Probe(ctx, hostOptions(opt))
	default:
		if res, err = runEngine(ctx, opt, image); err != nil {
			return nil, err
		}
	}
	if opt.Accept != nil {
		gpuprobe.Accept(res, *opt.Accept)
	}
	digest := ""
	if opt.Image.Transport == images.Registry && opt.Digest != nil {
		digest = opt.Digest(ctx)
	}
	return validate.GPUReport(opt.Image.String(), digest, res), nil
}

// check says whether the mode can run the image, and names the image as
// the engine (or the Job) takes it.
func (opt Options) check() (string, error) {
	switch opt.Mode {
	case Docker, Podman, Host, Kubernetes:
	default:
		return "", fmt.Errorf("run mode %q: use docker, podman, host or kubernetes", opt.Mode)
	}
	if opt.Budget < 0 {
		return "", fmt.Errorf("budget %s is negative: give a positive duration such as 5m", opt.Budget)
	}
	if opt.Nodes > 1 && opt.Mode != Kubernetes {
		return "", fmt.Errorf("%d nodes need a cluster: the multi-node all-reduce runs only as a Kubernetes Job (--run kubernetes)", opt.Nodes)
	}
	if opt.Mode == Kubernetes && opt.ProbeImage == "" && opt.Nodes <= 1 {
		return "", errors.New("a Kubernetes Job needs a probe image: name an image that holds the gpuimg binary at /gpuimg")
	}
	switch opt.Image.Transport {
	case images.DockerDaemon:
		if opt.Mode == Podman || opt.Mode == Kubernetes {
			return "", fmt.Errorf("%s cannot use an image in docker's daemon (%s): push it to a registry, or run it with docker", opt.Mode, opt.Image)
		}
		return opt.Image.Name, nil
	case images.Registry:
		return opt.Image.Name, nil
	}
	if opt.Mode != Host {
		return "", fmt.Errorf("%s needs a registry or docker-daemon image, not %s: push or load the image first", opt.Mode, opt.Image.Transport)
	}
	return "", nil
}

// hostOptions are the probe's options on this host.
func hostOptions(opt Options) gpuprobe.Options {
	return gpuprobe.Options{Bench: opt.Bench, DB: opt.DB, MinEfficiency: opt.MinEfficiency, Budget: opt.Budget,
		RequireCUDA: opt.RequireCUDA, RequireEnv: opt.RequireEnv, Progress: Progress(opt.Stderr)}
}

// runEngine runs the probe inside image with docker or podman: with every
// GPU, and again without one when the engine cannot give the container a
// GPU here. With a driver in the answer, it judges the driver against the
// floor in the image's stack label, read from the engine.
func runEngine(ctx context.Context, opt Options, image string) (*gpuprobe.Result, error) {
	if opt.ProbeBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the running gpuimg to mount as the probe: %w", err)
		}
		opt.ProbeBinary = exe
	}
	engine, err := exec.LookPath(string(opt.Mode))
	if err != nil {
		return nil, fmt.Errorf("%s not found: install it, or run the probe on the host inside the image", opt.Mode)
	}
	run := func(gpus bool) ([]byte, string, error) {
		cmd := exec.CommandContext(ctx, engine, engineArgs(opt, image, gpus)...)
		var out, errb strings.Builder
		// The probe's progress lines pass through as they come; the rest
		// of the engine's stderr is kept for the error message.
		cmd.Stdout, cmd.Stderr = &out, &progressLines{keep: &errb, to: opt.Stderr}
		err := cmd.Run()
		return []byte(out.String()), errb.String(), err
	}
	out, errOut, err := run(true)
	if err != nil && len(out) == 0 {
		switch a := readEngineError(errOut); {
		case a.refused != nil:
			return a.refused, nil
		case a.noGPU:
			fmt.Fprintf(opt.Stderr, "gpuimg: %s cannot give the container a GPU (%s); probing without one\n", opt.Mode, lastLine(errOut))
			out, errOut, err = run(false)
		}
	}
	var res gpuprobe.Result
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		if err == nil {
			err = jerr
		}
		if reason := lastLine(errOut); reason != "" {
			return nil, fmt.Errorf("%s run %s: %w: %s", opt.Mode, image, err, reason)
		}
		return nil, fmt.Errorf("%s run %s: %w (it printed no reason)", opt.Mode, image, err)
	}
	if res.Driver != nil {
		// The engine has the image now: judge the driver against the
		// floor its stack label records.
		gpuprobe.CheckStackDriver(&res, ImageLabels(ctx, engine, image))
	}
	return &res, nil
}

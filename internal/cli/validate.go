package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

func newValidateCmd() *cobra.Command {
	mo := &MatrixOptions{}
	ro := &RegistryOptions{}
	var platform, driver, gpu, bandwidth, output string
	var attach, bench bool
	var budget time.Duration
	var runMode, probeBin, probeImage string
	var eff []string
	cmd := &cobra.Command{
		Use:   "validate IMAGE",
		Short: "Check what is really inside an image, and whether it runs on a driver and GPU",
		Long: `validate reads every layer of an image once (streamed, nothing extracted, deleted
files applied) and reports what is really inside: OS, CUDA, cuDNN, NCCL, cuBLAS,
Python, pip packages (torch with its CUDA), and the GPU architectures compiled
into each CUDA library. Then it checks:

  stack-label     the files agree with the dev.gpuimg.stack label
  torch-cuda      torch's CUDA vs the image's (same major, not newer)
  python, cudnn   against the matrix's facts for that torch release
  require-cuda    NVIDIA_REQUIRE_CUDA is set and not weaker than what is inside
  driver          --driver meets the floor, strictly or under minor-version compatibility
  gpu             --gpu has native kernels (or PTX to JIT) in every CUDA library
  duplicate-libs  CUDA libraries both from the OS and from pip wheels
  secrets         credentials in files, environment, labels or history
  size            compressed size, layers, pull time at --bandwidth

IMAGE is a registry reference, oci:DIR[:NAME], oci-archive:FILE,
docker-archive:FILE or docker-daemon:REF.

With --run, validate runs gpuimg's GPU probe inside the image instead
(docker, podman, host or a Kubernetes Job; see docs/probe.md) and judges the
driver, the frameworks and, with --bench, throughput against the GPU's peaks.

Exit status: 0 pass (warnings allowed), 1 a check failed, 2 validation could
not run (unreachable registry, corrupt layer, bad flags), 3 (--run) no NVIDIA
driver or GPU where the probe ran.`,
		Example: `  gpuimg validate registry.example.com/ml/torch:2.3-cu122 --driver 535.104.05 --gpu h100
  gpuimg validate oci-archive:torch.tar --gpu sm_120 -o json
  gpuimg validate docker-daemon:torch:dev --bandwidth 1Gbps -o junit > validate.xml
  gpuimg validate registry.example.com/ml/torch:nightly --attach   # then: gpuimg images promote … --require static
  gpuimg validate registry.example.com/ml/torch:nightly --run docker --bench --attach`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", "json", "junit"); err != nil {
				return err
			}
			ref, err := images.ParseRef(args[0])
			if err != nil {
				return invalid(err, "")
			}
			opt := validate.Options{Name: ref.String(), GPU: gpu}
			if driver != "" {
				if opt.Driver, err = matrix.ParseVersion(driver); err != nil {
					return invalid(fmt.Errorf("--driver: %w", err), "give the driver as nvidia-smi prints it, e.g. 535.104.05")
				}
			}
			if bandwidth != "" {
				if opt.Bandwidth, err = validate.ParseBandwidth(bandwidth); err != nil {
					return invalid(err, "")
				}
			}
			pl, err := parsePlatform(platform)
			if err != nil {
				return err
			}
			if opt.DB, err = mo.Load(); err != nil {
				return err
			}
			if gpu != "" {
				if _, err := opt.DB.FindGPU(gpu); err != nil {
					return invalid(err, "")
				}
			}
			reg, err := ro.Options()
			if err != nil {
				return err
			}
			if runMode != "" {
				return runValidateGPU(cmd, ref, gpuRun{Mode: runMode, ProbeBin: probeBin, Bench: bench, Budget: budget, MatrixFiles: mo.Files, DB: opt.DB}, probeImage, eff, attach, reg, output)
			}
			img, err := images.Open(cmd.Context(), ref, append(reg, images.WithPlatform(pl))...)
			if err != nil {
				return invalid(err, "check the reference, the registry and your credentials (docker login)")
			}
			defer img.Close()
			opt.Digest, opt.Platform = img.Digest, img.Platform
			rep, err := validate.Inspect(cmd.Context(), img.Image, opt)
			if err != nil {
				return invalid(fmt.Errorf("validate %s: %w", ref, err), "")
			}
			return finishReport(cmd, rep, ref, output, attach, reg, gpu, driver)
		},
	}
	mo.AddFlags(cmd.Flags())
	ro.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&platform, "platform", "", "platform to read from a multi-platform image (default linux/amd64)")
	cmd.Flags().StringVar(&driver, "driver", "", "check against this NVIDIA driver (535.104.05)")
	cmd.Flags().StringVar(&gpu, "gpu", "", "check kernel coverage for this GPU (h100, l4, sm_90)")
	cmd.Flags().StringVar(&bandwidth, "bandwidth", "", "estimate the pull time at this bandwidth (1Gbps)")
	cmd.Flags().StringVar(&runMode, "run", "", "run the GPU probe in the image instead of reading it: docker, podman, host (this environment) or kubernetes (print a Job manifest)")
	cmd.Flags().StringVar(&probeBin, "probe-binary", "", "gpuimg binary to mount into the container as the probe (default: this one; build it with CGO_ENABLED=0, as make build does)")
	cmd.Flags().StringVar(&probeImage, "probe-image", "", "for --run kubernetes: an image holding the gpuimg binary at /gpuimg")
	cmd.Flags().BoolVar(&bench, "bench", false, "with --run: also run the benchmarks and judge them against the GPU's peaks")
	cmd.Flags().StringArrayVar(&eff, "min-efficiency", nil, "with --run --bench: threshold as a fraction of peak, e.g. gemm_bf16=0.7 (repeatable)")
	cmd.Flags().DurationVar(&budget, "budget", 0, "with --run: time for the probe's Python checks and benchmarks (default 2m, 12m with --bench)")
	cmd.Flags().BoolVar(&attach, "attach", false, "push the report to the registry as an OCI referrer of the image (artifact type "+images.ReportArtifactType+"), for gpuimg images promote")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or junit")
	return cmd
}

// finishReport renders a report, attaches it if asked, and sets the exit status.
func finishReport(cmd *cobra.Command, rep *validate.Report, ref images.Ref, output string, attach bool, reg []images.Option, gpu, driver string) error {
	out := cmd.OutOrStdout()
	var err error
	switch output {
	case "json":
		err = rep.WriteJSON(out)
	case "junit":
		err = rep.WriteJUnit(out)
	default:
		err = rep.WriteText(out)
	}
	if err != nil {
		return err
	}
	if attach {
		if ref.Transport != images.Registry {
			return invalid(fmt.Errorf("--attach needs a registry image, not %s", ref.Transport), "validate the pushed image")
		}
		payload, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		ann := map[string]string{
			images.AnnotationKind: rep.Kind, images.AnnotationVerdict: string(rep.Verdict),
			images.AnnotationCreated: rep.Created.Format(time.RFC3339),
		}
		if rep.Probe != nil && len(rep.Probe.GPUs) > 0 {
			gpu = rep.Probe.GPUs[0].Name
		}
		if rep.Probe != nil && rep.Probe.Driver != nil {
			driver = rep.Probe.Driver.Version
		}
		if gpu != "" {
			ann[images.AnnotationGPU] = gpu
		}
		if driver != "" {
			ann[images.AnnotationDriver] = driver
		}
		d, err := images.Attach(cmd.Context(), ref.Name, images.ReportArtifactType, payload, ann, reg...)
		if err != nil {
			return invalid(err, "")
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "gpuimg: attached the %s report (%s) to %s as %s\n", rep.Kind, rep.Verdict, ref, d)
	}
	switch rep.Verdict {
	case matrix.Fail:
		return &Error{Err: errors.New("validation failed (see the failed checks)"), Code: ExitFailed}
	case validate.NoGPU:
		return &Error{Err: errors.New("no NVIDIA driver or GPU where the probe ran (see the nvidia-driver check)"), Code: ExitNoGPU}
	}
	return nil
}

// runValidateGPU is validate --run.
func runValidateGPU(cmd *cobra.Command, ref images.Ref, r gpuRun, probeImage string, eff []string, attach bool, reg []images.Option, output string) error {
	me, err := parseEfficiency(eff)
	if err != nil {
		return err
	}
	if r.Budget < 0 {
		return invalid(fmt.Errorf("--budget %s", r.Budget), "give a positive duration such as 5m")
	}
	r.Eff = me
	mode := r.Mode
	var image string
	switch ref.Transport {
	case images.DockerDaemon:
		if mode == "podman" || mode == "kubernetes" {
			return invalid(fmt.Errorf("--run %s cannot use an image in docker's daemon (%s)", mode, ref), "push it to a registry, or use --run docker")
		}
		image = ref.Name
	case images.Registry:
		image = ref.Name
	default:
		if mode != "host" {
			return invalid(fmt.Errorf("--run %s needs a registry or docker-daemon image, not %s", mode, ref.Transport), "push or load the image first")
		}
	}
	switch mode {
	case "kubernetes":
		if probeImage == "" {
			return invalid(errors.New("--run kubernetes needs --probe-image"), "name an image that holds the gpuimg binary at /gpuimg")
		}
		return kubernetesJob(cmd.OutOrStdout(), image, probeImage, r.Bench)
	case "docker", "podman", "host":
	default:
		return invalid(fmt.Errorf("--run %q", mode), "use docker, podman, host or kubernetes")
	}
	// As for gpuimg's own registry access, a loopback or insecure registry
	// may be plain HTTP; podman needs to be told.
	if ref.Transport == images.Registry {
		if r.PlainHTTP, err = images.PlainHTTP(ref.Name, reg...); err != nil {
			return invalid(err, "")
		}
	}
	r.Image = image
	res, err := runGPU(cmd.Context(), cmd.ErrOrStderr(), r)
	if err != nil {
		return invalid(err, "")
	}
	digest := ""
	if ref.Transport == images.Registry {
		if o, err := images.Open(cmd.Context(), ref, reg...); err == nil {
			digest = o.Digest
			o.Close()
		}
	}
	return finishReport(cmd, validate.GPUReport(ref.String(), digest, res), ref, output, attach, reg, "", "")
}

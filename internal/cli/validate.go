package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
	"github.com/gpuimg/gpuimg/validate/gpurun"
	"github.com/gpuimg/gpuimg/validate/sbom"
)

// ValidateOptions are the flags of gpuimg validate.
type ValidateOptions struct {
	Matrix                       MatrixOptions
	Platform                     images.Platform
	Driver, GPU, Bandwidth       string
	Output                       string
	Registry                     RegistryOptions
	Attach                       bool
	Key                          string // --key: also attach the report signed (test-result statement)
	SBOM                         string // --sbom: also attach an SBOM from the same walk
	Run, ProbeBinary, ProbeImage string
	Bench                        bool
	Budget                       time.Duration
	MinEfficiency                []string
	Targets                      []string
	Fabrics                      []string
	Nodes                        int
	NCCLLog                      string
	Strict                       bool        // --strict: unknown and warning checks fail the verdict
	Progress                     string      // --progress: auto, plain or quiet
	accept                       acceptFlags // --baseline, --reference, --max-loss

	targets    []matrix.Target // --target, looked up
	sbomFormat sbom.Format     // --sbom, parsed
}

// AddFlags binds the options to flags.
func (o *ValidateOptions) AddFlags(fs *pflag.FlagSet) {
	o.Matrix.AddFlags(fs)
	platformFlag(fs, &o.Platform, "platform to judge, read from a multi-platform image; a single image must be it (default linux/amd64)")
	stackFlag(fs, &o.Driver, "driver", "535.104.05", "check against this NVIDIA driver (535.104.05)")
	stackFlag(fs, &o.GPU, "gpu", "h100", "check kernel coverage for this GPU (h100, l4, sm_90); with --target, the GPU of the fleet your hosts have (it narrows the target's GPU list)")
	fs.StringVar(&o.Bandwidth, "bandwidth", "", "estimate the pull time at this bandwidth (1Gbps)")
	fs.StringArrayVar(&o.Targets, "target", nil, "check everything a provider fleet requires (sagemaker/p5, gke/cos-default; gpuimg matrix list targets): host driver, GPUs, platform, manifest format, index and attestations, compression, size, runtime contract (repeatable)")
	fs.StringArrayVar(&o.Fabrics, "fabric", nil, "check that the image carries the user space of a multi-node fabric (efa, infiniband, tcpxo, gib; gpuimg matrix list fabrics): NCCL's network plugin and its libraries, libfabric's provider, NCCL against the plugin, settings that turn it off (repeatable; a --target whose row names a fabric adds it)")
	fs.IntVar(&o.Nodes, "nodes", 0, "with --run kubernetes: write an all-reduce across this many pods, one per node (torchrun, c10d rendezvous), instead of the probe's Job; judge its log with --nccl-log")
	fs.StringVar(&o.NCCLLog, "nccl-log", "", "also judge a multi-node run's NCCL log (NCCL_DEBUG=INFO; the --nodes Job's pod 0 log): the transport NCCL used, against --fabric, and the all-reduce's bandwidth")
	fs.StringVar(&o.Run, "run", "", "run the GPU probe in the image instead of reading it: docker, podman, host (this environment) or kubernetes (print a Job manifest)")
	fs.StringVar(&o.ProbeBinary, "probe-binary", "", "gpuimg binary to mount into the container as the probe (default: this one; build it with CGO_ENABLED=0, as make build does)")
	fs.StringVar(&o.ProbeImage, "probe-image", "", "for --run kubernetes: an image holding the gpuimg binary at /gpuimg")
	fs.BoolVar(&o.Bench, "bench", false, "with --run: also run the benchmarks and judge them against the GPU's peaks")
	fs.StringArrayVar(&o.MinEfficiency, "min-efficiency", nil, "with --run --bench: threshold as a fraction of peak, e.g. gemm_bf16=0.7 (repeatable)")
	o.accept.addFlags(fs)
	fs.BoolVar(&o.Strict, "strict", false, "fail the verdict on unknown checks (a fact the matrix lacks) and warnings too, not only on failed checks (for CI)")
	fs.DurationVar(&o.Budget, "budget", 0, "with --run: time for the probe's Python checks and benchmarks (default 2m, 12m with --bench)")
	fs.BoolVar(&o.Attach, "attach", false, "push the report to the registry as an OCI referrer of the image (artifact type "+images.ReportArtifactType+"), for gpuimg images promote")
	fs.StringVar(&o.Key, "key", "", "with --attach: also attach the report as an in-toto test-result statement signed with this private key (a cosign key file, password from COSIGN_PASSWORD, a PEM key, or env://VAR), which gpuimg verify --require validation and cosign verify-attestation check")
	fs.StringVar(&o.SBOM, "sbom", "", "with --attach: also attach the image's SBOM (spdx-json or cyclonedx-json), written from the same read of the layers as the report (a plain referrer trivy reads; with --key also a signed attestation; docs/sbom.md)")
	o.Registry.AddFlags(fs)
	outputFlag(fs, &o.Output, "output", "text", "json", "junit", "wide")
	progressFlag(fs, &o.Progress)
}

func newValidateCmd() *cobra.Command {
	vo := &ValidateOptions{}
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
  require-cuda    what the NVIDIA runtime will require (NVIDIA_REQUIRE_CUDA, else the
                  toolkit's cuda>=MAJOR.MINOR of CUDA_VERSION) is not weaker than what is inside
  driver          --driver meets the floor, strictly or under minor-version compatibility
  gpu             --gpu has native kernels (or PTX to JIT) in every CUDA library
  duplicate-libs  CUDA libraries both from the OS and from pip wheels
  secrets         credentials in files, environment, labels or history
  advisory:CVE-*  known vulnerabilities scanners miss (torch releases, LD_PRELOAD
                  in the config, CUDA tools of a devel image; docs/sbom.md)
  size            compressed size, layers, pull time at --bandwidth
  target:NAME:*   with --target: driver, gpu/GPU, platform, media-type,
                  index, attestations, compression, size, entrypoint, port,
                  user, each against the fleet's row (docs/validate.md),
                  and fabric: the fleet's fabric, or that its row names none
  fabric:NAME:*   with --fabric or a target's fabric: plugin, closure, libs,
                  provider, nccl, env (docs/fabric.md)

IMAGE is a registry reference, oci:DIR[:NAME], oci-archive:FILE,
docker-archive:FILE or docker-daemon:REF.

With --run, validate runs gpuimg's GPU probe inside the image instead
(docker, podman, host or a Kubernetes Job; see docs/probe.md) and judges the
driver, the frameworks and, with --bench, throughput against the GPU's peaks.

A check that needs a fact the matrix does not record (which driver
branches know the --gpu) is unknown, never a pass, and says how to supply
the fact. --strict fails unknown and warning checks too, for CI.

Exit status: 0 pass (warnings allowed), 1 a check failed (with --strict:
or is unknown or warns), 2 validation could not run (unreachable registry,
corrupt layer, bad flags), 3 (--run) no NVIDIA driver or GPU where the
probe ran, 4 nothing failed but a check is unknown.`,
		Example: `  gpuimg validate registry.example.com/ml/torch:2.3-cu122 --driver 535.104.05 --gpu h100
  gpuimg validate oci-archive:torch.tar --gpu sm_120 -o json
  gpuimg validate docker-daemon:torch:dev --bandwidth 1Gbps -o junit > validate.xml
  gpuimg validate registry.example.com/ml/torch:2.3-cu122 --target sagemaker/p5 --target gke/cos-default
  gpuimg validate registry.example.com/ml/train:efa --fabric efa   # or --target eks/p5
  gpuimg validate registry.example.com/ml/torch:nightly --attach   # then: gpuimg images promote … --require static
  gpuimg validate registry.example.com/ml/torch:nightly --run docker --bench --attach`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, opt, err := vo.parse(cmd.Flags(), args[0])
			if err != nil {
				return err
			}
			reg, err := vo.Registry.Options()
			if err != nil {
				return err
			}
			var rep *validate.Report
			if vo.Run != "" {
				run, err := vo.gpuRun(cmd, ref, opt.DB, reg)
				if err != nil {
					return err
				}
				accept, err := vo.accept.options(opt.DB)
				if err != nil {
					return err
				}
				if accept.Baseline != nil || accept.Reference {
					if !vo.Bench || vo.Run == "kubernetes" {
						return invalid(errors.New("--baseline and --reference judge the benchmarks of a run here"), "add --bench; for --run kubernetes judge the Jobs' results with gpuimg probe judge")
					}
					run.Accept = &accept
				}
				if rep, err = gpurun.Run(cmd.Context(), run); err != nil {
					return invalid(err, "")
				}
				if rep == nil {
					return nil // --run kubernetes: the Job is the output
				}
				vo.strictVerdict(rep)
				return finishReport(cmd, rep, ref, vo.Output, attachment{vo.Attach, vo.Key, ""}, reg, verbs.Judged{})
			}
			show, done, err := showProgress(cmd, "validate", vo.Progress)
			if err != nil {
				return err
			}
			rep, err = vo.inspect(cmd.Context(), ref, opt, append(slices.Clip(reg), show))
			done()
			if err != nil {
				return err
			}
			if err := judgeNCCLLog(rep, vo.NCCLLog, opt.Fabrics); err != nil {
				return err
			}
			vo.strictVerdict(rep)
			return finishReport(cmd, rep, ref, vo.Output, attachment{vo.Attach, vo.Key, vo.sbomFormat}, reg, verbs.Judged{GPU: vo.GPU, Driver: vo.Driver})
		},
	}
	vo.AddFlags(cmd.Flags())
	return cmd
}

// strictVerdict re-judges rep under --strict (matrix.StrictVerdict):
// unknown and warning checks fail it. A GPU run that found no GPU keeps
// its own verdict.
func (o *ValidateOptions) strictVerdict(rep *validate.Report) {
	if o.Strict && rep.Verdict != gpuprobe.NoGPU {
		rep.Strict = true
		rep.Verdict = matrix.StrictVerdict(rep.Checks)
	}
}

// runOnlyFlags are the flags only a GPU run (--run) reads.
func runOnlyFlags() []string {
	return []string{"bench", "budget", "min-efficiency", "probe-binary", "probe-image", "baseline", "reference", "max-loss", "nodes"}
}

// parse checks the flags (fs says which were given) and the image
// reference, and loads the matrix.
func (o *ValidateOptions) parse(fs *pflag.FlagSet, image string) (images.Ref, validate.Options, error) {
	var opt validate.Options
	if err := checkFormat(fs); err != nil {
		return images.Ref{}, opt, err
	}
	var runOnly []string
	for _, name := range runOnlyFlags() {
		if fs.Changed(name) {
			runOnly = append(runOnly, "--"+name)
		}
	}
	if o.Run == "" && len(runOnly) > 0 {
		verb := "work"
		if len(runOnly) == 1 {
			verb = "works"
		}
		return images.Ref{}, opt, invalid(fmt.Errorf("%s only %s with --run: without it validate reads the image and runs nothing", strings.Join(runOnly, ", "), verb),
			"add --run docker (or podman, host, kubernetes), or drop "+strings.Join(runOnly, ", "))
	}
	ref, err := images.ParseRef(image)
	if err != nil {
		return ref, opt, invalid(err, "")
	}
	opt = validate.Options{Name: ref.String(), GPU: o.GPU, Strict: o.Strict}
	if o.Driver != "" {
		if opt.Driver, err = matrix.ParseDriver(o.Driver); err != nil {
			return ref, opt, invalid(fmt.Errorf("--driver: %w", err), "")
		}
	}
	if o.Bandwidth != "" {
		if opt.Bandwidth, err = validate.ParseBandwidth(o.Bandwidth); err != nil {
			return ref, opt, invalid(err, "")
		}
	}
	if opt.DB, err = o.Matrix.Load(); err != nil {
		return ref, opt, err
	}
	if o.GPU != "" {
		var c matrix.Constraints // the GPU list as matrix check reads it
		if err := c.Set(matrix.FieldGPU, o.GPU); err != nil {
			return ref, opt, invalid(fmt.Errorf("--gpu: %w", err), constraintHint(matrix.FieldGPU, err))
		}
		if n := strings.Count(c.GPU, ",") + 1; n > 1 {
			return ref, opt, invalid(fmt.Errorf("--gpu %s names %d GPUs, and validate checks one", o.GPU, n), "run validate once per GPU, or give --target for a fleet's GPUs")
		}
		if _, err := opt.DB.FindGPU(o.GPU); err != nil {
			return ref, opt, invalid(err, "")
		}
	}
	for _, n := range o.Targets {
		t, err := opt.DB.Target(n)
		if err != nil {
			return ref, opt, invalid(fmt.Errorf("--target: %w", err), "")
		}
		if t, _, err = opt.DB.NarrowTarget(t, o.GPU); err != nil {
			return ref, opt, invalid(fmt.Errorf("--gpu: %w", err), "")
		}
		o.targets = append(o.targets, t)
	}
	for _, n := range o.Fabrics {
		f, err := opt.DB.Fabric(n)
		if err != nil {
			return ref, opt, invalid(fmt.Errorf("--fabric: %w", err), "")
		}
		opt.Fabrics = append(opt.Fabrics, f)
	}
	if len(opt.Fabrics) > 0 && o.Run != "" && o.Nodes < 2 {
		return ref, opt, invalid(errors.New("--fabric checks the image statically; it does not combine with --run (but for --run kubernetes --nodes)"), "run them one after the other")
	}
	if o.Nodes == 1 || o.Nodes < 0 || o.Nodes > 1 && o.Run != string(gpurun.Kubernetes) {
		return ref, opt, invalid(fmt.Errorf("--nodes %d: the multi-node all-reduce takes 2 or more nodes and runs as a Kubernetes Job", o.Nodes), "use --run kubernetes --nodes 2 (or more)")
	}
	if o.NCCLLog != "" && o.Run != "" {
		return ref, opt, invalid(errors.New("--nccl-log judges a recorded log beside the static checks; it does not combine with --run"), "apply the Job, save pod 0's log, then run validate IMAGE --nccl-log FILE")
	}
	if len(o.targets) > 0 && o.Run != "" {
		return ref, opt, invalid(errors.New("--target checks the image statically; it does not combine with --run"), "run them one after the other")
	}
	if o.SBOM != "" {
		switch {
		case !o.Attach:
			return ref, opt, invalid(errors.New("--sbom attaches the SBOM beside the report"), "add --attach, or write it with gpuimg sbom IMAGE")
		case o.Run != "" || len(o.targets) > 0:
			return ref, opt, invalid(errors.New("--sbom describes the image validate reads statically; it does not combine with --run or --target"), "run gpuimg sbom IMAGE --attach")
		}
		if o.sbomFormat, err = sbom.ParseFormat(o.SBOM); err != nil {
			return ref, opt, invalid(fmt.Errorf("--sbom: %w", err), "")
		}
		opt.Inventory = true
	}
	if len(o.targets) > 0 && o.Platform.Get() != nil {
		return ref, opt, invalid(errors.New("--target picks the platform the fleet runs; it does not combine with --platform"), "drop --platform")
	}
	return ref, opt, nil
}

// inspect is static validation: read the image, check what is inside
// (with --target, once per platform the targets run).
func (o *ValidateOptions) inspect(ctx context.Context, ref images.Ref, opt validate.Options, reg []images.Option) (*validate.Report, error) {
	spec := verbs.Spec{Options: opt}
	spec.Targets = o.targets
	if p := o.Platform.Get(); p != nil {
		spec.Platforms = []*v1.Platform{p}
	}
	reps, err := verbs.Validate(ctx, ref, spec, reg...)
	var ve *verbs.Error
	var pe *images.PlatformError
	switch {
	case errors.As(err, &pe):
		return nil, wrongPlatform("validate", pe)
	case errors.As(err, &ve) && ve.Step == verbs.Opening:
		return nil, invalid(ve.Err, openHint(ref, ve.Err, reg))
	case errors.As(err, &ve) && ve.Step == verbs.Inspecting:
		return nil, invalid(fmt.Errorf("validate %s: %w", ref, ve.Err), "")
	case err != nil:
		return nil, invalid(err, "")
	}
	return reps[0].Report, nil
}

// wrongPlatform is the error of a verb that read a single image of
// another platform than the one it judges: --platform, else linux/amd64
// (images.DefaultPlatform), never the image's own in its place.
func wrongPlatform(verb string, pe *images.PlatformError) error {
	return invalid(fmt.Errorf("%s is one %s image, and %s reads %s (--platform, default %s)", pe.Ref, pe.Got, verb, pe.Want, images.DefaultPlatform().String()),
		fmt.Sprintf("add --platform %s to %s it, or give a %s image", pe.Got, verb, pe.Want))
}

// serverErrorHint says, for a registry that answered 5xx to every try,
// that the registry failed (not the reference or the credentials) and how
// many times gpuimg tried; "" for any other error.
func serverErrorHint(err error, reg []images.Option) string {
	te, ok := errors.AsType[*transport.Error](err)
	if !ok || te.StatusCode < 500 {
		return ""
	}
	tries := "several"
	if b, berr := images.RetryBackoff(reg...); berr == nil {
		tries = fmt.Sprintf("%d", b.Steps)
	}
	return fmt.Sprintf("the registry answered with a server error (HTTP %d) every time: gpuimg tried %s times, backing off between tries; the registry is failing, not the reference or your credentials: try again later, or raise --retries", te.StatusCode, tries)
}

// openHint is what to check when ref cannot be opened: the registry and
// the credentials for a registry image, the daemon for docker-daemon:, the
// path for a local file that is not there; the other errors of local
// files (a corrupt blob, the wrong transport) say their fix themselves.
func openHint(ref images.Ref, err error, reg []images.Option) string {
	switch ref.Transport {
	case images.Registry:
		if h := serverErrorHint(err, reg); h != "" {
			return h
		}
		if errors.Is(err, images.ErrUnauthorized) {
			return "" // the error names the registry and how to log in (images.LoginHint)
		}
		return "check the reference, the registry and your credentials (docker login)"
	case images.DockerDaemon:
		return "check that the Docker daemon runs and holds the image (docker image ls)"
	}
	if errors.Is(err, os.ErrNotExist) {
		return "check the path"
	}
	return ""
}

// gpuRun turns the --run flags into gpurun's options: the probe's stderr
// lines pass through to the command's, the host probe reads this
// environment's NVIDIA_REQUIRE_CUDA, a registry image's digest is read
// with the same registry options as static validation.
func (o *ValidateOptions) gpuRun(cmd *cobra.Command, ref images.Ref, db *matrix.DB, reg []images.Option) (gpurun.Options, error) {
	me, err := parseEfficiency(o.MinEfficiency)
	if err != nil {
		return gpurun.Options{}, err
	}
	plainHTTP := false
	if ref.Transport == images.Registry {
		if plainHTTP, err = images.PlainHTTP(ref.Name, reg...); err != nil {
			return gpurun.Options{}, invalid(err, "")
		}
	}
	return gpurun.Options{
		Mode: gpurun.Mode(o.Run), Image: ref, ProbeBinary: o.ProbeBinary, ProbeImage: o.ProbeImage,
		Bench: o.Bench, Budget: o.Budget, MinEfficiency: me, MatrixFiles: o.Matrix.Files, DB: db, PlainHTTP: plainHTTP,
		Nodes: o.Nodes, Fabric: strings.Join(o.Fabrics, ","),
		RequireEnv: matrix.RuntimeEnviron(os.Environ()), Stderr: chatter(cmd), Manifest: cmd.OutOrStdout(),
		Digest: func(ctx context.Context) string {
			img, err := images.Open(ctx, ref, reg...)
			if err != nil {
				return ""
			}
			defer img.Close()
			return img.Digest
		},
	}, nil
}

// judgeNCCLLog adds the judgement of a recorded NCCL log (file, when
// given) to rep: against the first fabric, if any.
func judgeNCCLLog(rep *validate.Report, file string, fabrics []matrix.Fabric) error {
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return invalid(fmt.Errorf("--nccl-log: %w", err), "give the saved log of the Job's pod 0 (kubectl logs POD > FILE)")
	}
	defer f.Close()
	t, err := validate.ReadNCCLLog(f)
	if err != nil {
		return invalid(fmt.Errorf("--nccl-log %s: %w", file, err), "")
	}
	var fab *matrix.Fabric
	if len(fabrics) > 0 {
		fab = &fabrics[0]
	}
	rep.Add(t.JudgeAllReduce(fab)...)
	return nil
}

// attachment is what validate attaches: the report (--attach), signed
// (--key), with the SBOM its walk collected (--sbom).
type attachment struct {
	attach bool
	key    string
	sbom   sbom.Format
}

// finishReport renders a report, attaches it if asked (judged on: the
// GPU and driver of a static report), and sets the exit status.
func finishReport(cmd *cobra.Command, rep *validate.Report, ref images.Ref, output string, a attachment, reg []images.Option, on verbs.Judged) error {
	attach, key := a.attach, a.key
	var signer signature.SignerVerifier
	if key != "" {
		if !attach {
			return invalid(errors.New("--key signs the attached report"), "add --attach")
		}
		var err error
		if signer, err = loadSigner(key); err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	var err error
	switch output {
	case "json":
		err = rep.WriteJSON(out)
	case "junit":
		err = rep.WriteJUnit(out)
	default:
		err = rep.WriteTextWidth(out, screenWidth(cmd))
	}
	if err != nil {
		return err
	}
	if attach {
		if ref.Transport != images.Registry {
			return invalid(fmt.Errorf("--attach needs a registry image, not %s", ref.Transport), "validate the pushed image")
		}
		got, err := verbs.AttachValidation(cmd.Context(), ref.Name, rep, on, verbs.AttachSpec{Signer: signer, SBOM: a.sbom, Registry: reg})
		renderAttached(chatter(cmd), ref, rep, a.sbom, got)
		if err != nil {
			return invalid(err, "")
		}
	}
	if rep.Verdict == gpuprobe.NoGPU {
		return &Error{Err: errors.New("no NVIDIA driver or GPU where the probe ran (see the nvidia-driver check)"), Code: ExitNoGPU}
	}
	failed := "validation failed (see the failed checks)"
	if rep.Strict && matrix.Verdict(rep.Checks) != matrix.Fail {
		failed = "validation failed under --strict: a check is unknown or warns (see them above)"
	}
	return verdictError(rep.Verdict, failed)
}

// renderAttached says on w what validate --attach attached.
func renderAttached(w io.Writer, ref images.Ref, rep *validate.Report, f sbom.Format, got *verbs.Attached) {
	if got.Report == "" {
		return
	}
	fmt.Fprintf(w, "gpuimg: attached the %s report (%s) to %s as %s\n", rep.Kind, rep.Verdict, ref, got.Report)
	if s := got.TestResult; s != nil {
		fmt.Fprintf(w, "gpuimg: attached the signed test result to %s as %s\n", s.Digest, s.Referrer)
	}
	if got.SBOM != "" {
		signed := ""
		if got.SBOMSigned {
			signed = ", and as a signed attestation"
		}
		fmt.Fprintf(w, "gpuimg: attached the %s SBOM (from the same read of the layers) to %s as %s%s\n", f, rep.Digest, got.SBOM, signed)
	}
}

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// platformFlag binds a single-value --platform to p, parsed as it is
// given (images.Platform); a bad value is refused naming the flag.
func platformFlag(fs *pflag.FlagSet, p *images.Platform, usage string) {
	fs.Var(&namedValue{Value: p, name: "platform"}, "platform", usage)
}

// namedValue is a typed flag value whose parse error names the flag
// ("--platform: …"), as an invalid-input *Error with no hint: the
// value's own error says how to write it.
type namedValue struct {
	pflag.Value
	name string
}

func (v *namedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return invalid(fmt.Errorf("--%s: %w", v.name, err), "")
	}
	return nil
}

// RegistryOptions are how gpuimg reaches registries: the flags of every
// command that touches one (images *, validate, build).
type RegistryOptions struct {
	// Insecure allows plain HTTP and unverified TLS to every registry.
	Insecure bool
	// InsecureRegistries allows them for the named registries only.
	InsecureRegistries []string
	// CAFile is a PEM file of CA certificates to trust besides the system's.
	CAFile string
	// Retries is how often a transient failure is retried.
	Retries int
	// HeaderTimeout is how long a registry may take to start answering.
	HeaderTimeout time.Duration
	// StallTimeout is how long a request may go without a byte sent, or
	// an answer without 1 KiB received.
	StallTimeout time.Duration
	// Jobs is how many blobs move at once per destination; only commands
	// that move blobs bind it (AddJobsFlag).
	Jobs int

	jobsBound bool
}

// AddFlags binds the options every registry command shares to flags.
func (o *RegistryOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Insecure, "insecure", false, "allow plain HTTP and unverified TLS to every registry (loopback always may use plain HTTP)")
	o.addNamedFlags(fs)
}

// addNamedFlags binds the flags without --insecure, for build: BuildKit
// must be told each insecure registry by name.
func (o *RegistryOptions) addNamedFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.InsecureRegistries, "insecure-registry", nil, "registry reached over plain HTTP or unverified TLS, HOST or HOST:PORT (loopback always may use plain HTTP; repeatable)")
	fs.StringVar(&o.CAFile, "ca-file", "", "PEM file of extra CA certificates to trust (private registries)")
	fs.IntVar(&o.Retries, "retries", 5, "retries of a transient registry failure (connection reset, 408, 429, 5xx), with backoff from 250ms; 0 for none")
	fs.DurationVar(&o.HeaderTimeout, "registry-header-timeout", time.Minute, "how long a registry may take to start answering a request; 0 for no limit")
	fs.DurationVar(&o.StallTimeout, "registry-stall-timeout", time.Minute, "how long a registry may go without taking a byte of a request or sending 1 KiB of an answer; 0 for no limit")
}

// AddJobsFlag binds --jobs, for commands that move blobs.
func (o *RegistryOptions) AddJobsFlag(fs *pflag.FlagSet) {
	fs.IntVar(&o.Jobs, "jobs", 4, "blobs moved at once per destination")
	o.jobsBound = true
}

// Options turns the flags into the images package's options, with
// gpuimg's version as the user agent.
func (o *RegistryOptions) Options() ([]images.Option, error) {
	if o.Retries < 0 {
		return nil, invalid(fmt.Errorf("--retries %d", o.Retries), "give 0 or more")
	}
	if o.HeaderTimeout < 0 || o.StallTimeout < 0 {
		return nil, invalid(fmt.Errorf("--registry-header-timeout %s, --registry-stall-timeout %s", o.HeaderTimeout, o.StallTimeout), "give 0 (no limit) or more")
	}
	if o.jobsBound && o.Jobs <= 0 {
		return nil, invalid(fmt.Errorf("--jobs %d", o.Jobs), "give a positive number")
	}
	if o.CAFile != "" {
		if _, err := os.Stat(o.CAFile); err != nil {
			return nil, invalid(fmt.Errorf("--ca-file: %w", err), "give the PEM file of the registry's CA")
		}
	}
	opts := []images.Option{
		images.WithInsecure(o.Insecure), images.WithInsecureRegistries(o.InsecureRegistries...),
		images.WithCAFile(o.CAFile), images.WithRetries(o.Retries),
		images.WithResponseHeaderTimeout(o.HeaderTimeout), images.WithStallTimeout(o.StallTimeout),
		images.WithUserAgent("gpuimg/" + strings.Trim(buildVersion().Version, "()")), // "(devel)" is no product version
	}
	if o.jobsBound {
		opts = append(opts, images.WithJobs(o.Jobs))
	}
	return opts, nil
}

// optionsFor is Options with the image platform of a --platform flag
// (none when it was not given).
func (o *RegistryOptions) optionsFor(platform *images.Platform) ([]images.Option, error) {
	opts, err := o.Options()
	if err != nil {
		return nil, err
	}
	return append(opts, images.WithPlatform(platform.Get())), nil
}

func newImagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Copy, promote, export and convert images across registries",
		Long: `images moves published images where teams pull them from: one image or a whole
multi-platform index to many registries at once, digests preserved; promotes
a tag only when a passing validation report is attached; exports images for
docker load and cloud image import; recompresses them for faster pulls.

Credentials come from Docker's config.json and credential helpers
(docker login); --ca-file trusts a private CA; --insecure (every registry)
and --insecure-registry HOST (the named ones) allow plain HTTP and
unverified TLS; --retries sets how often transient failures are retried.
validate and build take the same flags.`,
		Example: `  gpuimg images copy ci.example.com/ml/torch:nightly us.example.com/ml/torch:nightly eu.example.com/ml/torch:nightly
  gpuimg images promote ci.example.com/ml/torch:nightly --to stable --require static
  gpuimg images ls ci.example.com/ml/torch`,
	}
	cmd.AddCommand(newCopyCmd(), newExportCmd(), newLsCmd(), newRmCmd(), newPromoteCmd(), newConvertCmd(), newImportCmd(), newInspectCmd())
	return cmd
}

func newCopyCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var dryRun, once, noReferrers bool
	var output, progressMode string
	var platform images.Platform
	cmd := &cobra.Command{
		Use:   "copy SRC DST...",
		Short: "Copy an image or index to one or many registries",
		Long: `copy pushes SRC's manifests unchanged to every DST at once, so digests are the
same everywhere. Blobs a destination already has are skipped, blobs of another
repository on the same registry are mounted, --jobs blobs move in parallel,
and connection resets, 429 and 5xx answers are retried with backoff.

Each destination's tag is written last, after every blob and child manifest
is in place: a copy that fails or is interrupted leaves the tag as it was,
and running it again finishes the job.

What refers to the copied manifests comes along, after them and with the same
digests: signatures, attestations and SBOMs (OCI 1.1 referrers, through the
Referrers API or its sha256-<hex> tag fallback, and cosign v2's .sig, .att and
.sbom tags) and validation reports, so that gpuimg verify and cosign verify
accept the copy with the same key. --no-referrers copies the image alone.

SRC is a registry reference, oci:DIR[:NAME], oci-archive:FILE,
docker-archive:FILE or docker-daemon:REF (files are checked against their
digests as they are read); each DST is a registry reference (write files
with gpuimg images export).`,
		Example: `  # Mirror the nightly to two regions
  gpuimg images copy ci.example.com/ml/torch:nightly us.example.com/ml/torch:nightly eu.example.com/ml/torch:nightly

  # What would move, and how many bytes
  gpuimg images copy --dry-run ci.example.com/ml/torch:nightly registry.example.com/ml/torch:nightly

  # Only the amd64 image of a multi-platform index (a new digest)
  gpuimg images copy --platform linux/amd64 ci.example.com/ml/torch:nightly registry.example.com/ml/torch:amd64`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			opts, err := ro.optionsFor(&platform)
			if err != nil {
				return err
			}
			show, done, err := showProgress(cmd, "copy", progressMode)
			if err != nil {
				return err
			}
			opts = append(opts, images.WithDryRun(dryRun), images.WithReadSourceOnce(once), images.WithReferrers(!noReferrers), show)
			res, err := images.Copy(cmd.Context(), args[0], args[1:], opts...)
			done()
			if err != nil {
				return invalid(err, serverErrorHint(err, opts))
			}
			return renderCopy(cmd.OutOrStdout(), output, res)
		},
	}
	ro.AddFlags(cmd.Flags())
	ro.AddJobsFlag(cmd.Flags())
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would move and how many bytes, write nothing")
	cmd.Flags().BoolVar(&once, "read-source-once", false, "with several destinations, download each source blob once to a local spool and upload from there (for metered or slow links to the source; slower on fast networks)")
	cmd.Flags().BoolVar(&noReferrers, "no-referrers", false, "copy the image alone, without its signatures, attestations, SBOMs and validation reports (its referrers)")
	platformFlag(cmd.Flags(), &platform, "copy only this platform's image from an index (its digest, not the index's)")
	progressFlag(cmd.Flags(), &progressMode)
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

func renderCopy(w io.Writer, output string, res *images.CopyResult) error {
	return render(w, output, res, func() error { return renderCopyText(w, res) })
}

// renderCopyText is renderCopy's text.
func renderCopyText(w io.Writer, res *images.CopyResult) error {
	verb := "copied"
	if res.DryRun {
		verb = "would copy"
	}
	for _, d := range res.Destinations {
		move := d.Bytes - d.PresentBytes
		fmt.Fprintf(w, "%s %s -> %s@%s: %d of %d blobs, %s (%d blobs, %s already there)\n",
			verb, res.Source, d.Ref, d.Digest, d.Blobs-d.Present, d.Blobs, humanize.Bytes(move), d.Present, humanize.Bytes(d.PresentBytes))
		if d.Referrers > 0 {
			fmt.Fprintf(w, "  and %d referrers (signatures, attestations, SBOMs, reports) by digest\n", d.Referrers)
		}
	}
	if !res.DryRun {
		fmt.Fprintf(w, "done in %.1fs\n", res.Duration)
	}
	return nil
}

func newExportCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var format, output, progressMode string
	var platform images.Platform
	cmd := &cobra.Command{
		Use:   "export SRC FILE",
		Short: "Write an image to a file for docker load or cloud image import",
		Long: `export writes an image to FILE (a directory for --format oci), reads the
result back and checks every blob against its digest. The file appears only
when complete, and FILE's directory must exist. REF is a registry reference,
oci:DIR[:NAME], oci-archive:FILE, docker-archive:FILE or docker-daemon:REF.

  oci             an OCI image layout directory (whole index kept, with
                  BuildKit's attestation manifests: provenance, SBOM)
  oci-archive     the same as one tar file (whole index kept)
  docker-archive  docker save's format: docker load, and cloud providers'
                  custom image import (one platform, --platform)`,
		Example: `  gpuimg images export registry.example.com/ml/torch:2.3 torch.tar --format docker-archive
  gpuimg images export oci:build/torch-layout torch.tar --format docker-archive
  gpuimg images export registry.example.com/ml/torch:2.3 torch.oci.tar --format oci-archive`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			opts, err := ro.optionsFor(&platform)
			if err != nil {
				return err
			}
			show, done, err := showProgress(cmd, "export", progressMode)
			if err != nil {
				return err
			}
			res, err := verbs.Export(cmd.Context(), args[0], args[1], images.Format(format), append(opts, show)...)
			done()
			if err != nil {
				return writeError(err, opts)
			}
			w := cmd.OutOrStdout()
			return render(w, output, res, func() error {
				fmt.Fprintf(w, "exported %s (%s) to %s as %s, %s, digests verified\n", res.Source, res.Digest, res.Path, res.Format, humanize.Bytes(res.Size))
				if res.Attestations > 0 {
					fmt.Fprintf(w, "kept %d attestation manifests (provenance, SBOM) in the index; gpuimg images import --target drops them for a target that refuses them\n", res.Attestations)
				}
				return nil
			})
		},
	}
	ro.AddFlags(cmd.Flags())
	ro.AddJobsFlag(cmd.Flags())
	cmd.Flags().StringVar(&format, "format", string(images.FormatOCIArchive), "oci, oci-archive or docker-archive")
	platformFlag(cmd.Flags(), &platform, "platform to export from an index (docker-archive; default linux/amd64)")
	progressFlag(cmd.Flags(), &progressMode)
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

func newLsCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "ls REPO",
		Short: "List a repository's tags with digest, size, creation time, stack and kind",
		Long: `ls lists every tag of a repository, newest first, with its digest, size,
creation time, the stack its dev.gpuimg.stack label records, and its kind:
image or index for what people pull; signature, attestation or sbom for
cosign v2's sha256-<hex>.sig, .att and .sbom tags; referrers for the OCI 1.1
referrers tag fallback (sha256-<hex>, on registries without the Referrers
API). Those tags are marked, not hidden: -o json has the same "kind" field.`,
		Example: "  gpuimg images ls registry.example.com/ml/torch\n  gpuimg images ls registry.example.com/ml/torch -o json | jq -r '.[] | select(.kind == \"image\" or .kind == \"index\") | .tag'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			opts, err := ro.Options()
			if err != nil {
				return err
			}
			tags, err := images.List(cmd.Context(), args[0], opts...)
			if err != nil {
				return invalid(err, "")
			}
			return render(cmd.OutOrStdout(), output, tags, func() error {
				t := newTable(cmd.OutOrStdout(), screenWidth(cmd))
				t.row("TAG", "DIGEST", "SIZE", "CREATED", "STACK", "KIND")
				for _, ti := range tags {
					created := "-"
					if !ti.Created.IsZero() {
						created = ti.Created.Format("2006-01-02 15:04")
					}
					t.row(ti.Tag, ti.Digest[:min(len(ti.Digest), 19)], humanize.Bytes(ti.Size), created, orDash(ti.Stack), string(ti.Kind))
				}
				return t.flush()
			})
		},
	}
	ro.AddFlags(cmd.Flags())
	ro.AddJobsFlag(cmd.Flags())
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

func newRmCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "rm REF...",
		Short: "Delete manifests from their registry",
		Long: `rm deletes each REF's manifest. A tag is resolved to its digest first, so every
tag on that digest goes with it. The registry must allow deletes.`,
		Example: "  gpuimg images rm registry.example.com/ml/torch:nightly-2026-11-01\n  gpuimg images rm registry.example.com/ml/torch:nightly-2026-11-01 -o json",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			opts, err := ro.Options()
			if err != nil {
				return err
			}
			return runRm(cmd, output, args, opts)
		},
	}
	ro.AddFlags(cmd.Flags())
	ro.AddJobsFlag(cmd.Flags())
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

// rmResult is images rm -o json: each manifest deleted, in order.
type rmResult struct {
	Deleted []deletedRef `json:"deleted"`
}

// deletedRef is a reference rm was given and the digest it deleted.
type deletedRef struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

// runRm deletes each of refs; the text names each as it goes, the JSON
// lists them once all are gone (a failure is the error object, which
// names those already deleted).
func runRm(cmd *cobra.Command, output string, refs []string, opts []images.Option) error {
	res := rmResult{Deleted: []deletedRef{}}
	for _, a := range refs {
		d, err := images.Delete(cmd.Context(), a, opts...)
		if err != nil {
			hint := ""
			if len(res.Deleted) > 0 {
				done := make([]string, 0, len(res.Deleted))
				for _, r := range res.Deleted {
					done = append(done, r.Ref)
				}
				hint = "already deleted: " + strings.Join(done, ", ")
			}
			return invalid(err, hint)
		}
		res.Deleted = append(res.Deleted, deletedRef{Ref: a, Digest: d})
		if output != "json" {
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s (%s)\n", a, d)
		}
	}
	if output == "json" {
		return writeJSON(cmd.OutOrStdout(), res)
	}
	return nil
}

func newPromoteCmd() *cobra.Command {
	ro := &RegistryOptions{}
	mo := &MatrixOptions{}
	var to, require, gpu, minDriver, key, output string
	cmd := &cobra.Command{
		Use:   "promote REF --to TAG",
		Short: "Retag an image only if a passing validation report is attached",
		Long: `promote points TAG (in REF's repository) at REF's digest, but only if a gpuimg
validation report attached to that digest (gpuimg validate --attach) passed:

  --require gpu     a report from a run on a GPU (gpuimg validate --run; the default)
  --require static  a static report is enough (gpuimg validate)
  --gpu NAME        the report must be for this GPU: names of the same row of
                    the matrix's GPU table match (h100, H100-SXM, NVML's
                    "NVIDIA H100 80GB HBM3"); a row is one variant, so
                    h100 is the SXM board, not H100-PCIE or H100-NVL
  --min-driver V    the report's driver must be V or newer (e.g. 550)

Otherwise it refuses, exits 1, and names every report it saw and why it did
not count.

With --key, the decision is recorded either way as a signed SLSA verification
summary (predicate https://slsa.dev/verification_summary/v1, PASSED or FAILED)
in a plain DSSE envelope, attached to the digest (artifact type
application/vnd.dsse.envelope.v1+json) before the tag moves; slsa-verifier
verify-vsa checks it (docs/supply-chain.md).`,
		Example: `  gpuimg validate registry.example.com/ml/torch:nightly --attach
  gpuimg images promote registry.example.com/ml/torch:nightly --to stable --require static
  gpuimg validate registry.example.com/ml/torch:nightly --run docker --bench --attach
  gpuimg images promote registry.example.com/ml/torch:nightly --to stable --gpu h100 --min-driver 550
  gpuimg images promote registry.example.com/ml/torch:nightly --to stable --require static --key cosign.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			if to == "" {
				return invalid(errors.New("--to is required"), "name the tag to promote to, e.g. --to stable")
			}
			if require != "gpu" && require != "static" {
				return invalid(fmt.Errorf("--require %q", require), "use gpu or static")
			}
			policy := validate.PromotionPolicy{Require: require, GPU: gpu}
			if minDriver != "" {
				v, err := matrix.ParseVersion(minDriver)
				if err != nil {
					return invalid(fmt.Errorf("--min-driver %q", minDriver), "give a driver version such as 550 or 535.104.05")
				}
				policy.MinDriver = v
			}
			var err error
			if policy.DB, err = mo.Load(); err != nil {
				return err
			}
			opts, err := ro.Options()
			if err != nil {
				return err
			}
			var signer signature.SignerVerifier
			if key != "" {
				if signer, err = loadSigner(key); err != nil {
					return err
				}
			}
			return runPromote(cmd, output, promoteRequest{ref: args[0], to: to, policy: policy, signer: signer}, opts)
		},
	}
	ro.AddFlags(cmd.Flags())
	ro.AddJobsFlag(cmd.Flags())
	mo.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&key, "key", "", "record the decision as a signed SLSA verification summary (DSSE envelope) attached to the image, signed with this private key (a cosign key file, password from COSIGN_PASSWORD, a PEM key, or env://VAR; ECDSA or RSA for slsa-verifier)")
	cmd.Flags().StringVar(&to, "to", "", "tag to point at the image (in the same repository)")
	cmd.Flags().StringVar(&require, "require", "gpu", "report needed: gpu or static")
	stackFlag(cmd.Flags(), &gpu, "gpu", "h100", "the report must be for this GPU")
	cmd.Flags().StringVar(&minDriver, "min-driver", "", "the report's driver must be this version or newer")
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

// promoteRequest is what images promote was asked: move tag to to
// ref's digest under policy, recording the decision when signer is set.
type promoteRequest struct {
	ref, to string
	policy  validate.PromotionPolicy
	signer  signature.SignerVerifier
}

// promoteResult is images promote -o json: whether the tag moved, what
// promote said, and the signed decision when --key recorded one (its
// vsa is SLSA's verification summary, in SLSA's spelling).
type promoteResult struct {
	Ref      string          `json:"ref"`
	Tag      string          `json:"tag"`
	Promoted bool            `json:"promoted"`
	Message  string          `json:"message"`
	Recorded *verbs.Decision `json:"recorded,omitempty"`
}

// runPromote promotes, recording the decision with a signer, and renders
// the outcome: a refusal is exit 1, with its result under -o json.
func runPromote(cmd *cobra.Command, output string, req promoteRequest, opts []images.Option) error {
	res := promoteResult{Ref: req.ref, Tag: req.to}
	var err error
	if req.signer != nil {
		var d *verbs.Decision
		d, err = verbs.PromoteRecorded(cmd.Context(), req.ref, req.to, req.policy, verbs.VSASpec{Signer: req.signer, Version: strings.Trim(buildVersion().Version, "()")}, opts...)
		if d != nil {
			fmt.Fprintf(chatter(cmd), "gpuimg: recorded a %s verification summary of %s for %s as %s\n", d.VSA.VerificationResult, d.Digest, d.VSA.ResourceURI, d.Referrer)
			res.Message, res.Recorded = d.Message, d
		}
	} else {
		res.Message, err = verbs.Promote(cmd.Context(), req.ref, req.to, req.policy, opts...)
	}
	res.Promoted = err == nil
	if err != nil && !errors.Is(err, images.ErrNotPromoted) {
		return promoteError(err)
	}
	if err != nil {
		res.Message = err.Error()
	}
	if output == "json" {
		if jerr := writeJSON(cmd.OutOrStdout(), res); jerr != nil {
			return jerr
		}
	} else if err == nil {
		fmt.Fprintf(cmd.OutOrStdout(), "promoted %s\n", res.Message)
	}
	if err != nil {
		return promoteError(err)
	}
	return nil
}

func newConvertCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var comp, output, prioritize, progressMode string
	var platform images.Platform
	cmd := &cobra.Command{
		Use:   "convert SRC DST --compression zstd|estargz|gzip",
		Short: "Recompress an image's layers for faster pulls or lazy pulling",
		Long: `convert recompresses every layer of SRC (a registry reference, oci:DIR,
oci-archive:FILE, docker-archive:FILE or docker-daemon:REF) and pushes the
result to DST as an OCI image, reporting the sizes before and after. The files in the layers are
unchanged; the layer digests change (for estargz the diff IDs too, since it
rewrites each tar with a table of contents).

  zstd     decompresses several times faster than gzip (containerd 1.5+, Docker 23+)
  estargz  gzip-compatible layers with a table of contents, so the stargz
           snapshotter can start containers before the whole image is pulled
  gzip     back to the most compatible form

--prioritize FILE (estargz only) lists the files a container reads at start,
one path per line as a start trace records them (docs/startup.md); each layer
puts those it has first, before its prefetch landmark, so stargz-snapshotter
fetches them before the container starts.`,
		Example: `  gpuimg images convert registry.example.com/ml/torch:2.3 registry.example.com/ml/torch:2.3-zstd --compression zstd
  gpuimg images convert registry.example.com/ml/torch:2.3 registry.example.com/ml/torch:2.3-esgz --compression estargz --prioritize prefetch.txt`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			opts, err := ro.optionsFor(&platform)
			if err != nil {
				return err
			}
			if prioritize != "" {
				files, err := readPrioritized(prioritize, comp)
				if err != nil {
					return err
				}
				opts = append(opts, images.WithPrioritizedFiles(files...))
			}
			show, done, err := showProgress(cmd, "convert", progressMode)
			if err != nil {
				return err
			}
			res, err := verbs.Convert(cmd.Context(), args[0], args[1], matrix.Compression(comp), append(opts, show)...)
			done()
			if err != nil {
				return writeError(err, opts)
			}
			return render(cmd.OutOrStdout(), output, res, func() error {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "converted %s to %s (%s, %d layers): %s -> %s (%+.1f%%), %s\n", res.Source, res.Destination, res.Compression, res.Layers,
					humanize.Bytes(res.SizeBefore), humanize.Bytes(res.SizeAfter), 100*float64(res.SizeAfter-res.SizeBefore)/float64(max(res.SizeBefore, 1)), res.Digest)
				return err
			})
		},
	}
	ro.AddFlags(cmd.Flags())
	ro.AddJobsFlag(cmd.Flags())
	cmd.Flags().StringVar(&comp, "compression", "zstd", "zstd, estargz or gzip")
	platformFlag(cmd.Flags(), &platform, "platform to convert from an index (default linux/amd64)")
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	cmd.Flags().StringVar(&prioritize, "prioritize", "", "estargz: file listing the paths to put first and prefetch, one a line")
	progressFlag(cmd.Flags(), &progressMode)
	return cmd
}

// readPrioritized reads --prioritize's file: one path a line; blank lines
// and lines starting with # are skipped.
func readPrioritized(file, comp string) ([]string, error) {
	if comp != string(matrix.CompressionEstargz) {
		return nil, invalid(fmt.Errorf("--prioritize applies to --compression estargz, not %s", comp), "drop --prioritize or use --compression estargz")
	}
	b, err := bound.ReadFile(file, "", bound.MaxUserFile)
	if err != nil {
		return nil, invalid(fmt.Errorf("read --prioritize file: %w", err), "give a file of paths, one a line (bench-startup -keep DIR writes DIR/prefetch.txt)")
	}
	var files []string
	for l := range strings.SplitSeq(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			files = append(files, l)
		}
	}
	return files, nil
}

// writeError is the exit of export or convert: 1 when the image's
// layers would escape the root when extracted (the answer is no, as for a
// refused import), else 2, with serverErrorHint's words for a registry
// that answered 5xx to every try.
func writeError(err error, reg []images.Option) error {
	if errors.Is(err, validate.ErrUnsafePaths) {
		return &Error{Err: err, Hint: "the image is unsafe to unpack; gpuimg validate names the entries under unsafe-paths", Code: ExitFailed}
	}
	return invalid(err, serverErrorHint(err, reg))
}

// promoteError is a refused promotion's exit (1) or another failure's.
func promoteError(err error) error {
	if errors.Is(err, images.ErrNotPromoted) {
		return &Error{Err: err, Code: ExitFailed}
	}
	return invalid(err, "")
}

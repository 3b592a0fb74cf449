package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// ImportOptions are the flags of gpuimg images import.
type ImportOptions struct {
	Matrix   MatrixOptions
	Registry RegistryOptions
	Target   string
	// GPU narrows the target's GPU list to the GPUs the hosts have
	// (matrix.DB.NarrowTarget).
	GPU    string
	To     string
	DryRun bool
	Output string
	// Progress is --progress: auto, plain or quiet.
	Progress string
	// Key signs the pushed image (gpuimg sign's --key); Format is
	// --signature-format.
	Key, Format string
}

func newImportCmd() *cobra.Command {
	o := &ImportOptions{}
	cmd := &cobra.Command{
		Use:   "import SRC --target NAME --to REF",
		Short: "Push an image to a cloud GPU provider in the form its fleet accepts",
		Long: `import validates SRC for a target fleet (gpuimg matrix list targets, or a
--matrix-file row of your own), converts what the provider needs, and pushes
it, so a rejected image fails here and not after a 20-minute upload.

1. Validate: everything validate --target checks, the target's checks and
   the others (credentials in the image, tar entries escaping the root,
   NVIDIA_REQUIRE_CUDA). What no conversion fixes refuses the import before
   a byte is pushed, with every reason: a platform
   the image lacks (arm64-only for an amd64 fleet), a size over the limit,
   CUDA above the fleet's driver even under minor-version compatibility,
   missing kernels for the fleet's GPUs, a broken runtime contract.
2. Convert, recording every change: OCI to Docker schema 2 media types (or
   back), zstd layers to gzip, attestation manifests dropped, the fleet's
   platform picked out of an index. The layers' content (diff IDs) is
   unchanged and checked; the manifest digest changes, and the source's
   digest is kept in the image label ` + images.SourceDigestLabel + `.
3. Push with the tag written last (retries as images copy). An image that
   needs no change is pushed byte for byte, digest kept.
4. With --key, sign the pushed image by digest as gpuimg sign does. A
   conversion changes the digest, and the source's signatures, attestations
   and SBOMs are about the old one: without --key the output says so (the
   JSON's "signatures"), and the new image is unsigned.
5. Print the reference to paste into the provider (REPO@DIGEST).

SRC is a registry reference, oci:DIR[:NAME], oci-archive:FILE,
docker-archive:FILE (docker save) or docker-daemon:REF. Credentials come from
Docker's config.json and credential helpers; a 401/403 says how to log in
(aws ecr get-login-password for ECR, gcloud auth configure-docker for
*-docker.pkg.dev).

Exit status: 0 pushed (or --dry-run passed), 1 refused (nothing pushed),
2 could not run.`,
		Example: `  # What would change for SageMaker p5, without pushing
  gpuimg images import docker-archive:model.tar --target sagemaker/p5 --to 123456789012.dkr.ecr.us-east-1.amazonaws.com/model:v1 --dry-run

  # Convert and push a BuildKit OCI image (zstd, provenance index) for SageMaker
  gpuimg images import ci.example.com/ml/model:v1 --target sagemaker/p5 --to 123456789012.dkr.ecr.us-east-1.amazonaws.com/model:v1

  # In CI: JSON with the digest to deploy
  gpuimg images import oci-archive:model.oci.tar --target vertex/serving --to us-docker.pkg.dev/proj/ml/model:v1 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			if o.Target == "" || o.To == "" {
				return invalid(errors.New("import needs --target and --to"), "e.g. --target sagemaker/p5 --to ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG")
			}
			db, err := o.Matrix.Load()
			if err != nil {
				return err
			}
			t, err := db.Target(o.Target)
			if err != nil {
				return invalid(fmt.Errorf("--target: %w", err), "")
			}
			if t, _, err = db.NarrowTarget(t, o.GPU); err != nil {
				return invalid(fmt.Errorf("--gpu: %w", err), "")
			}
			reg, err := o.Registry.Options()
			if err != nil {
				return err
			}
			f, err := sign.ParseFormat(o.Format)
			if err != nil {
				return invalid(err, "")
			}
			var signer signature.SignerVerifier
			if o.Key != "" {
				if signer, err = loadSigner(o.Key); err != nil {
					return err
				}
			}
			signOpts := []sign.Option{sign.WithFormat(f), sign.WithRegistryOptions(reg...)}
			show, done, err := showProgress(cmd, "import", o.Progress)
			if err != nil {
				return err
			}
			defer done()
			reg = append(reg, images.WithDryRun(o.DryRun), show)
			res, err := verbs.ImportSigned(cmd.Context(), args[0], t, o.To, db, signer, signOpts, reg...)
			if res != nil {
				if rerr := renderImport(cmd.OutOrStdout(), o.Output, res); rerr != nil {
					return rerr
				}
			}
			if errors.Is(err, images.ErrRefused) || errors.Is(err, validate.ErrUnsafePaths) {
				return &Error{Err: err, Hint: "fix the failed checks above and import again", Code: ExitFailed}
			}
			if err != nil {
				hint := serverErrorHint(err, reg) // other registry errors name the registry and how to log in
				if ref, perr := images.ParseRef(args[0]); perr == nil && ref.Transport != images.Registry {
					hint = openHint(ref, err, reg)
				}
				return invalid(err, hint)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	o.Matrix.AddFlags(fs)
	fs.StringVar(&o.Target, "target", "", "the fleet to import for, as gpuimg matrix list targets names it (sagemaker/p5) or a --matrix-file row")
	stackFlag(fs, &o.GPU, "gpu", "h100", "the GPUs of the fleet your hosts have (h100, or several: l4,a10g): only their kernels are checked (the target's GPU list narrowed)")
	fs.StringVar(&o.To, "to", "", "destination tag in the registry the provider pulls from (REPO:TAG)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "validate and say what would change; push nothing")
	fs.StringVar(&o.Key, "key", "", "sign the pushed image with this private key (a cosign key file, password from COSIGN_PASSWORD, or a PEM key), as gpuimg sign does")
	fs.StringVar(&o.Format, "signature-format", string(sign.FormatBundle), "with --key: bundle (cosign v3, an OCI referrer), legacy (cosign v2's .sig tag) or both")
	o.Registry.AddFlags(fs)
	o.Registry.AddJobsFlag(fs)
	outputFlag(fs, &o.Output, "output", "text", "json")
	progressFlag(fs, &o.Progress)
	return cmd
}

func renderImport(w io.Writer, output string, res *verbs.Signed) error {
	return render(w, output, res, func() error { return renderImportText(w, res) })
}

// renderImportText is renderImport's text.
func renderImportText(w io.Writer, s *verbs.Signed) error {
	res := s.ImportResult
	fmt.Fprintf(w, "import %s (%s) for %s\n", res.Source, res.SourceDigest, res.Target)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(res.Changes) == 0 {
		fmt.Fprintln(tw, "  no change: the target takes the image as it is")
	}
	for _, c := range res.Changes {
		fmt.Fprintf(tw, "  change\t%s\t%s -> %s\n", c.What, c.From, c.To)
	}
	for _, c := range res.Checks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", strings.ToUpper(string(c.Status)), c.Name, c.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case res.Verdict == matrix.Fail:
		_, err := fmt.Fprintln(w, "refused: nothing pushed")
		return err
	case res.DigestChanged && res.DryRun:
		fmt.Fprintf(w, "the conversion will change the manifest digest; the source's (%s) will be kept in the label %s\n", res.SourceDigest, res.SourceLabel)
	case res.DigestChanged:
		fmt.Fprintf(w, "the conversion changed the manifest digest: %s -> %s; the source's is kept in the label %s\n", res.SourceDigest, res.Digest, res.SourceLabel)
	}
	if res.DryRun {
		fmt.Fprintf(w, "dry run: would push to %s\n", res.Tag)
	} else {
		fmt.Fprintf(w, "pushed %s (%s of layers) in %.1fs\n", res.Tag, humanize.Bytes(res.Bytes), res.Duration)
	}
	if s.Signatures != "" {
		fmt.Fprintf(w, "signatures: %s\n", s.Signatures)
	}
	if res.DryRun {
		return nil
	}
	_, err := fmt.Fprintf(w, "reference to paste: %s\ndigest: %s\n", res.Ref, res.Digest)
	return err
}

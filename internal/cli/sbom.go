package cli

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/sbom"
)

// SBOMOptions are the flags of gpuimg sbom.
type SBOMOptions struct {
	Matrix   MatrixOptions
	Platform images.Platform
	Output   string
	File     string
	Attach   bool
	Key      string
	Registry RegistryOptions
	Progress string // --progress: auto, plain or quiet
}

// AddFlags binds the options to flags.
func (o *SBOMOptions) AddFlags(fs *pflag.FlagSet) {
	o.Matrix.AddFlags(fs)
	platformFlag(fs, &o.Platform, "platform to judge, read from a multi-platform image; a single image must be it (default linux/amd64)")
	outputFlag(fs, &o.Output, "output", string(sbom.SPDXJSON), string(sbom.CycloneDXJSON))
	fs.StringVar(&o.File, "file", "", "write the SBOM to this file (atomically) instead of stdout")
	fs.BoolVar(&o.Attach, "attach", false, "push the SBOM to the registry as an OCI referrer of the image (artifact type application/spdx+json or application/vnd.cyclonedx+json, one layer: what trivy --sbom-sources oci reads)")
	fs.StringVar(&o.Key, "key", "", "with --attach: also push the SBOM as an in-toto attestation (predicate https://spdx.dev/Document or https://cyclonedx.org/bom) signed with this private key (a cosign key file, password from COSIGN_PASSWORD, a PEM key, or env://VAR), which gpuimg verify --require sbom and cosign verify-attestation --type spdxjson|cyclonedx check")
	o.Registry.AddFlags(fs)
	progressFlag(fs, &o.Progress)
}

func newSBOMCmd() *cobra.Command {
	o := &SBOMOptions{}
	cmd := &cobra.Command{
		Use:   "sbom IMAGE",
		Short: "Write an SBOM of the whole GPU stack: OS packages, Python distributions, CUDA libraries with their GPU architectures",
		Long: `sbom reads every layer of an image once, as validate does (and validates it in
the same pass), and writes a software bill of materials: dpkg's packages, every
Python distribution (torch with its CUDA variant, the nvidia-* wheels), and the
CUDA components found by file (libraries by soname and version with the GPU
architectures compiled into them, TensorRT, version.json's components), with
NVIDIA_REQUIRE_CUDA, the driver floor and the base image. Formats: SPDX 2.3
JSON (default) and CycloneDX 1.6 JSON. See docs/sbom.md.

IMAGE is a registry reference, oci:DIR[:NAME], oci-archive:FILE,
docker-archive:FILE or docker-daemon:REF; --attach needs a registry image.`,
		Example: `  gpuimg sbom registry.example.com/ml/torch:2.3-cu122 > torch.spdx.json
  gpuimg sbom oci-archive:torch.tar -o cyclonedx-json --file torch.cdx.json
  gpuimg sbom registry.example.com/ml/torch:2.3-cu122 --attach   # then: trivy image --sbom-sources oci …
  gpuimg sbom registry.example.com/ml/torch:2.3-cu122 --attach --key cosign.key   # then: cosign verify-attestation --type spdxjson …`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, spec, reg, err := o.parse(cmd.Flags(), args[0])
			if err != nil {
				return err
			}
			var att *verbs.SignerAttester
			if o.Key != "" {
				sv, err := loadSigner(o.Key)
				if err != nil {
					return err
				}
				att = &verbs.SignerAttester{Signer: sv, Options: []sign.Option{sign.WithRegistryOptions(reg...)}}
			}
			show, done, err := showProgress(cmd, "sbom", o.Progress)
			if err != nil {
				return err
			}
			doc, err := verbs.SBOM(cmd.Context(), ref, spec, append(slices.Clip(reg), show)...)
			done()
			if err != nil {
				return sbomError(ref, err, reg)
			}
			if err := o.write(cmd, doc); err != nil {
				return err
			}
			if !o.Attach {
				return nil
			}
			var a verbs.Attester
			if att != nil {
				a = att
			}
			d, err := verbs.AttachSBOM(cmd.Context(), ref.Name, doc, a, reg...)
			if err != nil {
				return invalid(err, "")
			}
			fmt.Fprintf(chatter(cmd), "gpuimg: attached the %s SBOM to %s as %s\n", doc.Format, ref, d)
			for _, s := range att.Signed() {
				fmt.Fprintf(chatter(cmd), "gpuimg: attested it (%s), signed, to %s as %s\n", s.PredicateType, s.Digest, s.Referrer)
			}
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// parse checks the flags and the reference and loads the matrix.
func (o *SBOMOptions) parse(fs *pflag.FlagSet, image string) (images.Ref, verbs.SBOMSpec, []images.Option, error) {
	var spec verbs.SBOMSpec
	if err := checkFormat(fs); err != nil {
		return images.Ref{}, spec, nil, err
	}
	ref, err := images.ParseRef(image)
	if err != nil {
		return ref, spec, nil, invalid(err, "")
	}
	if o.Key != "" && !o.Attach {
		return ref, spec, nil, invalid(errors.New("--key signs the attached SBOM"), "add --attach")
	}
	if o.Attach && ref.Transport != images.Registry {
		return ref, spec, nil, invalid(fmt.Errorf("--attach needs a registry image, not %s", ref.Transport), "write the SBOM of the pushed image")
	}
	db, err := o.Matrix.Load()
	if err != nil {
		return ref, spec, nil, err
	}
	reg, err := o.Registry.Options()
	if err != nil {
		return ref, spec, nil, err
	}
	spec = verbs.SBOMSpec{Options: validate.Options{Name: ref.String(), DB: db}, Platform: o.Platform.Get(), Format: sbom.Format(o.Output)}
	return ref, spec, reg, nil
}

// write puts the SBOM on stdout or, with --file, atomically in the file.
func (o *SBOMOptions) write(cmd *cobra.Command, doc *verbs.SBOMDoc) error {
	if o.File == "" {
		_, err := cmd.OutOrStdout().Write(doc.Document)
		return err
	}
	if err := atomicfile.Write(o.File, doc.Document); err != nil {
		return invalid(fmt.Errorf("write the SBOM: %w", err), "check that the directory exists and is writable")
	}
	return nil
}

// sbomError names the step that failed, as validate does.
func sbomError(ref images.Ref, err error, reg []images.Option) error {
	var ve *verbs.Error
	var pe *images.PlatformError
	switch {
	case errors.As(err, &pe):
		return wrongPlatform("sbom", pe)
	case errors.As(err, &ve) && ve.Step == verbs.Opening:
		return invalid(ve.Err, openHint(ref, ve.Err, reg))
	case errors.As(err, &ve):
		return invalid(fmt.Errorf("read %s: %w", ref, ve.Err), "")
	}
	return invalid(err, "")
}

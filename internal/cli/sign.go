package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/spf13/cobra"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/verbs"
)

// loadSigner reads a private key for signing (sign.LoadPrivateKey); an
// encrypted cosign key's password comes from COSIGN_PASSWORD, as cosign's
// does.
func loadSigner(path string) (signature.SignerVerifier, error) {
	sv, err := verbs.LoadSigner(path)
	if errors.Is(err, sign.ErrKMSUnsupported) {
		return nil, invalid(err, "pass an awskms:// key, a cosign key file or a PEM key, or sign with cosign sign --key "+path)
	}
	if err != nil {
		return nil, invalid(fmt.Errorf("--key %s: %w", path, err), "")
	}
	return sv, nil
}

func newSignCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var key, format, output string
	cmd := &cobra.Command{
		Use:   "sign IMAGE --key KEY",
		Short: "Sign an image (an index and each platform) in cosign's format",
		Long: `sign resolves IMAGE to its digest and signs that manifest, and for a
multi-platform index each platform's manifest too, with a private key.

What is written (docs/supply-chain.md has the whole picture):
  bundle (default)  cosign v3's format: an in-toto statement about the digest
                    (predicate https://sigstore.dev/cosign/sign/v1), DSSE-signed in
                    a Sigstore bundle, pushed as an OCI 1.1 referrer of the image
                    (artifactType application/vnd.dev.sigstore.bundle.v0.3+json);
                    registries without the Referrers API get the sha256-<hex> tag
                    index instead
  legacy            cosign v2's sha256-<hex>.sig tag, which older verifiers (cosign
                    < 3, many admission controllers, NGC's users) read
  both              both of them

Keys: a cosign key file (cosign generate-key-pair; its password from
COSIGN_PASSWORD), a PEM private key (PKCS#8 ECDSA, ed25519 or RSA), or
env://VAR, the key's PEM in the environment variable VAR (as CI holds a
secret), or an AWS KMS key, awskms:///alias/NAME (or a key ID or ARN;
credentials, region and AWS_ENDPOINT_URL_KMS from the AWS SDK's usual
environment). Other KMS URIs (gcpkms://, azurekms://, hashivault://) are
not supported.

BuildKit's SLSA v1 provenance (gpuimg build --provenance), which BuildKit
stores unsigned in the index as attestation manifests, is signed too: each
statement is attached, signed, as a cosign attestation (predicate
https://slsa.dev/provenance/v1) of its platform manifest and of the index, for
cosign verify-attestation --type slsaprovenance1 and gpuimg verify --require
provenance.

Nothing goes to a transparency log: verify with gpuimg verify --key, or with
cosign verify --key cosign.pub --insecure-ignore-tlog.`,
		Example: `  cosign generate-key-pair          # cosign.key + cosign.pub
  COSIGN_PASSWORD=… gpuimg sign registry.example.com/ml/torch:2.3-cu122 --key cosign.key
  gpuimg sign registry.example.com/ml/torch:2.3-cu122 --key cosign.key --signature-format both
  gpuimg verify registry.example.com/ml/torch:2.3-cu122 --key cosign.pub
  cosign verify --key cosign.pub --insecure-ignore-tlog registry.example.com/ml/torch:2.3-cu122`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return invalid(errors.New("--key is required"), "pass a private key: --key cosign.key (cosign generate-key-pair makes one)")
			}
			f, err := sign.ParseFormat(format)
			if err != nil {
				return invalid(err, "")
			}
			signer, err := loadSigner(key)
			if err != nil {
				return err
			}
			reg, err := ro.Options()
			if err != nil {
				return err
			}
			res, err := sign.Sign(cmd.Context(), args[0], signer, sign.WithFormat(f), sign.WithRegistryOptions(reg...))
			if err != nil {
				return invalid(err, "")
			}
			w := cmd.OutOrStdout()
			return render(w, output, res, func() error { return renderSigned(w, res) })
		},
	}
	ro.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&key, "key", "", "private key: a cosign key file (password from COSIGN_PASSWORD), a PEM private key, env://VAR, or an AWS KMS key (awskms:///alias/NAME)")
	cmd.Flags().StringVar(&format, "signature-format", string(sign.FormatBundle), "bundle (cosign v3, an OCI referrer), legacy (cosign v2's .sig tag) or both")
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

func renderSigned(w io.Writer, res []sign.Signed) error {
	for _, s := range res {
		var where []string
		if s.Referrer != "" {
			where = append(where, "bundle "+s.Referrer)
		}
		if s.LegacyTag != "" {
			where = append(where, "tag "+s.LegacyTag[strings.LastIndex(s.LegacyTag, ":")+1:])
		}
		verb := "signed"
		if s.Provenance != "" {
			verb = "attested BuildKit's provenance (" + s.Provenance + ") of"
		}
		if _, err := fmt.Fprintf(w, "%s %s (%s)\n", verb, s.Digest, strings.Join(where, ", ")); err != nil {
			return err
		}
	}
	return nil
}

func newVerifyCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var key, require, output string
	cmd := &cobra.Command{
		Use:   "verify IMAGE --key PUB",
		Short: "Check an image's signatures and signed attestations offline",
		Long: `verify resolves IMAGE to its digest and checks, with a public key and
nothing else (no transparency log, no network beyond the registry), every
signature and signed in-toto statement attached to that digest: cosign v3
bundles (found through the Referrers API or its tag fallback) and cosign v2
.sig signatures, whoever made them (gpuimg sign, cosign sign, cosign attest).

--require lists the evidence the image must carry, each signed by the key and
about this digest; verify exits 1 naming each that is missing or does not
verify:
  signature   a signature (gpuimg sign, cosign sign)
  sbom        an SBOM attestation (https://spdx.dev/Document or
              https://cyclonedx.org/bom)
  provenance  SLSA v1 provenance (https://slsa.dev/provenance/v1)
  validation  a test result (https://in-toto.io/attestation/test-result/v0.1,
              gpuimg validate --attach --key) whose result is PASSED

A tag moved to another image, or an image rebuilt with another layer, has
another digest, and none of the old signatures count for it.`,
		Example: `  gpuimg verify registry.example.com/ml/torch:2.3-cu122 --key cosign.pub
  gpuimg verify registry.example.com/ml/torch:2.3-cu122 --key cosign.pub --require signature,validation
  gpuimg verify registry.example.com/ml/torch@sha256:… --key cosign.pub -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return invalid(errors.New("--key is required"), "pass the signer's public key: --key cosign.pub")
			}
			req, err := verbs.ParseEvidence(require)
			if err != nil {
				return invalid(err, "")
			}
			pub, err := sign.LoadPublicKeyContext(cmd.Context(), key)
			if err != nil {
				return invalid(err, "")
			}
			reg, err := ro.Options()
			if err != nil {
				return err
			}
			v, err := verbs.VerifyImage(cmd.Context(), args[0], pub, req, sign.WithRegistryOptions(reg...))
			if err != nil {
				return invalid(err, "")
			}
			w := cmd.OutOrStdout()
			if err := render(w, output, v, func() error { return renderVerification(w, v) }); err != nil {
				return err
			}
			if !v.OK() {
				return &Error{Err: fmt.Errorf("%s: %s", args[0], missingText(v)), Code: ExitFailed}
			}
			return nil
		},
	}
	ro.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&key, "key", "", "public key of the signer (PEM: cosign.pub, env://VAR, or an AWS KMS key, awskms:///alias/NAME, whose public key is fetched from KMS)")
	cmd.Flags().StringVar(&require, "require", string(verbs.EvidenceSignature), "evidence the image must carry, comma-separated: signature, sbom, provenance, validation")
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

func missingText(v *verbs.Verification) string {
	var parts []string
	for _, e := range v.Required {
		if why, ok := v.Missing[e]; ok {
			parts = append(parts, fmt.Sprintf("%s: %s", e, why))
		}
	}
	return strings.Join(parts, "; ")
}

func renderVerification(w io.Writer, v *verbs.Verification) error {
	fmt.Fprintf(w, "%s (%s)\n", v.Ref, v.Digest)
	if len(v.Statements) == 0 {
		fmt.Fprintln(w, "  no signatures or attestations attached")
	}
	for _, s := range v.Statements {
		mark := "ok  "
		if !s.Verified {
			mark = "FAIL"
		}
		line := fmt.Sprintf("  %s %s [%s] %s", mark, s.PredicateType, s.Format, s.Source)
		if s.Error != "" {
			line += ": " + s.Error
		}
		fmt.Fprintln(w, line)
	}
	for _, e := range v.Required {
		if why, ok := v.Missing[e]; ok {
			fmt.Fprintf(w, "  missing %s: %s\n", e, why)
		} else {
			fmt.Fprintf(w, "  has %s\n", e)
		}
	}
	return nil
}

package verbs

import (
	"context"
	"encoding/json"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/sbom"
)

// Judged is the GPU and driver a static report was checked against,
// recorded with it for promotion; empty ones are left out.
type Judged struct {
	GPU, Driver string
}

// AttachReport attaches rep to the registry image ref names as an OCI
// referrer (images.AttachReport), annotated with its kind, verdict and
// date, and with the GPU and driver it was judged on: a GPU run's own (its
// first GPU, its driver), else on's. It returns the referrer's digest.
func AttachReport(ctx context.Context, ref string, rep *validate.Report, on Judged, opts ...images.Option) (string, error) {
	payload, err := json.Marshal(rep)
	if err != nil {
		return "", err
	}
	if rep.Probe != nil && len(rep.Probe.GPUs) > 0 {
		on.GPU = rep.Probe.GPUs[0].Name
	}
	if rep.Probe != nil && rep.Probe.Driver != nil {
		on.Driver = rep.Probe.Driver.Version
	}
	meta := images.ReportMeta{Kind: rep.Kind, Verdict: string(rep.Verdict), Created: rep.Created, GPU: on.GPU, Driver: on.Driver}
	return images.AttachReport(ctx, ref, payload, meta, opts...)
}

// AttachSpec is what AttachValidation attaches besides the report.
type AttachSpec struct {
	// Signer, when set, also attaches the report as a signed test-result
	// statement (AttestReport) and the SBOM as a signed attestation.
	Signer signature.SignerVerifier
	// SBOM, when set, attaches the SBOM of the inventory the report's
	// walk collected (validate.Options.Inventory), in this format.
	SBOM sbom.Format
	// Registry are the registry options.
	Registry []images.Option
}

// Attached is what AttachValidation attached; on an error it holds what
// was attached before it.
type Attached struct {
	// Report is the plain report referrer's digest.
	Report string
	// TestResult is the signed test-result statement (with a Signer).
	TestResult *sign.Signed
	// SBOM is the plain SBOM referrer's digest (with an SBOM format);
	// SBOMSigned says it was attested with the Signer too.
	SBOM       string
	SBOMSigned bool
}

// AttachValidation attaches the evidence of one validation to the
// registry image ref names, in this order: the report (AttachReport,
// judged on on), its signed test result (AttestReport) with
// spec.Signer, and the SBOM of its walk's inventory (ReportSBOM,
// AttachSBOM) with spec.SBOM: the validation and the SBOM come from one
// read of the layers. validate --attach calls it; publish attaches its
// reports with it and signs with SignImage.
func AttachValidation(ctx context.Context, ref string, rep *validate.Report, on Judged, spec AttachSpec) (*Attached, error) {
	out := &Attached{}
	var err error
	if out.Report, err = AttachReport(ctx, ref, rep, on, spec.Registry...); err != nil {
		return out, err
	}
	if spec.Signer != nil {
		s, err := AttestReport(ctx, ref, rep, spec.Signer, sign.WithRegistryOptions(spec.Registry...))
		if err != nil {
			return out, err
		}
		out.TestResult = &s
	}
	if spec.SBOM == "" {
		return out, nil
	}
	doc, err := ReportSBOM(ref, rep, spec.SBOM)
	if err != nil {
		return out, err
	}
	var att Attester
	if spec.Signer != nil {
		att = &SignerAttester{Signer: spec.Signer, Options: []sign.Option{sign.WithRegistryOptions(spec.Registry...)}}
	}
	d, err := AttachSBOM(ctx, ref, doc, att, spec.Registry...)
	if err != nil {
		return out, err
	}
	out.SBOM, out.SBOMSigned = d, att != nil
	return out, nil
}

// Promote points tag (in ref's repository) at ref's digest if policy
// accepts one of the reports attached to it (images.Promote); otherwise
// it refuses with images.ErrNotPromoted, naming every report it saw.
func Promote(ctx context.Context, ref, tag string, policy validate.PromotionPolicy, opts ...images.Option) (string, error) {
	accept := func(a images.Attached) (bool, string) {
		return policy.Accept(a.ReportFacts())
	}
	return images.Promote(ctx, ref, tag, accept, opts...)
}

// Acceptance is what Accepted looks for: for each platform and each
// policy, an attached report the policy accepts. With one platform any
// accepted report will do (reports attached before validate named the
// platform of a single-platform image name none); with several, each
// platform needs its own. The defaults
// are one platform and a policy of validate's zero PromotionPolicy.
type Acceptance struct {
	Platforms []string
	Policies  []validate.PromotionPolicy
}

// Accepted says whether the image ref names carries the reports spec
// asks for; it returns the image's digest and the last report it
// matched. An error is the registry's (the image or its referrers could
// not be read).
func Accepted(ctx context.Context, ref string, spec Acceptance, opts ...images.Option) (string, *validate.Report, bool, error) {
	dig, reports, err := images.Referrers(ctx, ref, images.ReportArtifactType, opts...)
	if err != nil {
		return "", nil, false, err
	}
	if len(spec.Platforms) == 0 {
		spec.Platforms = []string{""}
	}
	if len(spec.Policies) == 0 {
		spec.Policies = []validate.PromotionPolicy{{}}
	}
	multi := len(spec.Platforms) > 1
	var found *validate.Report
	for _, p := range spec.Platforms {
		for _, policy := range spec.Policies {
			found = nil
			for _, a := range reports {
				if ok, _ := policy.Accept(a.ReportFacts()); !ok {
					continue
				}
				var rp validate.Report
				if json.Unmarshal(a.Payload, &rp) == nil && (!multi || rp.Platform == p) {
					found = &rp
					break
				}
			}
			if found == nil {
				return dig.DigestStr(), nil, false, nil
			}
		}
	}
	return dig.DigestStr(), found, true, nil
}

package verbs

import (
	"context"
	"encoding/json"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/validate"
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
// accepted report will do (a single-platform image's report names no
// platform); with several, each platform needs its own. The defaults
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

package verbs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/sbom"
)

// Attester pushes a signed in-toto attestation with predicate (of
// predicateType) about the image ref names; images/sign's Attest fits
// it. AttachSBOM uses it, when given, besides the plain referrer.
type Attester interface {
	Attest(ctx context.Context, ref, predicateType string, predicate []byte) error
}

// SBOMSpec is what SBOM writes.
type SBOMSpec struct {
	// Options are validate's: the matrix (required), the name, the
	// limits. SBOM sets Inventory, Digest and Platform.
	validate.Options
	// Platform is the platform read from a multi-platform image; nil is
	// images.Open's default.
	Platform *v1.Platform
	// Format is the SBOM's format; the default is SPDX JSON.
	Format sbom.Format
}

// SBOMDoc is an SBOM written by SBOM, with the validation report of the
// same pass over the layers.
type SBOMDoc struct {
	Format sbom.Format
	// Digest is the manifest the SBOM describes (a platform's, for a
	// multi-platform image).
	Digest string
	// Document is the SBOM's bytes.
	Document []byte
	// Report is the static validation read in the same walk.
	Report *validate.Report
}

// SBOM reads the image ref names once, validating it and collecting its
// inventory in the same walk (validate.Options.Inventory), and writes
// the inventory as an SBOM of spec.Format.
func SBOM(ctx context.Context, ref images.Ref, spec SBOMSpec, opts ...images.Option) (*SBOMDoc, error) {
	f := spec.Format
	if f == "" {
		f = sbom.SPDXJSON
	}
	if _, err := sbom.ParseFormat(string(f)); err != nil {
		return nil, err
	}
	vs := Spec{Options: spec.Options}
	vs.Inventory = true
	if spec.Platform != nil {
		vs.Platforms = []*v1.Platform{spec.Platform}
	}
	reps, err := Validate(ctx, ref, vs, opts...)
	if err != nil {
		return nil, err
	}
	return ReportSBOM(ref.String(), reps[0].Report, f)
}

// ReportSBOM writes the inventory that a validation collected
// (validate.Options.Inventory) as an SBOM of format f about the image
// named name: for callers that validated already, so the layers are read
// once for both.
func ReportSBOM(name string, rep *validate.Report, f sbom.Format) (*SBOMDoc, error) {
	if f == "" {
		f = sbom.SPDXJSON
	}
	if rep == nil || rep.Inventory == nil {
		return nil, fmt.Errorf("write the SBOM of %s: the validation collected no inventory (validate.Options.Inventory)", name)
	}
	var buf bytes.Buffer
	sub := sbom.Subject{Name: name, Digest: rep.Digest, Platform: rep.Platform}
	if err := sbom.Write(&buf, f, sub, rep.Inventory); err != nil {
		return nil, fmt.Errorf("write the SBOM of %s: %w", name, err)
	}
	return &SBOMDoc{Format: f, Digest: rep.Digest, Document: buf.Bytes(), Report: rep}, nil
}

// AttachSBOM pushes doc to the registry image ref names as a plain OCI
// referrer of the manifest it describes (doc.Digest in ref's
// repository): artifact type sbom.Format.MediaType()
// (application/spdx+json or application/vnd.cyclonedx+json) and one
// layer, which is what trivy's --sbom-sources oci reads. With att, it
// also pushes the SBOM as a signed in-toto attestation of predicate type
// sbom.Format.PredicateType(). It returns the referrer's digest.
func AttachSBOM(ctx context.Context, ref string, doc *SBOMDoc, att Attester, opts ...images.Option) (string, error) {
	target := ref
	if doc.Digest != "" {
		r, err := name.ParseReference(ref)
		if err != nil {
			return "", fmt.Errorf("attach the SBOM to %s: %w", ref, err)
		}
		target = r.Context().Digest(doc.Digest).String()
	}
	ann := map[string]string{}
	if inv := doc.Report.Inventory; inv != nil && !inv.Created.IsZero() {
		ann[images.AnnotationCreated] = inv.Created.Format(time.RFC3339)
	}
	d, err := images.Attach(ctx, target, doc.Format.MediaType(), doc.Document, ann, opts...)
	if err != nil {
		return "", err
	}
	if att != nil {
		if err := att.Attest(ctx, target, doc.Format.PredicateType(), doc.Document); err != nil {
			return d, fmt.Errorf("attest the SBOM of %s: %w", target, err)
		}
	}
	return d, nil
}

package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ReportArtifactType is the OCI artifact type of gpuimg validation reports
// attached to images as referrers. The artifact's one layer is the
// report's JSON (validate.Report) with this media type; its annotations
// repeat the kind, verdict, GPU, driver and date so that a registry UI or
// `oras discover` shows them without downloading the report.
const ReportArtifactType = "application/vnd.gpuimg.validation.report.v1+json"

// Annotation keys on attached reports.
const (
	AnnotationKind    = "dev.gpuimg.report.kind"    // static or gpu
	AnnotationVerdict = "dev.gpuimg.report.verdict" // pass or fail
	AnnotationGPU     = "dev.gpuimg.report.gpu"
	AnnotationDriver  = "dev.gpuimg.report.driver"
	AnnotationCreated = "org.opencontainers.image.created"
)

// Attach pushes payload as an OCI artifact whose subject is the image ref
// names (resolved to its digest), so it is listed by the referrers API
// (or its tag fallback on registries without it). It returns the
// artifact's digest.
func Attach(ctx context.Context, ref, artifactType string, payload []byte, annotations map[string]string, opts ...Option) (string, error) {
	r, rf, err := prepare(ref, opts)
	if err != nil {
		return "", err
	}
	desc, err := remote.Head(rf, r.remote(ctx)...)
	if err != nil {
		return "", explain("resolve", rf, err)
	}
	// The config's media type is the artifact type (how OCI 1.0 registries
	// and the referrers API's fallback name it).
	art := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	art = mutate.ConfigMediaType(art, types.MediaType(artifactType))
	art, err = mutate.Append(art, mutate.Addendum{Layer: static.NewLayer(payload, types.MediaType(artifactType))})
	if err != nil {
		return "", err
	}
	art = mutate.Annotations(art, annotations).(v1.Image)
	subject := v1.Descriptor{MediaType: desc.MediaType, Size: desc.Size, Digest: desc.Digest}
	art = mutate.Subject(art, subject).(v1.Image)
	d, err := art.Digest()
	if err != nil {
		return "", err
	}
	dst := rf.Context().Digest(d.String())
	if err := remote.Write(dst, art, r.remote(ctx)...); err != nil {
		return "", explain("attach to", rf, err)
	}
	return d.String(), nil
}

// ReportMeta is what the annotations of an attached validation report
// say of it.
type ReportMeta struct {
	Kind, Verdict string // static or gpu; pass, fail or no-gpu
	Created       time.Time
	// GPU and Driver are the GPU and driver the report judged against;
	// empty ones are left out.
	GPU, Driver string
}

// AttachReport attaches a gpuimg validation report (payload: its JSON) to
// the image ref names, as an artifact of ReportArtifactType annotated with
// meta.
func AttachReport(ctx context.Context, ref string, payload []byte, meta ReportMeta, opts ...Option) (string, error) {
	ann := map[string]string{
		AnnotationKind: meta.Kind, AnnotationVerdict: meta.Verdict,
		AnnotationCreated: meta.Created.Format(time.RFC3339),
	}
	if meta.GPU != "" {
		ann[AnnotationGPU] = meta.GPU
	}
	if meta.Driver != "" {
		ann[AnnotationDriver] = meta.Driver
	}
	return Attach(ctx, ref, ReportArtifactType, payload, ann, opts...)
}

// ReportFacts are what a promotion policy judges an attached report on:
// its payload and the GPU and driver of its annotations
// (validate.PromotionPolicy.Accept takes them in this order).
func (a Attached) ReportFacts() (payload []byte, gpu, driver string) {
	return a.Payload, a.Annotations[AnnotationGPU], a.Annotations[AnnotationDriver]
}

// Attached is one referrer of an image.
type Attached struct {
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Payload     []byte            `json:"-"`
}

// Referrers lists the artifacts of artifactType attached to ref, with
// their payloads.
func Referrers(ctx context.Context, ref, artifactType string, opts ...Option) (name.Digest, []Attached, error) {
	r, rf, err := prepare(ref, opts)
	if err != nil {
		return name.Digest{}, nil, err
	}
	desc, err := remote.Head(rf, r.remote(ctx)...)
	if err != nil {
		return name.Digest{}, nil, explain("resolve", rf, err)
	}
	dig := rf.Context().Digest(desc.Digest.String())
	idx, err := remote.Referrers(dig, r.remote(ctx, remote.WithFilter("artifactType", artifactType))...)
	if err != nil {
		return dig, nil, explain("list referrers of", dig, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return dig, nil, err
	}
	var out []Attached
	for _, d := range m.Manifests {
		if d.ArtifactType != artifactType {
			continue
		}
		img, err := remote.Image(rf.Context().Digest(d.Digest.String()), r.remote(ctx)...)
		if err != nil {
			return dig, nil, explain("read referrer of", dig, err)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			continue
		}
		rc, err := layers[0].Compressed()
		if err != nil {
			return dig, nil, err
		}
		b, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		rc.Close()
		if err != nil {
			return dig, nil, err
		}
		out = append(out, Attached{Digest: d.Digest.String(), Annotations: d.Annotations, Payload: b})
	}
	return dig, out, nil
}

// ErrNotPromoted is wrapped when no attached report allows a promotion.
var ErrNotPromoted = errors.New("not promoted")

// Promote points tag (in ref's repository) at ref's digest if accept
// approves one of the attached reports; otherwise it refuses and says why,
// naming every report it saw.
func Promote(ctx context.Context, ref, tag string, accept func(Attached) (bool, string), opts ...Option) (string, error) {
	r, err := makeOptions(opts...)
	if err != nil {
		return "", err
	}
	dig, reports, err := Referrers(ctx, ref, ReportArtifactType, opts...)
	if err != nil {
		return "", err
	}
	var reasons []string
	for _, a := range reports {
		ok, why := accept(a)
		if ok {
			t := dig.Context().Tag(tag)
			desc, err := remote.Get(dig, r.remote(ctx)...)
			if err != nil {
				return "", explain("read", dig, err)
			}
			if err := remote.Tag(t, desc, r.remote(ctx)...); err != nil {
				return "", explain("tag", t, err)
			}
			return fmt.Sprintf("%s -> %s (report %s: %s)", t, dig.DigestStr(), shortDigest(a.Digest), why), nil
		}
		reasons = append(reasons, fmt.Sprintf("report %s: %s", shortDigest(a.Digest), why))
	}
	if len(reports) == 0 {
		return "", fmt.Errorf("%w: %s has no gpuimg validation report attached; run gpuimg validate %s --attach first", ErrNotPromoted, dig, ref)
	}
	return "", fmt.Errorf("%w: no attached report allows it: %s", ErrNotPromoted, strings.Join(reasons, "; "))
}

// shortDigest is a digest's algorithm and first 12 hex digits, for
// messages; a shorter string is returned whole.
func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

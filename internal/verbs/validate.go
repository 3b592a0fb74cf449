package verbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/cache"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// Spec is what Validate checks an image against.
type Spec struct {
	// Options are validate's: the matrix, the driver, the bandwidth, the
	// report's name, the targets, and the GPU when GPUs is empty. Validate
	// sets Digest, Platform and Packaging.
	validate.Options
	// Platforms are the platforms validated, each read from a
	// multi-platform image; a single image must be the one platform
	// asked for. The default is images.DefaultPlatform (linux/amd64),
	// for a single image too. Each report names its platform.
	Platforms []*v1.Platform
	// GPUs: each platform is checked once for each; the layers are read
	// from the source once (a temporary directory keeps them for the
	// following walks). The default is Options.GPU alone.
	GPUs []string
}

// Validated is one report of Validate and the GPU it was checked for.
type Validated struct {
	GPU string
	*validate.Report
}

// Step is where a verb (Validate, Prepare, Build) failed.
type Step string

// The steps of Validate.
const (
	Opening    Step = "open"    // the reference, the registry, the path
	Reading    Step = "read"    // the image's wrapping or a platform of it
	Inspecting Step = "inspect" // the layers and the checks
)

// Error is a failure of a verb: the step, the platform asked for (nil
// for the default, and for builds) and the cause, whose message it
// keeps, so that each caller names the image its own way.
type Error struct {
	Step     Step
	Platform *v1.Platform
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Validate reads the image ref names and checks it statically: every
// platform of spec, once per GPU, one report each in that order. With
// spec.Targets the image is read with its wrapping (index, attestations,
// media types) for each target's packaging checks and validated once per
// platform the targets run, and the one report (the first platform's)
// carries the other platforms' target checks; targets pick their
// platforms and are checked for their own GPUs, so they take neither
// Platforms nor GPUs.
func Validate(ctx context.Context, ref images.Ref, spec Spec, opts ...images.Option) ([]Validated, error) {
	if len(spec.Targets) > 0 {
		if len(spec.Platforms) > 0 || len(spec.GPUs) > 0 {
			return nil, errors.New("validate: targets pick their platforms and GPUs; give neither with them")
		}
		rep, err := validateTargets(ctx, ref, spec.Options, opts)
		if err != nil {
			return nil, err
		}
		return []Validated{{GPU: spec.GPU, Report: rep}}, nil
	}
	platforms, gpus := spec.Platforms, spec.GPUs
	if len(platforms) == 0 {
		platforms = []*v1.Platform{nil}
	}
	if len(gpus) == 0 {
		gpus = []string{spec.GPU}
	}
	var layerCache cache.Cache
	if len(gpus) > 1 {
		dir, err := os.MkdirTemp("", "gpuimg-validate-")
		if err != nil {
			return nil, fmt.Errorf("validate %s: %w", ref.Name, err)
		}
		defer os.RemoveAll(dir)
		layerCache = cache.NewFilesystemCache(dir)
	}
	var out []Validated
	for _, p := range platforms {
		reps, err := validatePlatform(ctx, ref, p, gpus, layerCache, spec.Options, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, reps...)
	}
	return out, nil
}

// validatePlatform opens platform p of ref and validates it for each GPU.
func validatePlatform(ctx context.Context, ref images.Ref, p *v1.Platform, gpus []string, layerCache cache.Cache, opt validate.Options, opts []images.Option) ([]Validated, error) {
	// A single image is validated only if it is the platform asked for,
	// linux/amd64 by default, as from an index: never another in its
	// place.
	want := p
	if want == nil {
		d := images.DefaultPlatform()
		want = &d
	}
	img, err := images.Open(ctx, ref, append(slices.Clip(opts), images.WithPlatform(want))...)
	if err != nil {
		return nil, &Error{Step: Opening, Platform: p, Err: err}
	}
	layers := img.Image
	if layerCache != nil {
		layers = cache.Image(img.Image, layerCache)
	}
	var out []Validated
	for _, g := range gpus {
		o := opt
		o.Digest, o.Platform, o.GPU = img.Digest, img.Platform, g
		rep, err := validate.Inspect(ctx, layers, o)
		if err != nil {
			img.Close()
			return nil, &Error{Step: Inspecting, Platform: p, Err: err}
		}
		out = append(out, Validated{GPU: g, Report: rep})
	}
	if err := img.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// validateTargets is Validate with targets.
func validateTargets(ctx context.Context, ref images.Ref, opt validate.Options, opts []images.Option) (*validate.Report, error) {
	src, err := images.OpenSource(ctx, ref, opts...)
	if err != nil {
		return nil, &Error{Step: Opening, Err: err}
	}
	defer src.Close()
	type group struct {
		p       matrix.Packaging
		targets []matrix.Target
	}
	var groups []*group
	for _, t := range opt.Targets {
		p, err := src.Packaging(t)
		if err != nil {
			return nil, &Error{Step: Reading, Err: err}
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.p.Platform == p.Platform })
		if i < 0 {
			groups = append(groups, &group{p: p})
			i = len(groups) - 1
		}
		groups[i].targets = append(groups[i].targets, t)
	}
	var rep *validate.Report
	for _, g := range groups {
		img, err := src.Image(g.p.Platform)
		if err != nil {
			return nil, &Error{Step: Reading, Err: err}
		}
		gopt := opt
		gopt.Targets, gopt.Packaging = g.targets, &g.p
		gopt.Platform = g.p.Platform
		if gopt.Digest = src.Digest; g.p.Index {
			if d, err := img.Digest(); err == nil {
				gopt.Digest = d.String()
			}
		}
		r, err := validate.Inspect(ctx, img, gopt)
		if err != nil {
			return nil, &Error{Step: Inspecting, Err: err}
		}
		if rep == nil {
			rep = r
			continue
		}
		rep.Add(validate.TargetChecks(r.Checks)...)
		rep.Add(validate.NewFabricChecks(rep.Checks, r.Checks)...)
	}
	return rep, nil
}

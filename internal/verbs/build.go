package verbs

import (
	"context"
	"errors"

	"github.com/gpuimg/gpuimg/builder"
)

// Daemon is a BuildKit daemon as Build uses it: a *Builder, or a caller's
// stand-in (publish's tests run its pool on them).
type Daemon interface {
	// Build builds plan (builder.Build).
	Build(ctx context.Context, req builder.Request, plan *builder.Plan) (*builder.Result, error)
	// Alive says whether the daemon still answers.
	Alive(ctx context.Context) bool
}

var _ Daemon = (*Builder)(nil)

// The steps of Build (besides Validate's).
const (
	Preparing Step = "prepare" // the base pinned by digest, the Dockerfile and labels rendered
	Building  Step = "build"   // the solve, its exports and pushes
	Lost      Step = "daemon"  // the daemon stopped answering during the build
)

// BuildOption is an option of Build.
type BuildOption func(*buildOptions)

type buildOptions struct {
	plan *builder.Plan
}

// WithPlan gives Build the plan Prepare made of the request, for callers
// that read it first (the Dockerfile, the base's digest for an inputs
// digest) or add labels to it. The default is to prepare the request.
func WithPlan(plan *builder.Plan) BuildOption {
	return func(o *buildOptions) { o.plan = plan }
}

// Prepare is Build's first step (builder.Prepare): the base image pinned
// by digest through the request's mirrors and registry options, the
// Dockerfile and the labels rendered. Its error is an *Error of step
// Preparing.
func Prepare(ctx context.Context, req builder.Request) (*builder.Plan, error) {
	plan, err := builder.Prepare(ctx, req)
	if err != nil {
		return nil, &Error{Step: Preparing, Err: err}
	}
	return plan, nil
}

// Build builds a stack on the daemon on: it prepares req (Prepare) unless
// WithPlan gives the plan, and builds it there (builder.Build), exporting
// and pushing what req says. A failure is an *Error: Preparing;
// Lost when the build failed and the daemon no longer answers (its Err
// is the build's error: the daemon, not the stack, failed, and another
// daemon may build it); else Building, which also covers a build pushed
// by digest (req.PushByDigest) that returned no digest.
func Build(ctx context.Context, on Daemon, req builder.Request, opts ...BuildOption) (*builder.Result, error) {
	var o buildOptions
	for _, opt := range opts {
		opt(&o)
	}
	plan := o.plan
	if plan == nil {
		var err error
		if plan, err = Prepare(ctx, req); err != nil {
			return nil, err
		}
	}
	res, err := on.Build(ctx, req, plan)
	switch {
	case err != nil && ctx.Err() == nil && !on.Alive(ctx):
		return nil, &Error{Step: Lost, Err: err}
	case err != nil:
		return nil, &Error{Step: Building, Err: err}
	case req.PushByDigest != "" && res.Digest == "":
		return nil, &Error{Step: Building, Err: errors.New("BuildKit returned no image digest")}
	}
	return res, nil
}

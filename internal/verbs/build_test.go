package verbs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// daemon stands for a BuildKit daemon (real ones: TestBuildEndToEnd,
// TestPublishEndToEnd): it records what it was asked to build and
// answers with res, or fails with err; dead says it no longer answers.
type daemon struct {
	res    *builder.Result
	err    error
	dead   bool
	builds int
	plan   *builder.Plan
}

func (d *daemon) Build(_ context.Context, _ builder.Request, plan *builder.Plan) (*builder.Result, error) {
	d.builds++
	d.plan = plan
	return d.res, d.err
}

func (d *daemon) Alive(context.Context) bool { return !d.dead }

// TestBuild: the plan given is built as it is, else the request is
// prepared (the base pinned by digest through the mirrors); a failure is
// named by its step: Preparing (nothing built), Lost when the daemon no
// longer answers (not when the build was cancelled), else Building, a
// push by digest without a digest included.
func TestBuild(t *testing.T) {
	s := newServer(t)
	stack, err := builtin(t).Resolve(matrix.Constraints{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mustRef(t, s.host+"/"+strings.TrimPrefix(stack.BaseImage, "docker.io/")), base); err != nil {
		t.Fatal(err)
	}
	req := builder.Request{Stack: stack, Mirrors: images.Mirrors{"index.docker.io": s.host}}
	baseDigest, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("prepared here", func(t *testing.T) {
		d := &daemon{res: &builder.Result{Digest: "sha256:1"}}
		res, err := Build(t.Context(), d, req)
		if err != nil || res != d.res {
			t.Fatalf("build: %v, %v", res, err)
		}
		if d.builds != 1 || d.plan == nil || d.plan.Base.Digest != baseDigest.String() || !strings.Contains(d.plan.Dockerfile, "@"+baseDigest.String()) {
			t.Errorf("%d builds of plan %+v; want one, FROM the base pinned at %s", d.builds, d.plan, baseDigest)
		}
	})
	t.Run("the plan given", func(t *testing.T) {
		plan, err := Prepare(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		plan.Labels["x"] = "y"
		d := &daemon{res: &builder.Result{}}
		if _, err := Build(t.Context(), d, req, WithPlan(plan)); err != nil || d.plan != plan {
			t.Errorf("build: %v; built plan %p, want the one given, %p", err, d.plan, plan)
		}
	})

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	failed := errors.New("rpc error: code = Unavailable")
	noMirror := req
	noMirror.Mirrors = images.Mirrors{"index.docker.io": s.host + "/nothing-here"}
	for _, tt := range []struct {
		name string
		ctx  context.Context
		req  builder.Request
		d    *daemon
		step Step
		msg  string
	}{
		{"base not found", t.Context(), noMirror, &daemon{}, Preparing, "nothing-here"},
		{"bad python mirror", t.Context(), func() builder.Request { r := req; r.PythonMirror = "ftp://x"; return r }(), &daemon{}, Preparing, "python mirror"},
		{"build failed, daemon alive", t.Context(), req, &daemon{err: failed}, Building, failed.Error()},
		{"daemon gone", t.Context(), req, &daemon{err: failed, dead: true}, Lost, failed.Error()},
		{"cancelled, daemon gone", cancelled, req, &daemon{err: failed, dead: true}, Building, failed.Error()},
		{"push by digest without a digest", t.Context(), func() builder.Request { r := req; r.PushByDigest = s.host + "/ml/torch"; return r }(), &daemon{res: &builder.Result{}}, Building, "no image digest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []BuildOption
			if tt.step != Preparing {
				plan, err := Prepare(t.Context(), tt.req)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, WithPlan(plan))
			}
			_, err := Build(tt.ctx, tt.d, tt.req, opts...)
			ve, ok := errors.AsType[*Error](err)
			if !ok || ve.Step != tt.step || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v (step %v), want step %q saying %q", err, ve, tt.step, tt.msg)
			}
			if tt.step == Lost && !errors.Is(err, failed) {
				t.Errorf("%v does not wrap the build's error", err)
			}
			if want := map[bool]int{true: 0, false: 1}[tt.step == Preparing]; tt.d.builds != want {
				t.Errorf("%d builds, want %d", tt.d.builds, want)
			}
		})
	}
}

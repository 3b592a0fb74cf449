package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

const runFile = `repository: REPO
tag: "{torch}-cu{cuda_short}-{gpu}"
matrix:
  cuda: ["12.2"]
  torch: ["2.3"]
  gpu: [h100, l4]
validate: {driver: 535.104.05}
promote: {tags: ["latest"]}
`

func TestRunDryRunOnly(t *testing.T) {
	f, err := parse(t, strings.ReplaceAll(runFile, "REPO", "registry.example.com/ml/torch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		only    string
		want    []string
		wantErr string
	}{
		{"", []string{"2.3.1-cu122-H100-SXM", "2.3.1-cu122-L4"}, ""},
		{"2.3.1-cu122-L4", []string{"2.3.1-cu122-L4"}, ""},
		{"*-H100*", []string{"2.3.1-cu122-H100-SXM"}, ""},
		{"nothing*", nil, "matches no variant"},
		{"[", nil, "syntax error"},
	} {
		rep, err := Run(t.Context(), f, builtin(t), RunOptions{DryRun: true, Only: tc.only})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("--only %q: error %v, want %q", tc.only, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("--only %q: %v", tc.only, err)
		}
		var got []string
		for _, r := range rep.Results {
			if r.Outcome != Planned {
				t.Errorf("--only %q: %s is %s", tc.only, r.Variant.Name, r.Outcome)
			}
			got = append(got, r.Variant.Name)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("--only %q: %v, want %v", tc.only, got, tc.want)
		}
	}
}

// TestRunUnchanged publishes against a real (in-process) registry with no
// builder at all: a variant whose tag holds its inputs and a passing
// report is unchanged; one that lacks either needs a build, which fails
// here for want of a builder, leaving its tag alone.
func TestRunUnchanged(t *testing.T) {
	host, f, db, plan, mirrors, pinned := runFixture(t)
	// What an earlier run published: each tag with its inputs label; a
	// passing report attached to the first only.
	digests := map[string]string{}
	for i, v := range plan.Variants {
		inputs, err := Inputs(v.Stack, f, ExpandOptions{Bases: map[string]images.Base{v.Stack.BaseImage: pinned}})
		if err != nil {
			t.Fatal(err)
		}
		img, _ := random.Image(256, 1)
		cfg, _ := img.ConfigFile()
		cfg = cfg.DeepCopy()
		cfg.Config.Labels = map[string]string{InputsLabel: inputs}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			t.Fatal(err)
		}
		tag, _ := name.ParseReference(v.Tag)
		if err := remote.Write(tag, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		digests[v.Name] = d.String()
		if i == 0 {
			payload, _ := json.Marshal(validate.Report{Kind: "static", Verdict: matrix.Pass, Created: time.Now()})
			if _, err := images.Attach(t.Context(), v.Tag, images.ReportArtifactType, payload,
				map[string]string{images.AnnotationKind: "static", images.AnnotationVerdict: "pass", images.AnnotationDriver: "535.104.05"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(opts RunOptions) *Report {
		opts.Request = builder.Request{Mirrors: mirrors}
		rep, err := Run(t.Context(), f, db, opts)
		if err != nil && !errors.Is(err, ErrNoBuilderReached) { // there is no builder here
			t.Fatal(err)
		}
		return rep
	}
	rep := run(RunOptions{})
	h100, l4 := rep.Results[0], rep.Results[1]
	if h100.Outcome != Unchanged || h100.Digest != digests[h100.Variant.Name] || h100.Builder != "" || h100.Verdict != matrix.Pass {
		t.Errorf("with its inputs and a passing report: %+v", h100)
	}
	if l4.Outcome != Failed || !strings.Contains(l4.Error, "no builder") {
		t.Errorf("without a report: %+v, want a build (failing here: no builder)", l4)
	}
	// The failed variant's tag and the moving tag it owns did not move.
	if d, err := remote.Head(mustRef(t, l4.Variant.Tag)); err != nil || d.Digest.String() != digests[l4.Variant.Name] {
		t.Errorf("the failed variant's tag: %v, %v", d, err)
	}
	if _, err := remote.Head(mustRef(t, host+"/ml/torch:latest")); err == nil {
		t.Error("latest was written though its owner failed")
	}

	if rep := run(RunOptions{Force: true, Only: h100.Variant.Name}); rep.Results[0].Outcome != Failed {
		t.Errorf("--force did not rebuild: %+v", rep.Results[0])
	}
	// Other inputs (a build extra) make it a rebuild.
	f.Build.Pip = []string{"numpy==2.1.3"}
	if rep := run(RunOptions{Only: h100.Variant.Name}); rep.Results[0].Outcome != Failed {
		t.Errorf("changed inputs did not rebuild: %+v", rep.Results[0])
	}
}

// runFixture is what TestRunUnchanged and TestRunBuildSeam run against:
// an in-process registry (with the referrers API) at host, runFile
// publishing to host/ml/torch, its expansion on the built-in matrix, and
// the variants' base image pushed there, reached through mirrors and
// pinned.
func runFixture(t *testing.T) (host string, f *File, db *matrix.DB, plan *Plan, mirrors images.Mirrors, pinned images.Base) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	f, err := parse(t, strings.ReplaceAll(runFile, "REPO", host+"/ml/torch"))
	if err != nil {
		t.Fatal(err)
	}
	db = builtin(t)
	if plan, err = Expand(t.Context(), db, f, ExpandOptions{}); err != nil {
		t.Fatal(err)
	}
	base, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	mirrors = images.Mirrors{"index.docker.io": host}
	baseTag := plan.Variants[0].Stack.BaseImage
	if err := remote.Write(mustRef(t, host+"/"+strings.TrimPrefix(baseTag, "docker.io/")), base); err != nil {
		t.Fatal(err)
	}
	if pinned, err = images.PinBase(t.Context(), baseTag, mirrors); err != nil {
		t.Fatal(err)
	}
	return host, f, db, plan, mirrors, pinned
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fakeBuilder stands for a BuildKit daemon in Run's pool: a dead one
// fails every build and no longer answers; a live one pushes a small
// image by digest to the request's PushByDigest repository, with the
// plan's labels and the request's annotations, as BuildKit's exporter
// does for publish's push by digest.
type fakeBuilder struct {
	dead   bool
	builds *atomic.Int32
}

func (b fakeBuilder) Build(ctx context.Context, req builder.Request, plan *builder.Plan) (*builder.Result, error) {
	b.builds.Add(1)
	if b.dead {
		return nil, errors.New("rpc error: code = Unavailable desc = connection refused")
	}
	repo, annotations := req.PushByDigest, req.Annotations
	if repo == "" {
		return nil, errors.New("the request pushes by digest nowhere (PushByDigest)")
	}
	img, err := random.Image(256, 1)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = plan.Labels
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	img = mutate.Annotations(img, annotations).(v1.Image)
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	ref, err := name.ParseReference(repo + "@" + d.String())
	if err != nil {
		return nil, err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return nil, err
	}
	return &builder.Result{Digest: d.String()}, nil
}

func (b fakeBuilder) Alive(context.Context) bool { return !b.dead }
func (b fakeBuilder) Close() error               { return nil }

// TestRunBuildSeam runs Run's build, retry, validation and publication
// logic on a pool of two fake builders (RunOptions.Dial) against an
// in-process registry: the variant lands on the dead builder first and
// is retried on the live one, which pushes it by digest with its inputs
// annotation; the image (random layers claiming a torch stack) fails
// static validation, so its report is attached to the digest and its
// tag is not written.
func TestRunBuildSeam(t *testing.T) {
	host, f, db, plan, mirrors, pinned := runFixture(t)
	var deadBuilds, liveBuilds atomic.Int32
	dialed := map[string]int{}
	var mu sync.Mutex
	only := plan.Variants[0]
	rep, err := Run(t.Context(), f, db, RunOptions{
		Builders: []string{"dead", "live"},
		Only:     only.Name,
		Request:  builder.Request{Mirrors: mirrors},
		Dial: func(_ context.Context, addr string) (Builder, error) {
			mu.Lock()
			dialed[addr]++
			mu.Unlock()
			if addr == "dead" {
				return fakeBuilder{dead: true, builds: &deadBuilds}, nil
			}
			return fakeBuilder{builds: &liveBuilds}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if deadBuilds.Load() != 1 || liveBuilds.Load() != 1 || dialed["dead"] != 1 || dialed["live"] != 1 {
		t.Errorf("builds: dead %d, live %d; dials %v; want the variant on the dead builder once, then once on the live one, each dialed once",
			deadBuilds.Load(), liveBuilds.Load(), dialed)
	}
	if res.Builder != "live" || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "builder dead failed, retried on live") }) {
		t.Errorf("builder %q, notes %q: want the retry on live noted", res.Builder, res.Notes)
	}
	if res.Outcome != Failed || res.Digest == "" || !strings.Contains(res.Error, "static validation fail") || !strings.Contains(res.Error, "the tag was not written") {
		t.Fatalf("result %+v: want a failed validation of a pushed digest", res)
	}
	digestRef := host + "/ml/torch@" + res.Digest
	desc, err := remote.Get(mustRef(t, digestRef))
	if err != nil {
		t.Fatalf("the pushed digest: %v", err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	inputs, err := Inputs(only.Stack, f, ExpandOptions{Bases: map[string]images.Base{only.Stack.BaseImage: pinned}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations[InputsLabel] != inputs {
		t.Errorf("manifest annotation %s = %q, want the variant's inputs %q", InputsLabel, m.Annotations[InputsLabel], inputs)
	}
	_, reports, err := images.Referrers(t.Context(), digestRef, images.ReportArtifactType)
	if err != nil || len(reports) != 1 || reports[0].Annotations[images.AnnotationVerdict] != "fail" {
		t.Errorf("reports attached to %s: %d, %v; want the failed validation's", digestRef, len(reports), err)
	}
	if _, err := remote.Head(mustRef(t, only.Tag)); err == nil {
		t.Errorf("%s was written though its image failed validation", only.Tag)
	}
}

// TestRunNoBuilderReached: a run whose variants need a build and whose
// pool has no builder that can be connected to could not run: Run gives
// the report (the variant failed) and an error wrapping
// ErrNoBuilderReached, which the CLI makes exit 2. A builder that was
// reached and then died, or one live builder among dead ones, leaves the
// run's outcome to the variants (exit 1 or 0).
func TestRunNoBuilderReached(t *testing.T) {
	_, f, db, plan, mirrors, _ := runFixture(t)
	var builds atomic.Int32
	refused := errors.New("connection refused")
	for _, tt := range []struct {
		name      string
		builders  []string // "down": cannot be dialed; "dies": dialed, fails its build and stops answering; "live"
		local     bool     // no builders and no local daemon either
		unreached bool
	}{
		{"one builder down", []string{"down"}, false, true},
		{"every builder down", []string{"down", "down"}, false, true},
		{"no builder named and no local daemon", nil, true, true},
		{"reached, then died", []string{"dies"}, false, false},
		{"one down, one reached", []string{"down", "dies"}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addrs := make([]string, len(tt.builders))
			for i, b := range tt.builders {
				addrs[i] = fmt.Sprintf("%s-%d", b, i)
			}
			rep, err := Run(t.Context(), f, db, RunOptions{
				Builders: addrs,
				Only:     plan.Variants[0].Name,
				Request:  builder.Request{Mirrors: mirrors},
				Dial: func(_ context.Context, addr string) (Builder, error) {
					if strings.HasPrefix(addr, "down") {
						return nil, refused
					}
					return fakeBuilder{dead: true, builds: &builds}, nil
				},
			})
			if got := errors.Is(err, ErrNoBuilderReached); got != tt.unreached || (err != nil && !got) {
				t.Fatalf("error %v; want ErrNoBuilderReached: %v", err, tt.unreached)
			}
			if rep == nil || rep.Results[0].Outcome != Failed {
				t.Fatalf("report %+v: want the variant failed", rep)
			}
			if tt.unreached && !tt.local && !strings.Contains(err.Error(), "down-0: connection refused") {
				t.Errorf("error %q does not name the builder and its reason", err)
			}
		})
	}
}

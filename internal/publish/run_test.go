package publish

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
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
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	f, err := parse(t, strings.ReplaceAll(runFile, "REPO", host+"/ml/torch"))
	if err != nil {
		t.Fatal(err)
	}
	db := builtin(t)
	plan, err := Expand(t.Context(), db, f, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The base image, through a mirror.
	base, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	mirrors := images.Mirrors{"index.docker.io": host}
	baseTag := plan.Variants[0].Stack.BaseImage
	ref, err := name.ParseReference(host + "/" + strings.TrimPrefix(baseTag, "docker.io/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, base); err != nil {
		t.Fatal(err)
	}
	pinned, err := images.PinBase(t.Context(), baseTag, mirrors)
	if err != nil {
		t.Fatal(err)
	}
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
		if err != nil {
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

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

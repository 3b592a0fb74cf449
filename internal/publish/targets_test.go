package publish

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"

	"net/http/httptest"
)

// fleets are the targets of TestRunTargets: one that takes the variant as
// it is (Docker schema 2, gzip), one that wants OCI, one whose 100-byte limit
// it exceeds.
const fleets = `sources: [{id: t, url: https://wiki.example.com/fleets}]
targets:
  - {name: t/docker, driver: 550.54.15, platforms: [linux/amd64], media_types: [docker], compressions: [gzip], registry: any, source: t}
  - {name: t/oci, driver: 550.54.15, platforms: [linux/amd64], media_types: [oci], compressions: [gzip], registry: any, source: t}
  - {name: t/tiny, platforms: [linux/amd64], max_size: 100B, size_of: compressed, registry: any, source: t}
`

func TestLoadFileTargets(t *testing.T) {
	f, err := parse(t, minimal+"targets:\n  - {target: t/docker, repository: ecr.example.com/ml/torch}\n  - {target: t/oci, repository: ar.example.com/ml/torch, tag: \"{torch}-oci\"}\n")
	if err != nil {
		t.Fatal(err)
	}
	v := Variant{Name: "2.7.1-cu126-py3.12", Stack: matrix.Stack{Frameworks: map[string]matrix.Framework{"torch": {Version: "2.7.1"}}}}
	for i, want := range []string{"ecr.example.com/ml/torch:2.7.1-cu126-py3.12", "ar.example.com/ml/torch:2.7.1-oci"} {
		if got, err := f.Targets[i].Ref(v); err != nil || got != want {
			t.Errorf("target %d: %q %v, want %q", i, got, err, want)
		}
	}
	for src, want := range map[string]string{
		minimal + "targets:\n  - {repository: ecr.example.com/ml/torch}\n":                      "line 8: targets[0] has no target",
		minimal + "targets:\n  - {target: t/docker, repository: \"Bad Repo\"}\n":                "line 8: targets[0] (t/docker): repository \"Bad Repo\"",
		minimal + "targets:\n  - {target: t/docker, repo: ecr.example.com/ml/torch}\n":          "unknown key \"repo\"",
		minimal + "targets:\n  - {target: t/docker, repository: e.com/a, tag: \"{pytorch}\"}\n": "unknown field {pytorch}",
	} {
		if _, err := parse(t, src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	mf := filepath.Join(t.TempDir(), "fleets.yaml")
	must(t, os.WriteFile(mf, []byte(fleets), 0o644))
	db, err := matrix.Load(mf)
	must(t, err)
	f.Targets[0].Target = "t/dockr"
	if _, err := Expand(t.Context(), db, f, ExpandOptions{}); err == nil || !strings.Contains(err.Error(), "did you mean t/docker") {
		t.Errorf("unknown target: %v", err)
	}
}

// TestRunTargets: an unchanged variant is imported into each target in
// its format (byte for byte where nothing changes, OCI media types where
// the target wants them); a target that refuses it fails the variant.
func TestRunTargets(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	mf := filepath.Join(t.TempDir(), "fleets.yaml")
	must(t, os.WriteFile(mf, []byte(fleets), 0o644))
	db, err := matrix.Load(mf)
	must(t, err)
	src := strings.ReplaceAll(runFile, "REPO", host+"/ml/torch")
	src = strings.Replace(src, "gpu: [h100, l4]", "gpu: [h100]", 1)
	src += "targets:\n  - {target: t/docker, repository: " + host + "/sm/torch}\n  - {target: t/oci, repository: " + host + "/ar/torch, tag: \"{torch}-oci\"}\n"
	f, err := parse(t, src)
	must(t, err)
	plan, err := Expand(t.Context(), db, f, ExpandOptions{})
	must(t, err)
	v := plan.Variants[0]
	base, err := random.Image(512, 1)
	must(t, err)
	mirrors := images.Mirrors{"index.docker.io": host}
	must(t, remote.Write(mustRef(t, host+"/"+strings.TrimPrefix(v.Stack.BaseImage, "docker.io/")), base))
	pinned, err := images.PinBase(t.Context(), v.Stack.BaseImage, mirrors)
	must(t, err)
	inputs, err := Inputs(v.Stack, f, ExpandOptions{Bases: map[string]images.Base{v.Stack.BaseImage: pinned}})
	must(t, err)
	img, _ := random.Image(256, 1)
	cfg, _ := img.ConfigFile()
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Labels = map[string]string{InputsLabel: inputs}
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	must(t, remote.Write(mustRef(t, v.Tag), img))
	payload, _ := json.Marshal(validate.Report{Kind: "static", Verdict: matrix.Pass, Created: time.Now()})
	_, err = images.Attach(t.Context(), v.Tag, images.ReportArtifactType, payload,
		map[string]string{images.AnnotationKind: "static", images.AnnotationVerdict: "pass", images.AnnotationDriver: "535.104.05"})
	must(t, err)
	digest, _ := img.Digest()

	rep, err := Run(t.Context(), f, db, RunOptions{Request: builder.Request{Mirrors: mirrors}})
	must(t, err)
	res := rep.Results[0]
	if res.Outcome != Unchanged || len(res.Targets) != 2 {
		t.Fatalf("result %+v", res)
	}
	if d := res.Targets[0]; d.Target != "t/docker" || d.Digest != digest.String() || len(d.Changes) != 0 || d.Ref != host+"/sm/torch@"+digest.String() {
		t.Errorf("docker target: %+v", d)
	}
	oci := res.Targets[1]
	if len(oci.Changes) != 1 || oci.Changes[0].What != "media-type" {
		t.Errorf("oci target: %+v", oci)
	}
	ref, _ := name.ParseReference(host+"/ar/torch:"+v.Stack.Frameworks["torch"].Version+"-oci", name.Insecure)
	if d, err := remote.Head(ref); err != nil || d.MediaType != types.OCIManifestSchema1 || d.Digest.String() != oci.Digest {
		t.Errorf("the OCI target's tag: %+v %v", d, err)
	}

	f.Targets = append(f.Targets, TargetSpec{Target: "t/tiny", Repository: host + "/tiny/torch"})
	rep, err = Run(t.Context(), f, db, RunOptions{Request: builder.Request{Mirrors: mirrors}})
	must(t, err)
	if res := rep.Results[0]; res.Outcome != Failed || !strings.Contains(res.Error, "target t/tiny: import refused") {
		t.Errorf("refused by t/tiny: %+v", res)
	}
	// The report has each target's verdict and checks, the refusing one's too.
	if tr := rep.Results[0].Targets; len(tr) != 3 || tr[0].Verdict != matrix.Pass || len(tr[0].Checks) == 0 || tr[2].Target != "t/tiny" || tr[2].Verdict != matrix.Fail || tr[2].Ref != "" {
		t.Errorf("targets in the report: %+v", tr)
	} else if failed := matrix.Verdict(tr[2].Checks); failed != matrix.Fail {
		t.Errorf("t/tiny's checks: %+v", tr[2].Checks)
	}
	if _, err := remote.Head(mustRef(t, host+"/tiny/torch:"+v.Name)); err == nil {
		t.Error("the refusing target got the image")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

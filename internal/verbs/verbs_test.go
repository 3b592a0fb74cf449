package verbs

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// server is an in-process registry with referrers that counts the GETs
// of each blob.
type server struct {
	host string
	mu   sync.Mutex
	gets map[string]int // blob digest → GETs
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{gets: map[string]int{}}
	reg := registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, d, ok := strings.Cut(req.URL.Path, "/blobs/"); ok && req.Method == http.MethodGet {
			s.mu.Lock()
			s.gets[d]++
			s.mu.Unlock()
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	s.host = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// pushIndex pushes an index of one random image per platform as ref and
// returns its layers' digests.
func pushIndex(t *testing.T, ref string, platforms ...string) []string {
	t.Helper()
	var layers []string
	idx := v1.ImageIndex(empty.Index)
	for _, p := range platforms {
		img, err := random.Image(256, 2)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			d, _ := l.Digest()
			layers = append(layers, d.String())
		}
		pl, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: pl}})
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	return layers
}

func builtin(t *testing.T) *matrix.DB {
	t.Helper()
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func registryRef(s string) images.Ref { return images.Ref{Transport: images.Registry, Name: s} }

// TestValidate: every platform of the spec, once per GPU, in that order,
// each layer read from the registry once; the steps of a failure.
func TestValidate(t *testing.T) {
	s := newServer(t)
	db := builtin(t)
	ref := s.host + "/ml/torch:staging"
	layers := pushIndex(t, ref, "linux/amd64", "linux/arm64")
	amd, arm := &v1.Platform{OS: "linux", Architecture: "amd64"}, &v1.Platform{OS: "linux", Architecture: "arm64"}

	t.Run("platforms times GPUs", func(t *testing.T) {
		reps, err := Validate(t.Context(), registryRef(ref), Spec{
			Options:   validate.Options{Name: "torch", DB: db, Driver: matrix.MustVersion("535.104.05")},
			Platforms: []*v1.Platform{amd, arm},
			GPUs:      []string{"h100", "l4"},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range reps {
			got = append(got, r.Platform+" "+r.GPU+" "+r.Image)
			if r.Digest == "" || r.Kind != "static" {
				t.Errorf("%s %s: digest %q, kind %q", r.Platform, r.GPU, r.Digest, r.Kind)
			}
		}
		want := []string{"linux/amd64 h100 torch", "linux/amd64 l4 torch", "linux/arm64 h100 torch", "linux/arm64 l4 torch"}
		if !slices.Equal(got, want) {
			t.Errorf("reports %q, want %q", got, want)
		}
		for _, l := range layers {
			if n := s.gets[l]; n != 1 {
				t.Errorf("layer %s read %d times for 2 GPUs, want once", l, n)
			}
		}
	})
	t.Run("default platform and the options' GPU", func(t *testing.T) {
		reps, err := Validate(t.Context(), registryRef(ref), Spec{Options: validate.Options{DB: db, GPU: "h100"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(reps) != 1 || reps[0].GPU != "h100" || reps[0].Platform != "linux/amd64" {
			t.Errorf("got %d reports, the first for %q on %q; want one, h100 on linux/amd64", len(reps), reps[0].GPU, reps[0].Platform)
		}
	})
	for _, tt := range []struct {
		name string
		ref  string
		spec Spec
		step Step // "" for an error that is not an *Error
		msg  string
	}{
		{"missing tag", s.host + "/ml/torch:nope", Spec{Options: validate.Options{DB: db}}, Opening, "MANIFEST_UNKNOWN"},
		{"platform not in the index", ref, Spec{Options: validate.Options{DB: db}, Platforms: []*v1.Platform{{OS: "linux", Architecture: "s390x"}}}, Opening, "s390x"},
		{"no matrix", ref, Spec{Platforms: []*v1.Platform{arm}}, Inspecting, "no matrix"},
		{"targets with platforms", ref, Spec{Options: validate.Options{DB: db, Targets: []matrix.Target{{Name: "t"}}}, Platforms: []*v1.Platform{amd}}, "", "targets pick their platforms"},
		{"missing tag with targets", s.host + "/ml/torch:nope", Spec{Options: validate.Options{DB: db, Targets: []matrix.Target{{Name: "t"}}}}, Opening, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate(t.Context(), registryRef(tt.ref), tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want one that says %q", err, tt.msg)
			}
			var ve *Error
			if got := errors.As(err, &ve); got != (tt.step != "") || (got && ve.Step != tt.step) {
				t.Errorf("error %v: *Error %v (step %v), want step %q", err, got, ve, tt.step)
			}
			if ve != nil && tt.step == Inspecting && ve.Platform != tt.spec.Platforms[0] {
				t.Errorf("error's platform %v, want %v", ve.Platform, tt.spec.Platforms[0])
			}
		})
	}
}

// TestValidateTargets: targets on two platforms give one report, the
// first platform's, carrying the other's target checks.
func TestValidateTargets(t *testing.T) {
	s := newServer(t)
	ref := s.host + "/ml/torch:staging"
	pushIndex(t, ref, "linux/amd64", "linux/arm64")
	targets := []matrix.Target{{Name: "x86", Platforms: []string{"linux/amd64"}}, {Name: "graviton", Platforms: []string{"linux/arm64"}}}
	reps, err := Validate(t.Context(), registryRef(ref), Spec{Options: validate.Options{DB: builtin(t), Targets: targets}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 {
		t.Fatalf("%d reports, want 1", len(reps))
	}
	if p := reps[0].Platform; p != "linux/amd64" {
		t.Errorf("report for %q, want linux/amd64 (the first target's)", p)
	}
	for _, n := range []string{"x86", "graviton"} {
		if !slices.ContainsFunc(reps[0].Checks, func(c validate.Check) bool { return strings.HasPrefix(c.Name, "target:"+n+":") }) {
			t.Errorf("no target:%s: checks in %v", n, reps[0].Checks)
		}
	}
	if v := matrix.Verdict(reps[0].Checks); v != reps[0].Verdict {
		t.Errorf("verdict %s, the checks' %s", reps[0].Verdict, v)
	}
}

// TestReportsAcceptedPromoted: AttachReport records the GPU and driver a
// report was judged on (a GPU run's own first), Accepted finds a report
// for every platform and policy or says not, Promote tags only what a
// policy accepts.
func TestReportsAcceptedPromoted(t *testing.T) {
	s := newServer(t)
	db := builtin(t)
	repo := s.host + "/ml/torch"
	pushIndex(t, repo+":staging", "linux/amd64", "linux/arm64")
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	static := func(platform string, v validate.Status) *validate.Report {
		return &validate.Report{Kind: "static", Platform: platform, Verdict: v, Created: created}
	}
	attach := func(rep *validate.Report, on Judged) {
		t.Helper()
		if _, err := AttachReport(t.Context(), repo+":staging", rep, on); err != nil {
			t.Fatal(err)
		}
	}
	attach(static("linux/amd64", matrix.Pass), Judged{GPU: "h100", Driver: "535.104.05"})
	attach(static("linux/arm64", matrix.Fail), Judged{GPU: "h100", Driver: "535.104.05"})
	attach(&validate.Report{Kind: "gpu", Verdict: matrix.Pass, Created: created, Probe: &gpuprobe.Result{
		Driver: &gpuprobe.DriverInfo{Version: "550.54.14"}, GPUs: []gpuprobe.GPUInfo{{Name: "NVIDIA L4"}},
	}}, Judged{GPU: "h100", Driver: "535.104.05"})

	_, atts, err := images.Referrers(t.Context(), repo+":staging", images.ReportArtifactType)
	if err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, a := range atts {
		recorded = append(recorded, a.Annotations[images.AnnotationKind]+" "+a.Annotations[images.AnnotationVerdict]+" "+a.Annotations[images.AnnotationGPU]+" "+a.Annotations[images.AnnotationDriver])
	}
	slices.Sort(recorded)
	if want := []string{"gpu pass NVIDIA L4 550.54.14", "static fail h100 535.104.05", "static pass h100 535.104.05"}; !slices.Equal(recorded, want) {
		t.Errorf("recorded %q, want %q", recorded, want)
	}

	policy := func(require, gpu string) validate.PromotionPolicy {
		return validate.PromotionPolicy{Require: require, GPU: gpu, DB: db}
	}
	for _, tt := range []struct {
		name string
		spec Acceptance
		ok   bool
		plat string // the platform of the report found
	}{
		{"one platform: any accepted report", Acceptance{Platforms: []string{"linux/amd64"}, Policies: []validate.PromotionPolicy{policy("static", "h100")}}, true, "linux/amd64"},
		{"two platforms: arm64's failed", Acceptance{Platforms: []string{"linux/amd64", "linux/arm64"}, Policies: []validate.PromotionPolicy{policy("static", "h100")}}, false, ""},
		{"a GPU nothing was judged on", Acceptance{Platforms: []string{"linux/amd64"}, Policies: []validate.PromotionPolicy{policy("static", "h100"), policy("static", "a100")}}, false, ""},
		{"the GPU run's own GPU", Acceptance{Policies: []validate.PromotionPolicy{policy("gpu", "l4")}}, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dig, rep, ok, err := Accepted(t.Context(), repo+":staging", tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(dig, "sha256:") {
				t.Errorf("digest %q", dig)
			}
			if ok != tt.ok || (ok && rep.Platform != tt.plat) || (!ok && rep != nil) {
				t.Errorf("ok %v, report %+v; want ok %v on %q", ok, rep, tt.ok, tt.plat)
			}
		})
	}
	if _, _, _, err := Accepted(t.Context(), repo+":nope", Acceptance{}); err == nil {
		t.Error("Accepted of a missing tag: no error")
	}

	if _, err := Promote(t.Context(), repo+":staging", "stable", policy("gpu", "h100")); !errors.Is(err, images.ErrNotPromoted) || !strings.Contains(err.Error(), `report for GPU "NVIDIA L4", not h100`) {
		t.Errorf("promote for h100: %v, want ErrNotPromoted naming the L4 report", err)
	}
	if _, err := remote.Head(mustRef(t, repo+":stable")); err == nil {
		t.Error("stable written by a refused promotion")
	}
	msg, err := Promote(t.Context(), repo+":staging", "stable", policy("gpu", "l4"))
	if err != nil || !strings.Contains(msg, "gpu report passed") {
		t.Fatalf("promote for l4: %q, %v", msg, err)
	}
	staging, err := remote.Head(mustRef(t, repo+":staging"))
	if err != nil {
		t.Fatal(err)
	}
	stable, err := remote.Head(mustRef(t, repo+":stable"))
	if err != nil || stable.Digest != staging.Digest {
		t.Errorf("stable %v (%v), want staging's %s", stable, err, staging.Digest)
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

// TestValidateSingleImagePlatform: a single image is validated only as
// the platform asked for, linux/amd64 by default (as from an index), and
// the report names the platform judged; one of another platform is an
// *images.PlatformError, not validated in its place.
func TestValidateSingleImagePlatform(t *testing.T) {
	s := newServer(t)
	db := builtin(t)
	push := func(tag, os, arch string) string {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = os, arch
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			t.Fatal(err)
		}
		ref := s.host + "/ml/single:" + tag
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(r, img); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	amd64, arm64, none := push("amd64", "linux", "amd64"), push("arm64", "linux", "arm64"), push("none", "", "")
	arm := &v1.Platform{OS: "linux", Architecture: "arm64"}
	for _, tt := range []struct {
		name     string
		ref      string
		platform *v1.Platform
		want     string // the report's platform; "" for a PlatformError
		got      string // the error's image platform
	}{
		{"amd64 by default", amd64, nil, "linux/amd64", ""},
		{"arm64 by default", arm64, nil, "", "linux/arm64"},
		{"arm64 asked for", arm64, arm, "linux/arm64", ""},
		{"amd64 asked for arm64", amd64, arm, "", "linux/amd64"},
		{"a config that names none", none, nil, "unknown", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ps []*v1.Platform
			if tt.platform != nil {
				ps = []*v1.Platform{tt.platform}
			}
			reps, err := Validate(t.Context(), registryRef(tt.ref), Spec{Options: validate.Options{DB: db}, Platforms: ps})
			var pe *images.PlatformError
			if tt.want == "" {
				if !errors.As(err, &pe) || pe.Got != tt.got {
					t.Fatalf("error %v, want a PlatformError for a %s image", err, tt.got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if reps[0].Platform != tt.want {
				t.Errorf("report's platform %q, want %q", reps[0].Platform, tt.want)
			}
		})
	}
}

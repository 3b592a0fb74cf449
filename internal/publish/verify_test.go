package publish

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// TestValidateEveryPlatform: a multi-platform variant is validated on
// each platform, for each GPU of validate:, one attached report each,
// reading each layer from the registry once; a tag is unchanged only when
// every platform has a passing report.
func TestValidateEveryPlatform(t *testing.T) {
	var mu sync.Mutex
	blobGets := map[string]int{} // layer digest -> GETs
	reg := registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, d, ok := strings.Cut(req.URL.Path, "/blobs/"); ok && req.Method == http.MethodGet {
			mu.Lock()
			blobGets[d]++
			mu.Unlock()
		}
		reg.ServeHTTP(w, req)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	f, err := parse(t, `repository: `+host+`/ml/torch
tag: "{torch}-cu{cuda_short}"
matrix:
  cuda: ["12.4"]
  torch: ["2.5"]  # torch before 2.5 has no CUDA wheels for linux/arm64
platforms: [linux/amd64, linux/arm64]
validate: {driver: 535.104.05, gpu: [h100, l4]}
`)
	if err != nil {
		t.Fatal(err)
	}
	db := builtin(t)
	plan, err := Expand(t.Context(), db, f, ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{f: f, db: db}
	platforms := []string{"linux/amd64", "linux/arm64"}
	// index pushes an image per platform (labelled with the inputs) as tag.
	var layers []string
	index := func(tag, inputs string) string {
		idx := v1.ImageIndex(empty.Index)
		for _, p := range platforms {
			img, err := random.Image(256, 2)
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := img.ConfigFile()
			cfg = cfg.DeepCopy()
			cfg.Config.Labels = map[string]string{InputsLabel: inputs}
			if img, err = mutate.ConfigFile(img, cfg); err != nil {
				t.Fatal(err)
			}
			ls, _ := img.Layers()
			for _, l := range ls {
				d, _ := l.Digest()
				layers = append(layers, d.String())
			}
			pl, _ := v1.ParsePlatform(p)
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: pl}})
		}
		if err := remote.WriteIndex(mustRef(t, tag), idx); err != nil {
			t.Fatal(err)
		}
		d, _ := idx.Digest()
		return d.String()
	}
	reports := func(ref string) map[string]bool {
		_, atts, err := images.Referrers(t.Context(), ref, images.ReportArtifactType)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, a := range atts {
			var rp validate.Report
			if err := json.Unmarshal(a.Payload, &rp); err != nil {
				t.Fatal(err)
			}
			got[rp.Platform+" "+a.Annotations[images.AnnotationGPU]] = true
		}
		return got
	}

	v := plan.Variants[0]
	digest := index(host+"/ml/torch:staging", "sha256:inputs")
	digestRef := host + "/ml/torch@" + digest
	verdict, size, _, err := r.validate(t.Context(), v, digestRef)
	if verdict == "" || size == 0 || err != nil {
		t.Errorf("validate: verdict %q size %d error %v", verdict, size, err)
	}
	if len(layers) != 4 {
		t.Fatalf("%d layers pushed, want 4", len(layers))
	}
	for _, l := range layers {
		if n := blobGets[l]; n != 1 {
			t.Errorf("layer %s read %d times from the registry for 2 GPUs, want once", l, n)
		}
	}
	want := map[string]bool{}
	for _, p := range platforms {
		for _, g := range f.Validate.GPU {
			want[p+" "+g] = true
		}
	}
	if got := reports(digestRef); !mapsEqual(got, want) {
		t.Errorf("attached reports (platform GPU) %v, want %v", slices.Sorted(keys(got)), slices.Sorted(keys(want)))
	}

	// unchanged: a passing report for each GPU on each platform, or not.
	attach := func(ref string, platforms ...string) {
		for _, p := range platforms {
			for _, g := range f.Validate.GPU {
				payload, _ := json.Marshal(validate.Report{Kind: "static", Verdict: matrix.Pass, Platform: p, Created: time.Now()})
				if _, err := images.AttachReport(t.Context(), ref, payload, images.ReportMeta{Kind: "static", Verdict: "pass", Created: time.Now(), GPU: g, Driver: "535.104.05"}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	v.Inputs = "sha256:inputs"
	index(v.Tag, v.Inputs)
	attach(v.Tag, "linux/amd64")
	if _, _, ok := r.unchanged(t.Context(), v); ok {
		t.Error("unchanged with reports for linux/amd64 only")
	}
	attach(v.Tag, "linux/arm64")
	if _, _, ok := r.unchanged(t.Context(), v); !ok {
		t.Error("not unchanged with passing reports for both platforms and GPUs")
	}
	v.Inputs = "sha256:other"
	if _, _, ok := r.unchanged(t.Context(), v); ok {
		t.Error("unchanged with other inputs")
	}
}

func keys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

package publish

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestValidateStrictSection: publish.yaml's validate: judges as gpuimg
// validate does. A GPU the matrix knows only from a later driver (T4:
// listed from 575.51.02 on, a lower bound) leaves the gpu/driver check
// on R535 unknown: the verdict is unknown and
// the tag is not refused; strict: true fails it, naming the check.
func TestValidateStrictSection(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag := host + "/ml/torch:staging"
	if err := remote.Write(mustRef(t, tag), img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	digestRef := host + "/ml/torch@" + d.String()
	for _, tt := range []struct {
		name, strict string
		want         matrix.Status
		errHas       string
	}{
		{"unknown is listed, not refused", "", matrix.UnknownFact, ""},
		{"strict: true fails unknown", ", strict: true", matrix.Fail, "gpu/driver: the matrix does not record whether driver 535.104.05 knows T4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parse(t, `repository: `+host+`/ml/torch
tag: "{torch}-cu{cuda_short}"
matrix:
  cuda: ["12.4"]
  torch: ["2.5"]
validate: {driver: 535.104.05, gpu: [t4]`+tt.strict+`}
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
			verdict, _, _, err := r.validate(t.Context(), plan.Variants[0], digestRef)
			if verdict != tt.want {
				t.Errorf("verdict %s, want %s", verdict, tt.want)
			}
			if tt.errHas == "" && err != nil {
				t.Errorf("error %v, want none", err)
			}
			if tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("error %v, want one naming %q", err, tt.errHas)
			}
		})
	}
}

package cli

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
)

// TestImagesInspect pushes an image with a config (env, entrypoint,
// user, labels), signs it with gpuimg sign in both formats, and checks
// images inspect's JSON and text on a registry with the Referrers API
// and on one without (the tag fallback).
func TestImagesInspect(t *testing.T) {
	for _, withAPI := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "tag fallback"}[withAPI], func(t *testing.T) {
			ropts := []registry.Option{registry.Logger(log.New(io.Discard, "", 0))}
			if withAPI {
				ropts = append(ropts, registry.WithReferrersSupport(true))
			}
			srv := httptest.NewServer(registry.New(ropts...))
			t.Cleanup(srv.Close)
			ref := strings.TrimPrefix(srv.URL, "http://") + "/gpu/img:1"
			img, err := random.Image(512, 2)
			must(t, err)
			cf, err := img.ConfigFile()
			must(t, err)
			cfg := cf.Config
			cfg.Env = []string{"CUDA_VERSION=12.4.1"}
			cfg.Entrypoint = []string{"python", "-m", "app"}
			cfg.User = "1000"
			cfg.Labels = map[string]string{"org.opencontainers.image.version": "2.3"}
			img, err = mutate.Config(img, cfg)
			must(t, err)
			r, err := name.ParseReference(ref, name.Insecure)
			must(t, err)
			must(t, remote.Write(r, img))
			digest, _ := img.Digest()

			out, errb, code := run(t, "images", "inspect", ref, "-o", "json")
			var in images.Inspection
			if code != 0 || json.Unmarshal([]byte(out), &in) != nil {
				t.Fatalf("inspect before signing: exit %d\n%s%s", code, out, errb)
			}
			if in.Digest != digest.String() || len(in.Platforms) != 1 || len(in.Referrers) != 0 || !strings.Contains(out, `"referrers": []`) {
				t.Errorf("before signing: %s", out)
			}
			p := in.Platforms[0]
			if p.Layers != 2 || p.Config.User != "1000" || strings.Join(p.Config.Entrypoint, " ") != "python -m app" ||
				p.Config.Env[0] != "CUDA_VERSION=12.4.1" || p.Config.Labels["org.opencontainers.image.version"] != "2.3" || in.Size <= 1024 {
				t.Errorf("platform %+v, size %d", p, in.Size)
			}

			key, _ := pemKeyPair(t, t.TempDir(), "k")
			if out, errb, code := run(t, "sign", ref, "--key", key, "--signature-format", "both"); code != 0 {
				t.Fatalf("sign: exit %d\n%s%s", code, out, errb)
			}
			out, errb, code = run(t, "images", "inspect", ref, "-o", "json")
			in = images.Inspection{}
			if code != 0 || json.Unmarshal([]byte(out), &in) != nil {
				t.Fatalf("inspect after signing: exit %d\n%s%s", code, out, errb)
			}
			kinds := map[string]bool{}
			for _, x := range in.Referrers {
				kinds[x.Kind] = true
			}
			if !kinds["sigstore bundle (signature or attestation)"] || !kinds["signature (cosign v2 tag)"] {
				t.Errorf("referrers after sign --signature-format both: %v\n%s", kinds, out)
			}
			text, errb, code := run(t, "images", "inspect", ref)
			for _, want := range []string{"digest:     " + digest.String(), "  user:       1000", "  entrypoint: python -m app", "  label:      org.opencontainers.image.version=2.3", "signature (cosign v2 tag) (sha256-"} {
				if code != 0 || !strings.Contains(text, want) {
					t.Errorf("text lacks %q (exit %d)\n%s%s", want, code, text, errb)
				}
			}
		})
	}
	// An index: every platform, and a missing image is one line naming it.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	idx, err := random.Index(256, 1, 3)
	must(t, err)
	r, err := name.ParseReference(host+"/gpu/multi:1", name.Insecure)
	must(t, err)
	must(t, remote.WriteIndex(r, idx))
	out, errb, code := run(t, "images", "inspect", r.String(), "-o", "json")
	var in images.Inspection
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || len(in.Platforms) != 3 || !strings.Contains(in.MediaType, "index") {
		t.Errorf("index: exit %d\n%s%s", code, out, errb)
	}
	if _, errb, code := run(t, "images", "inspect", host+"/gpu/none:1"); code != ExitInvalid || !strings.Contains(errb, "not found") {
		t.Errorf("missing image: exit %d %s", code, errb)
	}
}

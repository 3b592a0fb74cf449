package validate

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestInspectTargets: every check that follows from a target, on a
// CUDA 12.2 + torch cu121 image whose one CUDA library has sm_80 SASS
// and sm_80 PTX.
func TestInspectTargets(t *testing.T) {
	lib := file{"opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so", strings.Repeat("\x00", 70<<10) + string(container([][3]int{{kindELF, 80, 0}, {kindPTX, 80, 0}}))} // scanned above 64 KiB
	base := torchImage(t, "12.1", "cuda>=12.2", nil, lib)
	sm := &matrix.RuntimeContract{Args: []string{"serve", "train"}, Port: 8080, Health: "/ping", User: "root"}
	tests := []struct {
		name       string
		target     matrix.Target
		entrypoint []string
		user       string
		expose     string
		packaging  *matrix.Packaging
		want       map[string]matrix.Status // check name (after target:NAME:) → status
		msg        map[string]string        // check → a phrase its message holds
	}{
		{name: "driver too old even under compat", target: matrix.Target{Name: "sm/p4d", Driver: matrix.MustVersion("470.57.02"), GPUs: []string{"a100"}},
			want: map[string]matrix.Status{"driver": matrix.Fail, "gpu/a100": matrix.Pass},
			msg:  map[string]string{"driver": "gpuimg matrix resolve --target sm/p4d"}},
		{name: "compat only: NVIDIA_REQUIRE_CUDA refuses, PTX cannot JIT", target: matrix.Target{Name: "old", Driver: matrix.MustVersion("530.30.02"), GPUs: []string{"h100"}},
			want: map[string]matrix.Status{"driver": matrix.Warn, "driver/require-cuda": matrix.Fail, "gpu/h100": matrix.Fail},
			msg:  map[string]string{"gpu/h100": "cannot JIT-compile PTX"}},
		{name: "driver meets the floor, PTX JIT on H100", target: matrix.Target{Name: "sm/p5", Driver: matrix.MustVersion("535.104.05"), GPUs: []string{"a100", "h100"}},
			want: map[string]matrix.Status{"driver": matrix.Pass, "gpu/a100": matrix.Pass, "gpu/h100": matrix.Warn}},
		{name: "runtime: shell-form entrypoint, no EXPOSE", target: matrix.Target{Name: "sm", Runtime: sm}, entrypoint: []string{"/bin/sh", "-c", "python serve.py"},
			want: map[string]matrix.Status{"entrypoint": matrix.Fail, "port": matrix.Warn, "user": matrix.Pass},
			msg:  map[string]string{"entrypoint": "exec form"}},
		{name: "runtime: no entrypoint for serve", target: matrix.Target{Name: "sm", Runtime: sm},
			want: map[string]matrix.Status{"entrypoint": matrix.Fail}},
		{name: "runtime: exec form, EXPOSE 8080", target: matrix.Target{Name: "sm", Runtime: sm}, entrypoint: []string{"/usr/bin/serve"}, expose: "8080/tcp",
			want: map[string]matrix.Status{"entrypoint": matrix.Pass, "port": matrix.Pass}},
		{name: "runtime: wrong port, root for a non-root platform", target: matrix.Target{Name: "az", Runtime: &matrix.RuntimeContract{Port: 5001, User: "non-root"}}, entrypoint: []string{"/usr/bin/serve"}, expose: "8080/tcp",
			want: map[string]matrix.Status{"entrypoint": matrix.Pass, "port": matrix.Fail, "user": matrix.Fail}},
		{name: "runtime: numeric non-root user", target: matrix.Target{Name: "az", Runtime: &matrix.RuntimeContract{User: "non-root"}}, entrypoint: []string{"/usr/bin/serve"}, user: "1000:1000",
			want: map[string]matrix.Status{"user": matrix.Pass}},
		// ModelArts requires UID 1101 (targets.yaml, tgt-modelarts-training):
		// the fix names it, and USER 1000 does not pass (issue 43).
		{name: "runtime: root where UID 1101 is required", target: matrix.Target{Name: "ma", Runtime: &matrix.RuntimeContract{User: "non-root", UID: 1101}}, entrypoint: []string{"/usr/bin/train"},
			want: map[string]matrix.Status{"user": matrix.Fail}, msg: map[string]string{"user": "add USER 1101 (the UID the platform requires)"}},
		{name: "runtime: USER 1000 where UID 1101 is required", target: matrix.Target{Name: "ma", Runtime: &matrix.RuntimeContract{User: "non-root", UID: 1101}}, entrypoint: []string{"/usr/bin/train"}, user: "1000",
			want: map[string]matrix.Status{"user": matrix.Fail}, msg: map[string]string{"user": "the platform requires UID 1101: write USER 1101"}},
		{name: "runtime: USER 1101:1101", target: matrix.Target{Name: "ma", Runtime: &matrix.RuntimeContract{User: "non-root", UID: 1101}}, entrypoint: []string{"/usr/bin/train"}, user: "1101:1101",
			want: map[string]matrix.Status{"user": matrix.Pass}},
		{name: "runtime: a named user where UID 1101 is required", target: matrix.Target{Name: "ma", Runtime: &matrix.RuntimeContract{User: "non-root", UID: 1101}}, entrypoint: []string{"/usr/bin/train"}, user: "ma-user",
			want: map[string]matrix.Status{"user": matrix.Warn}, msg: map[string]string{"user": "write USER 1101"}},
		{name: "size over an uncompressed limit", target: matrix.Target{Name: "ali", MaxSize: 100, SizeOf: "uncompressed"},
			want: map[string]matrix.Status{"size": matrix.Fail}},
		{name: "packaging", target: matrix.Target{Name: "sm", Platforms: []string{"linux/amd64"}, MediaTypes: []matrix.ManifestFormat{matrix.FormatDocker}},
			packaging: &matrix.Packaging{MediaType: matrix.MediaOCIManifest, Platforms: []string{"linux/arm64"}, Platform: "linux/arm64", ImageMediaType: matrix.MediaOCIManifest},
			want:      map[string]matrix.Status{"platform": matrix.Fail, "media-type": matrix.Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := base.ConfigFile()
			must(t, err)
			cfg = cfg.DeepCopy()
			cfg.Config.Entrypoint, cfg.Config.User = tt.entrypoint, tt.user
			if tt.expose != "" {
				cfg.Config.ExposedPorts = map[string]struct{}{tt.expose: {}}
			}
			img, err := mutate.ConfigFile(base, cfg)
			must(t, err)
			r, err := Inspect(t.Context(), img, Options{DB: db(t), Targets: []matrix.Target{tt.target}, Packaging: tt.packaging})
			must(t, err)
			got := map[string]Check{}
			for _, c := range TargetChecks(r.Checks) {
				k := strings.TrimPrefix(c.Name, "target:"+tt.target.Name+":")
				if i := strings.Index(k, "/"); strings.HasPrefix(k, "gpu/") && i > 0 {
					k = "gpu/" + strings.SplitN(k[i+1:], "-", 2)[0] // gpu/h100-sxm5-80gb → gpu/h100
				}
				got[k] = c
				if !strings.HasPrefix(c.Message, tt.target.Name) {
					t.Errorf("%s: the message does not name the target: %s", c.Name, c.Message)
				}
			}
			for k, want := range tt.want {
				if got[k].Status != want {
					t.Errorf("%s: %s (%s), want %s", k, got[k].Status, got[k].Message, want)
				}
			}
			for k, phrase := range tt.msg {
				if !strings.Contains(got[k].Message, phrase) {
					t.Errorf("%s: %q lacks %q", k, got[k].Message, phrase)
				}
			}
			if (r.Verdict == matrix.Fail) != containsFail(tt.want) {
				t.Errorf("verdict %s", r.Verdict)
			}
		})
	}
}

func containsFail(m map[string]matrix.Status) bool {
	for _, s := range m {
		if s == matrix.Fail {
			return true
		}
	}
	return false
}

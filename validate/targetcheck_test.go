package validate

import (
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestTargetCheckRunsEveryCheck: the check images.Import runs before a
// push is the whole of validate --target, not only the target's own
// checks (issue 23.6): a credential, an escaping tar entry or a weak
// NVIDIA_REQUIRE_CUDA refuses the import like a target check does.
func TestTargetCheckRunsEveryCheck(t *testing.T) {
	runpod := matrix.Target{Name: "runpod", Platforms: []string{"linux/amd64"}}
	after := matrix.Packaging{MediaType: matrix.MediaOCIManifest, Platforms: []string{"linux/amd64"}, Platform: "linux/amd64", ImageMediaType: matrix.MediaOCIManifest}
	akia := "AKIA" + fake(9, upper, 16)
	tests := []struct {
		name  string
		extra []file
		req   string
		fail  string // the check that must fail; "" for none
	}{
		{"clean", nil, "cuda>=12.2", ""},
		{"AWS key in a file", []file{{"app/.aws/credentials", "aws_access_key_id = " + akia + "\n"}}, "cuda>=12.2", "secrets"},
		{"private key file", []file{{"app/server.key", pemKey("PRIVATE KEY")}}, "cuda>=12.2", "secrets"},
		{"entry escaping the root", []file{{"../../etc/passwd", "root:x:0:0::/root:/bin/sh\n"}}, "cuda>=12.2", "unsafe-paths"},
		{"NVIDIA_REQUIRE_CUDA weaker than the CUDA inside", nil, "cuda>=12.0", "require-cuda"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := torchImage(t, "12.1", tt.req, nil, tt.extra...)
			checks, err := TargetCheck(runpod, Options{DB: db(t)})(t.Context(), img, after)
			must(t, err)
			failed := map[string]bool{}
			for _, c := range checks {
				if c.Status == matrix.Fail {
					failed[c.Name] = true
				}
			}
			if tt.fail == "" && len(failed) > 0 {
				t.Errorf("failed %v, want none", failed)
			}
			if tt.fail != "" && (!failed[tt.fail] || len(failed) != 1) {
				t.Errorf("failed %v, want only %s", failed, tt.fail)
			}
			if matrix.Verdict(checks) == matrix.Fail != (tt.fail != "") {
				t.Errorf("verdict %s", matrix.Verdict(checks))
			}
		})
	}
}

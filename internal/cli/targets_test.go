package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// The fleets issue 13 names; every one must be an embedded target.
var issueTargets = []string{"sagemaker/p4d", "sagemaker/p5", "sagemaker/p5e", "eks/al2023", "gke/cos-default", "gke/cos-latest",
	"vertex/serving", "runpod", "vast", "alibaba/maxcompute", "huawei/modelarts"}

func TestListTargets(t *testing.T) {
	out, errOut, code := run(t, "matrix", "list", "targets", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("not a JSON list: %v", err)
	}
	names := map[string]bool{}
	for _, r := range rows {
		for _, k := range []string{"name", "driver", "gpus", "platforms", "media_types", "compressions", "max_size", "registry", "runtime", "source"} {
			if _, ok := r[k]; !ok {
				t.Errorf("target %v lacks key %q", r["name"], k)
			}
		}
		for _, k := range []string{"gpus", "platforms", "media_types", "compressions"} {
			if _, ok := r[k].([]any); !ok {
				t.Errorf("target %v: %s is %v, want a list", r["name"], k, r[k])
			}
		}
		names[r["name"].(string)] = true
	}
	for _, n := range issueTargets {
		if !names[n] {
			t.Errorf("no embedded target %s", n)
		}
	}

	table, _, code := run(t, "matrix", "list", "targets")
	if code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	for _, want := range []string{"TARGET", "MAX SIZE", "sagemaker/p5 ", "535.54.03", "serve :8080 /ping root", "10 GB uncompressed"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// gke/cos-latest's driver is unconfirmed: the table marks it.
	for line := range strings.SplitSeq(table, "\n") {
		if strings.HasPrefix(line, "gke/cos-latest ") && !strings.Contains(line, "580.65.06?") {
			t.Errorf("unconfirmed driver not marked: %q", line)
		}
	}
}

func TestResolveTargetFlag(t *testing.T) {
	out, errOut, code := run(t, "matrix", "resolve", "--target", "sagemaker/p5", "--torch", "latest", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s["target"] != "sagemaker/p5" || s["gpu"] != "H100-SXM" {
		t.Errorf("target %v gpu %v", s["target"], s["gpu"])
	}
	notes, _ := s["notes"].([]any)
	if len(notes) == 0 || !strings.Contains(notes[0].(string), "resolved for target sagemaker/p5") {
		t.Errorf("notes do not start with the target: %v", notes)
	}

	// A team's own fleet, from a matrix file.
	dir := t.TempDir()
	mf := filepath.Join(dir, "fleet.yaml")
	fleet := `sources:
  - {id: our-cluster, url: https://wiki.example.com/gpu-cluster, retrieved: 2026-11-30}
targets:
  - name: onprem
    driver: 550.127.05
    gpus: [H100-SXM, L40S]
    platforms: [linux/amd64]
    index: true
    attestations: true
    registry: any
    source: our-cluster
`
	if err := os.WriteFile(mf, []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "matrix", "resolve", "--matrix-file", mf, "--target", "onprem", "--torch", "latest")
	if code != 0 {
		t.Fatalf("onprem: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"target               onprem", "target GPUs          H100-SXM,L40S", "its driver 550.127.05 and GPUs H100-SXM,L40S"} {
		if !strings.Contains(out, want) {
			t.Errorf("onprem stack lacks %q:\n%s", want, out)
		}
	}

	for _, args := range [][]string{
		{"matrix", "resolve", "--target", "sagemaker/p6"},
		{"build", "--target", "sagemaker/p6", "--dockerfile-only"},
	} {
		_, errOut, code = run(t, args...)
		if code != 2 || !strings.Contains(errOut, `unknown target "sagemaker/p6": did you mean`) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a suggestion", args, code, errOut)
		}
	}
	if _, errOut, code = run(t, "matrix", "resolve", "--target", "sagemaker/p5", "--compat"); code != 0 {
		t.Errorf("--compat with --target: exit %d: %s", code, errOut)
	}
}

// TestBuildTargetFlag checks that build resolves the same stack for a
// target as matrix resolve; the build itself stops at pinning the base
// image, on a registry mirror that refuses connections.
func TestBuildTargetFlag(t *testing.T) {
	out, errOut, code := run(t, "matrix", "resolve", "--target", "sagemaker/p4d", "--torch", "latest", "-o", "json")
	if code != 0 {
		t.Fatalf("resolve: exit %d: %s", code, errOut)
	}
	var want matrix.Stack
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, "build", "--target", "sagemaker/p4d", "--torch", "latest", "--dockerfile-only", "--registry-mirror", "docker.io=127.0.0.1:1")
	if code != 2 || !strings.Contains(errOut, "gpuimg: stack "+want.Summary()+"\n") {
		t.Fatalf("build --target: exit %d, want 2 after resolving %q:\n%s", code, want.Summary(), errOut)
	}
	// The layers' compression: gzip for a target that takes no zstd,
	// unless named; zstd (the default) for one that takes any.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "sagemaker/p4d", "--torch", "latest"}, "gpuimg: layers gzip (target sagemaker/p4d takes no zstd layers)\n"},
		{[]string{"--target", "sagemaker/p4d", "--torch", "latest", "--compression", "estargz"}, "gpuimg: layers estargz (from the command line)\n"},
		{[]string{"--target", "eks/al2023", "--torch", "latest"}, "gpuimg: layers zstd (the default;"},
		{[]string{"--cuda", "12.4", "--torch", "2.5"}, "gpuimg: layers zstd (the default;"},
	} {
		_, errOut, _ = run(t, append([]string{"build", "--dockerfile-only", "--registry-mirror", "docker.io=127.0.0.1:1"}, tt.args...)...)
		if !strings.Contains(errOut, tt.want) {
			t.Errorf("build %v: stderr lacks %q:\n%s", tt.args, tt.want, errOut)
		}
	}
}

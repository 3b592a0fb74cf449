package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(t.Context(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestResolveJSONContract checks the keys the issue fixes as the public
// JSON contract of `gpuimg matrix resolve -o json`.
func TestResolveJSONContract(t *testing.T) {
	out, errOut, code := run(t, "matrix", "resolve", "--cuda", "12.2", "--torch", "2.3", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"cuda", "cudnn", "python", "os", "flavor", "base_image", "min_driver", "min_driver_compat", "require_cuda", "gpu_archs", "frameworks", "notes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	fw := m["frameworks"].(map[string]any)["torch"].(map[string]any)
	for _, k := range []string{"version", "cuda", "cudnn", "index_url", "packages"} {
		if _, ok := fw[k]; !ok {
			t.Errorf("frameworks.torch lacks %q", k)
		}
	}
	if m["cuda"] != "12.2.2" || fw["version"] != "2.3.1" || fw["cuda"] != "12.1" {
		t.Errorf("cuda %v torch %v cu %v", m["cuda"], fw["version"], fw["cuda"])
	}
	if errOut != "" {
		t.Errorf("stderr not empty on success: %q", errOut)
	}
}

func TestExitCodesAndErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("cuda:\n  - version: 12.2.2\n    min_drvier: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		code    int
		errHas  string
		outHas  string
		errOnce bool
	}{
		{"help teaches", []string{"matrix", "resolve", "--help"}, 0, "", "gpuimg matrix resolve --cuda 12.2 --torch 2.3", false},
		{"conflict exits 1 with alternatives", []string{"matrix", "resolve", "--cuda", "11.7", "--torch", "2.3"}, 1, "without --cuda 11.7:", "", true},
		{"conflict as JSON for CI", []string{"matrix", "resolve", "--cuda", "11.7", "--torch", "2.3", "-o", "json"}, 1, "no stack fits", `"alternatives"`, true},
		{"unknown version exits 2", []string{"matrix", "resolve", "--torch", "0.1"}, 2, `no torch release matches "0.1"`, "", true},
		{"bad constraint exits 2", []string{"matrix", "resolve", "--cuda", ">=twelve"}, 2, "--cuda: constraint", "", true},
		{"bad driver exits 2", []string{"matrix", "resolve", "--driver", "latest"}, 2, "--driver", "", true},
		{"unknown flag exits 2", []string{"matrix", "resolve", "--cuad", "12"}, 2, "unknown flag: --cuad", "", true},
		{"unknown GPU exits 2", []string{"matrix", "resolve", "--gpu", "voodoo5"}, 2, `unknown GPU "voodoo5"`, "", true},
		{"malformed matrix file names file and line", []string{"matrix", "resolve", "--matrix-file", bad}, 2, "bad.yaml: line 3: unknown key \"min_drvier\"", "", true},
		{"missing matrix file", []string{"matrix", "list", "cuda", "--matrix-file", "/nonexistent/x.yaml"}, 2, "read matrix file", "", true},
		{"unknown list", []string{"matrix", "list", "drivers"}, 2, `unknown list "drivers"`, "", true},
		{"bad output", []string{"matrix", "resolve", "-o", "xml"}, 2, `unknown output format "xml"`, "", true},
		{"check passes", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "h100"}, 0, "", "verdict: pass", false},
		{"check fails on an old driver", []string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "470.57.02"}, 1, "does not run", "FAIL  driver", true},
		{"check judges the stack resolve gives for the host", []string{"matrix", "check", "--torch", "2.7", "--driver", "525.60.13", "--gpu", "a100"}, 0, "", "stack: CUDA 11.8.0, torch 2.7.1 (CUDA 11.8)", false},
		{"resolve --all lists the releases that fit", []string{"matrix", "resolve", "--all", "--torch", ">=2.7,<2.9", "--driver", "525.60.13", "--gpu", "a100"}, 0, "", "2.7.1  yes   CUDA 11.8.0", false},
		{"resolve --all says why a release does not fit", []string{"matrix", "resolve", "--all", "--torch", "2.8", "--driver", "525.60.13"}, 1, "no torch release fits", "2.8.0  no    driver 525.60.13 is below the stack's floor", true},
		{"resolve --all needs one framework", []string{"matrix", "resolve", "--all"}, 2, "--all lists the releases of one framework", "", true},
		{"check needs a host", []string{"matrix", "check", "--torch", "2.3"}, 2, "nothing to check against", "", true},
		{"compat needs driver", []string{"matrix", "resolve", "--compat"}, 2, "--compat needs --driver", "", true},
		{"list torch", []string{"matrix", "list", "torch"}, 0, "", "2.3.1", false},
		{"list sources", []string{"matrix", "list", "sources"}, 0, "", "https://", false},
		{"list links", []string{"matrix", "list", "links"}, 0, "", "128b/130b  3.938", false},
		{"version", []string{"version", "-o", "json"}, 0, "", `"go"`, false},
		{"completion", []string{"completion", "bash"}, 0, "", "bash completion", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if tt.errHas != "" && !strings.Contains(errOut, tt.errHas) {
				t.Errorf("stderr %q lacks %q", errOut, tt.errHas)
			}
			if tt.outHas != "" && !strings.Contains(out, tt.outHas) {
				t.Errorf("stdout lacks %q:\n%s", tt.outHas, out)
			}
			if tt.errOnce && strings.Count(errOut, "gpuimg:") != 1 {
				t.Errorf("error printed %d times: %q", strings.Count(errOut, "gpuimg:"), errOut)
			}
			if strings.Contains(errOut, "Usage:") {
				t.Errorf("usage dumped on error: %q", errOut)
			}
		})
	}
}

func TestCheckReadsResolvedStack(t *testing.T) {
	out, errOut, code := run(t, "matrix", "resolve", "--torch", "2.3", "-o", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	p := filepath.Join(t.TempDir(), "stack.json")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "matrix", "check", "--stack", p, "--gpu", "sm_100", "-o", "json")
	var v struct {
		Verdict string `json:"verdict"`
		Checks  []struct{ Name, Status, Message string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	// torch 2.3 resolves to CUDA 11.8, which predates Blackwell.
	if code != 1 || v.Verdict != "fail" {
		t.Fatalf("exit %d verdict %s, want 1 fail: %+v", code, v.Verdict, v.Checks)
	}
}

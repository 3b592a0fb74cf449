package capture_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/capture"
)

func builtin(t *testing.T) *matrix.DB {
	t.Helper()
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// captureDir captures root as dir:root.
func captureDir(t *testing.T, root string) *capture.Result {
	t.Helper()
	img, err := capture.DirImage(t.Context(), root, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := capture.Capture(t.Context(), img, capture.Options{Source: "dir:" + root, DB: builtin(t), Now: func() time.Time { return time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCaptureHandBuilt(t *testing.T) {
	root := t.TempDir()
	minimalDpkg(t, root)
	handBuilt(t, root)
	r := captureDir(t, root)
	s := r.Spec
	if s.Torch != "2.6.0" || s.CUDA != "12.4" || s.Python != "3.11" {
		t.Errorf("stack: torch %q cuda %q python %q, want 2.6.0, 12.4, 3.11 (notes %q)", s.Torch, s.CUDA, s.Python, s.Capture.Stack)
	}
	if s.Capture.Base == "" {
		t.Errorf("no base chosen: %q", s.Capture.Stack)
	}
	wantPip := []string{"certifi==2024.8.30", "charset-normalizer==3.4.0", "einops==0.8.0", "idna==3.10", "requests==2.32.3", "urllib3==2.2.3"}
	if !slices.Equal(s.Pip, wantPip) {
		t.Errorf("pip:\n got %q\nwant %q", s.Pip, wantPip)
	}
	if !slices.Equal(s.Apt, []string{"git"}) {
		t.Errorf("apt: got %q, want [git] (git-man is apt's dependency, base-files required, python3 the stack's)", s.Apt)
	}
	wantEnv := map[string]string{"CUDA_HOME": "/usr/local/cuda-12.4", "HF_HOME": "/data/hf", "NCCL_DEBUG": "INFO"}
	if len(s.Env) != len(wantEnv) {
		t.Errorf("env: got %v, want %v", s.Env, wantEnv)
	}
	for k, v := range wantEnv {
		if s.Env[k] != v {
			t.Errorf("env %s: got %q, want %q", k, s.Env[k], v)
		}
	}
	got := map[string]string{}
	for _, it := range s.Capture.Unreproducible {
		got[it.Kind+" "+it.What] = it.Version
	}
	for _, want := range []string{"pip-url mylib", "conda python", "conda numpy", "cuda-runfile /usr/local/cuda-12.4", "unowned-file /usr/local/lib/libhandmade.so.1", "unowned-file /opt/tools/run.sh", "secret-env AWS_ACCESS_KEY_ID", "secret-env AWS_SECRET_ACCESS_KEY"} {
		if _, ok := got[want]; !ok {
			t.Errorf("unreproducible: %q missing from %v", want, got)
		}
	}
	if len(got) != 8 {
		t.Errorf("unreproducible: got %d items, want 8: %v", len(got), got)
	}
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	j, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range [][]byte{y, j} {
		if strings.Contains(string(out), fakeAWSSecret) || strings.Contains(string(out), fakeAWSKeyID) {
			t.Fatalf("the AWS key is in the capture:\n%s", out)
		}
	}
	if !strings.Contains(string(y), "git+https://github.com/example/mylib.git@"+gitCommit) {
		t.Errorf("the git install's URL and commit are not named:\n%s", y)
	}
	// gpuimg build -f takes it as it is.
	file := filepath.Join(t.TempDir(), "env.yaml")
	if err := os.WriteFile(file, y, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := builder.LoadConfig(file)
	if err != nil {
		t.Fatalf("builder.LoadConfig refuses the capture: %v\n%s", err, y)
	}
	if cfg.Stack[matrix.FieldTorch] != "2.6.0" || !slices.Equal(cfg.Pip, wantPip) {
		t.Errorf("builder reads torch %q pip %q", cfg.Stack[matrix.FieldTorch], cfg.Pip)
	}
	t.Logf("capture:\n%s", y)
	var back capture.Result
	if err := json.Unmarshal(j, &back); err != nil || back.Facts == nil || len(back.Facts.Dists) != len(r.Facts.Dists) {
		t.Errorf("the JSON does not round-trip: %v", err)
	}
}

func TestDiff(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, root := range []string{a, b} {
		minimalDpkg(t, root)
		handBuilt(t, root)
	}
	collect := func(root string, files bool) *capture.Facts {
		t.Helper()
		img, err := capture.DirImage(t.Context(), root, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, _, err := capture.Collect(t.Context(), img, capture.CollectOptions{Name: root, DB: builtin(t), Files: files})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if d := capture.Diff(collect(a, true), collect(b, true), capture.DiffOptions{Files: true}); !d.Same {
		t.Fatalf("two copies of one tree differ: %+v", d.Kinds)
	}
	// b: einops upgraded, a hand-copied file more, NCCL_DEBUG changed.
	if err := os.RemoveAll(filepath.Join(b, "opt/venv/lib/python3.11/site-packages/einops-0.8.0.dist-info")); err != nil {
		t.Fatal(err)
	}
	w := func(p, c string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(b, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("opt/venv/lib/python3.11/site-packages/einops-0.8.1.dist-info/METADATA", "Name: einops\nVersion: 0.8.1\n")
	w("srv/model/config.json", "{}")
	w("etc/environment", "NCCL_DEBUG=WARN\nHF_HOME=/data/hf\nCUDA_HOME=/usr/local/cuda-12.4\n")
	fa, fb := collect(a, true), collect(b, true)
	tests := []struct {
		name  string
		files bool
		want  map[string][]capture.Change
	}{
		{"without files", false, map[string][]capture.Change{
			capture.KindPython: {{Name: "einops", A: "0.8.0", B: "0.8.1"}},
			capture.KindEnv:    {{Name: "NCCL_DEBUG", A: "INFO", B: "WARN"}},
		}},
		{"with files", true, map[string][]capture.Change{
			capture.KindPython: {{Name: "einops", A: "0.8.0", B: "0.8.1"}},
			capture.KindEnv:    {{Name: "NCCL_DEBUG", A: "INFO", B: "WARN"}},
			capture.KindFiles:  {{Name: "/srv/model/config.json", A: "", B: "present"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := capture.Diff(fa, fb, capture.DiffOptions{Files: tt.files})
			if d.Same || len(d.Kinds) != len(tt.want) {
				t.Fatalf("got %+v, want kinds %v", d.Kinds, tt.want)
			}
			for _, k := range d.Kinds {
				if !slices.Equal(k.Changes, tt.want[k.Kind]) {
					t.Errorf("%s: got %+v, want %+v", k.Kind, k.Changes, tt.want[k.Kind])
				}
			}
		})
	}
	// The capture file of a against b: only what it pins is compared.
	y, err := captureDir(t, a).Spec.YAML()
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := capture.ReadFile("env.yaml", y)
	if err != nil {
		t.Fatal(err)
	}
	if d := capture.Diff(pinned, fa, capture.DiffOptions{}); !d.Same {
		t.Errorf("the capture differs from its own source: %+v", d.Kinds)
	}
	d := capture.Diff(pinned, fb, capture.DiffOptions{})
	if len(d.Kinds) != 2 || d.Kinds[0].Kind != capture.KindPython || d.Kinds[1].Kind != capture.KindEnv {
		t.Errorf("capture file against b: got %+v, want python einops and env NCCL_DEBUG", d.Kinds)
	}
}

package matrix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinLoads(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	// Spot checks of facts the issue names, from NVIDIA's release notes.
	floors := map[string]string{"12.2.2": "535.104.05", "11.8.0": "520.61.05", "12.4.1": "550.54.15"}
	for v, want := range floors {
		got, ok := db.DriverFloor(MustVersion(v))
		if !ok || got.String() != want {
			t.Errorf("driver floor of CUDA %s = %s, want %s", v, got, want)
		}
	}
	compat := map[int]string{11: "450.80.02", 12: "525.60.13"}
	for major, want := range compat {
		if got, ok := db.CompatFloor(major); !ok || got.String() != want {
			t.Errorf("compat floor of CUDA %d = %s, want %s", major, got, want)
		}
	}
	// Coverage the issue asks for.
	has := func(what string, ok bool) {
		if !ok {
			t.Errorf("built-in matrix lacks %s", what)
		}
	}
	cudaHas := func(prefix string) bool {
		for _, r := range db.CUDA {
			if r.Version.HasPrefix(MustVersion(prefix)) {
				return true
			}
		}
		return false
	}
	for _, v := range []string{"11.0", "11.8", "12.0", "12.2", "12.9", "13.0"} {
		has("CUDA "+v, cudaHas(v))
	}
	torchHas := func(v string) bool {
		for _, r := range db.Torch {
			if r.Version.HasPrefix(MustVersion(v)) {
				return true
			}
		}
		return false
	}
	for _, v := range []string{"1.13", "2.0", "2.3", "2.5"} {
		has("torch "+v, torchHas(v))
	}
	for _, g := range []string{"v100", "t4", "a10", "a100", "l4", "l40s", "rtx4090", "h100", "h100-pcie", "h200", "b200"} {
		_, err := db.FindGPU(g)
		has("GPU "+g, err == nil && !strings.HasPrefix(g, "sm_"))
	}
	for _, o := range []string{"ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "rockylinux8", "rockylinux9"} {
		found := false
		for _, r := range db.OS {
			found = found || r.Name == o
		}
		has("OS "+o, found)
	}
	has("TensorFlow rows", len(db.TensorFlow) > 0)
	has("JAX rows", len(db.JAX) > 0)
	has("cuDNN rows", len(db.CuDNN) > 0)
	has("NCCL rows", len(db.NCCL) > 0)
	// Every source has a URL; every GPU has its peaks (validation compares
	// to them), unless a note says no datasheet gave them: then it records
	// none, so the note cannot go stale. A row whose sources give only some
	// of memory, bandwidth and FP32 says so in a note starting "peaks partly
	// unknown" and records at least one peak.
	for id, s := range db.Sources {
		if !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "http://") {
			t.Errorf("source %s has no URL", id)
		}
	}
	for _, g := range db.GPUs {
		anyPeak := g.MemoryBandwidthGBs != 0 || g.FP32TFLOPS != 0 || g.TF32TFLOPS != 0 || g.FP16TFLOPS != 0 || g.BF16TFLOPS != 0
		complete := g.MemoryGB != 0 && g.MemoryBandwidthGBs != 0 && g.FP32TFLOPS != 0
		switch {
		case notePrefixed(g, "peaks unknown") && anyPeak:
			t.Errorf("GPU %s (%s) says its peaks are unknown but records some", g.Name, g.At)
		case notePrefixed(g, "peaks partly unknown") && (complete || !anyPeak):
			t.Errorf("GPU %s (%s) says its peaks are partly unknown but records all or none of memory, bandwidth and FP32", g.Name, g.At)
		case !notePrefixed(g, "peaks unknown") && !notePrefixed(g, "peaks partly unknown") && !complete:
			t.Errorf("GPU %s (%s) lacks memory, bandwidth or FP32 peak and has no 'peaks unknown' or 'peaks partly unknown' note", g.Name, g.At)
		}
	}
}

// notePrefixed says whether one of a GPU row's notes starts with prefix:
// "peaks unknown" (no datasheet gave its peaks) or "peaks partly unknown"
// (its sources give only some of them).
func notePrefixed(g GPU, prefix string) bool {
	for _, n := range g.Notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// TestGPURows checks the GPU table as a whole: every arch has a row in
// archs (so CUDA support can be judged), aliases are lowercase single
// words that name one row only, and the cards people rent resolve by the
// names they type and the names NVML prints (lowercased, "NVIDIA " cut,
// spaces as hyphens, as validate matches them).
func TestGPURows(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, g := range db.GPUs {
		owner[strings.ToLower(g.Name)] = g.Name
	}
	for _, g := range db.GPUs {
		if _, ok := db.Arch(g.Arch); !ok {
			t.Errorf("GPU %s (%s): arch %s has no row under archs", g.Name, g.At, g.Arch)
		}
		for _, a := range g.Aliases {
			if a != strings.ToLower(a) || strings.ContainsAny(a, " _") {
				t.Errorf("GPU %s (%s): alias %q must be lowercase with hyphens", g.Name, g.At, a)
			}
			if o, ok := owner[a]; ok && o != g.Name {
				t.Errorf("GPU %s (%s): alias %q already names %s", g.Name, g.At, a, o)
			}
			owner[a] = g.Name
		}
	}
	for _, tt := range []struct{ name, row, arch string }{
		{"rtx3090", "RTX-3090", "sm_86"},
		{"geforce-rtx-3090", "RTX-3090", "sm_86"},
		{"5090", "RTX-5090", "sm_120"},
		{"geforce-rtx-5090", "RTX-5090", "sm_120"},
		{"geforce-rtx-4090-d", "RTX-4090D", "sm_89"},
		{"4090", "RTX-4090", "sm_89"},
		{"rtx-6000-ada-generation", "RTX-6000-Ada", "sm_89"},
		{"rtx-pro-6000", "RTX-PRO-6000-Workstation", "sm_120"},
		{"rtx-pro-6000-blackwell-server-edition", "RTX-PRO-6000-Server", "sm_120"},
		{"rtx-pro-6000-blackwell-workstation-edition", "RTX-PRO-6000-Workstation", "sm_120"},
		{"rtx-pro-6000-blackwell-max-q-workstation-edition", "RTX-PRO-6000-Max-Q", "sm_120"},
		{"a800", "A800-SXM4-80GB", "sm_80"},
		{"a800-sxm4-40gb", "A800-SXM4-40GB", "sm_80"},
		{"a800-80gb-pcie", "A800-PCIE-80GB", "sm_80"},
		{"h800", "H800-SXM", "sm_90"},
		{"h20", "H20", "sm_90"},
		{"h200", "H200-SXM", "sm_90"},
		{"l20", "L20", "sm_89"},
		{"l40", "L40", "sm_89"},
		{"p100", "P100-PCIE-16GB", "sm_60"},
		{"tesla-p100-pcie-16gb", "P100-PCIE-16GB", "sm_60"},
		{"p100-sxm2", "P100-SXM2-16GB", "sm_60"},
		{"b300-sxm6-ac", "B300", "sm_103"},
		{"gb300", "GB300", "sm_103"},
		{"gb200", "GB200", "sm_100"},
	} {
		g, err := db.FindGPU(tt.name)
		if err != nil || g.Name != tt.row || g.Arch != tt.arch {
			t.Errorf("FindGPU(%q) = %s %s, %v; want %s %s", tt.name, g.Name, g.Arch, err, tt.row, tt.arch)
		}
	}
}

func TestMatrixFileErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"syntax", "cuda:\n  - version: 12.2.2\n   min_driver: x\n", "rows.yaml: line 1: did not find expected"},
		{"unknown key", "sources:\n  - {id: s, url: https://x}\ncuda:\n  - version: 12.2.2\n    min_drvier: 535.104.05\n    source: s\n", `rows.yaml: line 5: unknown key "min_drvier" in cuda[]`},
		{"unknown top-level key", "pytorch: []\n", `rows.yaml: line 1: unknown key "pytorch" in the file`},
		{"bad version", "cuda:\n  - version: 12.x.2\n", "rows.yaml: line 2: version \"12.x.2\""},
		{"bad constraint", "cudnn:\n  - version: 9.1.0\n    cuda: '>=12.0,,<'\n", "rows.yaml: line 3: constraint"},
		{"wrong type", "gpus:\n  - name: X\n    memory_gb: lots\n", `rows.yaml: line 3: gpus[].memory_gb must be a number, not "lots"`},
		{"mapping for a scalar", "gpus:\n  - name: {first: X}\n", "line 2: gpus[].name must be a single value, not a mapping"},
		{"wrong type the decoder finds", "torch:\n  - version: 9.0.0\n    variants: [{cuda: '12.4', pypi: maybe}]\n", "rows.yaml: line 3: cannot unmarshal !!str `maybe` into bool"},
		{"second document", "sources: []\n---\ncuda:\n  - {version: 99.1.0}\n", "rows.yaml: line 3: a second YAML document (after ---)"},
		{"second document after an empty one", "---\n---\nsources: []\n---\ngpus: []\n", "rows.yaml: line 5: a second YAML document"},
		{"list expected", "torch:\n  - version: 2.3.1\n    variants: cu121\n", "line 3: torch[].variants must be a list"},
		{"dangling source", "sources: [{id: s, url: https://x}]\ncuda:\n  - {version: 99.1.0, min_driver: 999.1, source: nope}\n", `rows.yaml:3: CUDA 99.1.0 names source "nope"`},
		{"missing source", "cuda:\n  - {version: 99.1.0, min_driver: 999.1}\n", "rows.yaml:2: CUDA 99.1.0 has no source"},
		{"duplicate", "sources: [{id: s, url: https://x}]\ngpus:\n  - {name: X1, arch: sm_90, source: s}\n  - {name: X1, arch: sm_90, source: s}\n", "rows.yaml:4: GPU x1 is listed twice"},
		{"cuda needs x.y.z", "sources: [{id: s, url: https://x}]\ncuda:\n  - {version: '99.1', min_driver: 999.1, source: s}\n", "must be x.y.z"},
		{"unknown OS in base images", "sources: [{id: s, url: https://x}]\nbase_images:\n  - {cuda: 12.2.2, os: [debian12], flavors: [runtime], source: s}\n", `name OS "debian12", which has no os: row`},
		{"bad status", "sources: [{id: s, url: https://x}]\ntorch:\n  - version: 9.0.0\n    python: '>=3.10'\n    source: s\n    variants: [{cuda: '12.4', status: beta}]\n", "status must be stable or experimental"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "rows.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestMatrixFileProblems: every problem of a file is found, one line
// each; the error shows the first five and counts the rest.
func TestMatrixFileProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("gpus:\n")
	for i := range 8 {
		fmt.Fprintf(&b, "  - name: G%d\n    memory_gb: lots\n", i)
	}
	b.WriteString("  - name: G9\n    memroy_gb: 80\n")
	p := filepath.Join(t.TempDir(), "rows.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	var probs Problems
	if !errors.As(err, &probs) || len(probs) != 9 {
		t.Fatalf("Load error = %v, want 9 Problems", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], p+": line 3: gpus[].memory_gb") || lines[5] != "… and 4 more problems" {
		t.Errorf("error lines:\n%s", err)
	}
	if !strings.Contains(probs[8].Error(), `line 19: unknown key "memroy_gb"`) {
		t.Errorf("last problem %v", probs[8])
	}
}

// TestMatrixFileEmptyDocuments: a file may start with --- and end with
// one; only a second document with content is refused.
func TestMatrixFileEmptyDocuments(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rows.yaml")
	rows := "---\n# our rows\nsources:\n  - {id: ours, url: https://wiki.example.invalid/x}\n---\n"
	if err := os.WriteFile(p, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := db.Sources["ours"]; !ok {
		t.Error("the first document's source is missing")
	}
}

func TestMatrixFileAddsAndReplaces(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ours.yaml")
	rows := `sources:
  - id: ours
    title: our internal build notes
    url: https://wiki.example.invalid/gpu-builds
torch:
  - version: 2.3.99
    python: ">=3.10,<3.13"
    source: ours
    variants:
      - {cuda: "12.1", status: stable, cudnn: 8.9.2.26, archs: [sm_80, sm_90], index_url: "https://pypi.example.invalid/simple"}
cuda:
  - {version: 12.2.2, min_driver: 535.104.06, source: ours}
`
	if err := os.WriteFile(p, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Resolve(Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3")})
	if err != nil {
		t.Fatal(err)
	}
	if s.Frameworks["torch"].Version != "2.3.99" || s.Frameworks["torch"].IndexURL != "https://pypi.example.invalid/simple" {
		t.Errorf("torch = %+v, want our 2.3.99 row", s.Frameworks["torch"])
	}
	if s.MinDriver != "535.104.06" {
		t.Errorf("min_driver = %s, want our replaced 535.104.06", s.MinDriver)
	}
	if s.Sources["ours"] == "" {
		t.Errorf("sources %v lack ours", s.Sources)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "CUDA 12.2.2 from ours.yaml:12 replaces the row at data/cuda.yaml") {
		t.Errorf("no note on the replaced row: %v", s.Notes)
	}
}

package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJudgeGPUDriver: a GPU needs a driver branch that knows it. The facts
// are gpus.yaml's and cuda.yaml's driver: rows (drv-ogkm: NVIDIA's
// open-gpu-kernel-modules lists per release tag; drv-arch-matrix: NVIDIA's
// CUDA Toolkit, Driver and Architecture Matrix).
func TestJudgeGPUDriver(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		gpu, driver string
		want        Status
		has         string
	}{
		{"h100", "470.57.02", Fail, "from branch R525"},          // H100 SXM: R525
		{"H100 PCIe", "520.61.05", Pass, "from R520"},            // H100 PCIe: R520 (CHANGELOG 520.61.05)
		{"h100", "520.61.05", Fail, "update the driver to R525"}, // SXM: not in R520
		{"h100", "525.60.13", Warn, "from 525.85.05 on"},         // in the branch, before the release that lists it
		{"h100", "535.104.05", Pass, "knows H100-SXM"},
		{"RTX 5090", "535.104.05", Fail, "R570"}, // Blackwell: R570
		{"RTX 5090", "570.86.16", Pass, ""},
		{"RTX 4090", "520.56.06", Pass, ""},
		{"L4", "520.61.05", Fail, "R525"},
		{"H200", "535.104.05", Fail, "R550"},
		{"B200", "570.86.15", Pass, ""},
		{"sm_90", "520.61.05", Pass, ""},                       // an architecture: its first GPUs' branch
		{"P100", "595.71.05", Fail, "R580 is the last branch"}, // Pascal dropped after R580
		{"V100", "580.65.06", Pass, "up to R580"},
		// A30 has no row of its own: its architecture's branch is a lower
		// bound, and the A100's first release is not inherited.
		{"A30", "450.36.06", Pass, "records no branch for A30 itself"},
		{"A30", "440.33.01", Fail, "R450"},
	} {
		t.Run(tt.gpu+"@"+tt.driver, func(t *testing.T) {
			g, err := db.FindGPU(tt.gpu)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := db.JudgeGPUDriver("gpu/driver", g, MustVersion(tt.driver))
			if !ok || f.Status != tt.want || !strings.Contains(f.Message, tt.has) {
				t.Errorf("JudgeGPUDriver(%s, %s) = %v %s %q; want %s with %q", g.Name, tt.driver, ok, f.Status, f.Message, tt.want, tt.has)
			}
		})
	}
	// No driver: nothing to judge.
	if g, err := db.FindGPU("h100"); err != nil {
		t.Fatal(err)
	} else if f, ok := db.JudgeGPUDriver("gpu/driver", g, Version{}); ok {
		t.Errorf("no driver judged: %+v", f)
	}
	// No branch recorded for the GPU or its architecture: unknown, naming
	// the missing fact and how to supply it, never a pass and never silence.
	if g, err := db.FindGPU("T4"); err != nil {
		t.Fatal(err)
	} else if f, ok := db.JudgeGPUDriver("gpu/driver", g, MustVersion("450.51.05")); !ok || f.Status != UnknownFact ||
		!strings.Contains(f.Missing, "which driver branches know T4") || !strings.Contains(f.Supply, "--matrix-file gpus: row for T4") {
		t.Errorf("T4 has no recorded branch: got %v %+v, want an unknown finding naming the fact and the --matrix-file row", ok, f)
	}
}

// TestDriverSupportRows holds the data to its schema: a GPU's branch is
// never below its architecture's, and a matrix file's driver: row needs a
// known source and branch numbers.
func TestDriverSupportRows(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range db.GPUs {
		s, ok := db.DriverSupportOf(g)
		if !ok {
			continue
		}
		if a, _ := db.Arch(g.Arch); !a.Driver.Branch.IsZero() && s.Branch.Less(a.Driver.Branch) {
			t.Errorf("%s: branch %s below %s's %s", g.Name, s.Branch, g.Arch, a.Driver.Branch)
		}
		if _, ok := db.Sources[s.Source]; !ok {
			t.Errorf("%s: driver source %q unknown", g.Name, s.Source)
		}
	}
	for _, tt := range []struct{ yaml, err string }{
		{"gpus:\n  - name: X1\n    arch: sm_90\n    source: drv-ogkm\n    driver: {branch: \"525\", first: 530.30.02, source: drv-ogkm}\n", "must be a release of its branch"},
		{"gpus:\n  - name: X1\n    arch: sm_90\n    source: drv-ogkm\n    driver: {branch: 525.60.13, source: drv-ogkm}\n", "must be a branch number"},
		{"gpus:\n  - name: X1\n    arch: sm_90\n    source: drv-ogkm\n    driver: {branch: \"510\", source: drv-ogkm}\n", "below its architecture sm_90's 520"},
		{"gpus:\n  - name: X1\n    arch: sm_90\n    source: drv-ogkm\n    driver: {branch: \"525\"}\n", "driver needs a source"},
		{"gpus:\n  - name: X1\n    arch: sm_90\n    source: drv-ogkm\n    driver: {brnach: \"525\"}\n", `unknown key "brnach"`},
	} {
		p := filepath.Join(t.TempDir(), "x.yaml")
		if err := os.WriteFile(p, []byte(tt.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("overlay %q: error %v, want %q", tt.yaml, err, tt.err)
		}
	}
}

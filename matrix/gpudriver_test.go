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
		{"h100", "470.57.02", Fail, "from branch R525"},           // H100 SXM: R525
		{"H100 PCIe", "520.61.05", Pass, "R520 releases list it"}, // H100 PCIe: R520 (CHANGELOG 520.61.05)
		{"h100", "520.61.05", Fail, "update the driver to R525"},  // SXM: not in R520
		{"h100", "525.60.13", Warn, "does not list H100-SXM"},     // in the branch, after an off-cycle build that lists it, before the mainline one
		{"h100", "525.47.04", Warn, "from 525.47.07 on"},          // in the branch, before the first release that lists it
		{"h100", "525.47.07", Pass, "list it from 525.47.07"},     // the off-cycle build that lists it
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
	// No branch recorded for the GPU or its architecture (sm_75 alone, with
	// no GPU row): unknown, naming the missing fact and how to supply it,
	// never a pass and never silence.
	if g, err := db.FindGPU("sm_75"); err != nil {
		t.Fatal(err)
	} else if f, ok := db.JudgeGPUDriver("gpu/driver", g, MustVersion("450.51.05")); !ok || f.Status != UnknownFact ||
		!strings.Contains(f.Missing, "which driver branches know "+g.Name) || !strings.Contains(f.Supply, "--matrix-file gpus: row for "+g.Name) {
		t.Errorf("sm_75 has no recorded branch: got %v %+v, want an unknown finding naming the fact and the --matrix-file row", ok, f)
	}
}

// TestJudgeGPUDriverListedSince: a GPU older than NVIDIA's per-release
// lists (open-gpu-kernel-modules' first tag is 515.43.04) records
// driver.listed_since, the first tag from which every later tag's README
// "Compatible GPUs" table names it (gpus.yaml, source drv-ogkm-tags). That
// is a lower bound of what is known, not the GPU's first driver: below it
// the verdict is unknown, never fail; at or above it, pass. Both messages
// name the source. Every driver below is a tag of the repository but
// 470.57.02 and 510.47.03, CUDA 11.4's and 11.6's floors (cuda.yaml).
func TestJudgeGPUDriverListedSince(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	const src = "github.com/NVIDIA/open-gpu-kernel-modules"
	for _, tt := range []struct {
		gpu, driver string
		want        Status
	}{
		// T4: "| Tesla T4 | 1EB8 10DE 12A2 |" from 575.51.02 on; 570.211.01
		// came out later with a lower number and does not list it.
		{"T4", "535.104.05", UnknownFact},
		{"T4", "570.211.01", UnknownFact},
		{"T4", "575.51.02", Pass},
		{"T4", "595.45.04", Pass},
		// A10 and A10G: listed in 515.48.07, dropped in 515.49.06-515.57,
		// listed from 515.65.01 on.
		{"A10", "515.57", UnknownFact},
		{"A10", "515.48.07", UnknownFact},
		{"A10", "515.65.01", Pass},
		{"A10G", "470.57.02", UnknownFact},
		{"A10G", "515.65.01", Pass},
		{"A10G", "535.104.05", Pass},
		// A40, RTX A6000, RTX 3090: from 515.48.07, the first tag with a table.
		{"A40", "515.43.04", UnknownFact},
		{"A40", "515.48.07", Pass},
		{"RTX A6000", "470.57.02", UnknownFact},
		{"RTX A6000", "525.60.11", Pass},
		{"RTX 3090", "510.47.03", UnknownFact},
		{"RTX 3090", "550.54.14", Pass},
	} {
		t.Run(tt.gpu+"@"+tt.driver, func(t *testing.T) {
			g, err := db.FindGPU(tt.gpu)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := db.DriverSupportOf(g)
			if s.ListedSince.IsZero() || !s.Branch.IsZero() || s.Source != "drv-ogkm-tags" {
				t.Fatalf("%s: driver %+v, want listed_since from drv-ogkm-tags and no branch", g.Name, s)
			}
			f, ok := db.JudgeGPUDriver("gpu/driver", g, MustVersion(tt.driver))
			if !ok || f.Status != tt.want || !strings.Contains(f.Message, src) || !strings.Contains(f.Message, s.ListedSince.String()+" on") {
				t.Errorf("JudgeGPUDriver(%s, %s) = %v %s %q; want %s naming %s and %s", g.Name, tt.driver, ok, f.Status, f.Message, tt.want, src, s.ListedSince)
			}
			if tt.want == UnknownFact && (!strings.Contains(f.Missing, "a lower bound") || !strings.Contains(f.Supply, "at or above "+s.ListedSince.String())) {
				t.Errorf("JudgeGPUDriver(%s, %s): unknown %+v should say the bound is a lower one and how to supply the fact", g.Name, tt.driver, f)
			}
		})
	}
	// listed_since is a release, stands without branch and first, and is
	// for gpus: rows only.
	for _, tt := range []struct{ yaml, err string }{
		{"gpus:\n  - name: X1\n    arch: sm_86\n    source: drv-ogkm\n    driver: {listed_since: \"515\", source: drv-ogkm}\n", "must be a release"},
		{"gpus:\n  - name: X1\n    arch: sm_90\n    source: drv-ogkm\n    driver: {branch: \"525\", listed_since: 525.60.11, source: drv-ogkm}\n", "goes without branch and first"},
		{"gpus:\n  - name: X1\n    arch: sm_86\n    source: drv-ogkm\n    driver: {listed_since: 515.48.07}\n", "driver needs a source"},
		{"archs:\n  - arch: sm_86\n    name: Ampere\n    added_in: \"11.1\"\n    source: drv-ogkm\n    driver: {listed_since: 515.48.07, source: drv-ogkm}\n", "listed_since is for gpus: rows"},
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

package matrix

import (
	"strings"
	"testing"
)

// TestCurrentGenerationDrivers is issue 44's "current generation" table:
// for GPUs of 2024-2026 and three older ones, JudgeGPUDriver's verdict on
// a driver one branch too old (a real release of the branch before the
// GPU's first), at the first release whose open-gpu-kernel-modules README
// lists the GPU (an off-cycle build numbered below the mainline releases
// included: gpus.yaml's driver.branches), at the mainline first
// (driver.first), on a later release of the branch whose table leaves the
// GPU out, and on a driver too new where the GPU's support ends. Every
// driver below is a tag of NVIDIA/open-gpu-kernel-modules.
func TestCurrentGenerationDrivers(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		gpu      string
		tooOld   string // a release of the branch before the GPU's first; "" if none is recorded
		listed   string // the lowest-numbered release listing it, off-cycle included
		first    string // driver.first: the first mainline release
		unlisted string // a later release of a listed branch whose table leaves it out, if any
		tooNew   string // a release after the GPU's last branch, if any
	}{
		// 2024-2026
		{gpu: "H200", tooOld: "545.29.06", listed: "550.40.65", first: "550.90.07", unlisted: "550.78"},
		{gpu: "H20", tooOld: "530.41.03", listed: "535.43.25", first: "535.161.07", unlisted: "535.154.05"},
		{gpu: "B200", tooOld: "565.77", listed: "570.86.15", first: "570.86.15"},
		{gpu: "GB200", tooOld: "565.77", listed: "570.123.01", first: "570.124.04"},
		{gpu: "B300", tooOld: "575.64.05", listed: "580.82.07", first: "580.82.07", unlisted: "580.94.02"},
		{gpu: "GB300", tooOld: "575.64.05", listed: "580.82.07", first: "580.82.07", unlisted: "580.94.16"},
		{gpu: "RTX 5090", tooOld: "565.77", listed: "570.86.16", first: "570.86.16"},
		{gpu: "RTX 5080", tooOld: "565.77", listed: "570.86.16", first: "570.86.16"},
		{gpu: "RTX 5070 Ti", tooOld: "565.77", listed: "570.123.01", first: "570.124.04"},
		{gpu: "RTX 5070", tooOld: "565.77", listed: "570.123.07", first: "570.133.07", unlisted: "570.124.06"},
		{gpu: "RTX 5060 Ti", tooOld: "565.77", listed: "570.123.10", first: "570.148.08", unlisted: "570.144"},
		{gpu: "RTX 5060", tooOld: "565.77", listed: "570.158.01", first: "570.158.01", unlisted: ""},
		{gpu: "RTX 5050", tooOld: "570.211.01", listed: "575.64.03", first: "575.64.03"},
		{gpu: "RTX PRO 6000 Blackwell Workstation Edition", tooOld: "565.77", listed: "570.123.07", first: "570.133.07", unlisted: "570.124.04"},
		{gpu: "RTX PRO 6000 Blackwell Server Edition", tooOld: "570.211.01", listed: "575.57.08", first: "575.57.08", unlisted: "580.94.06"},
		{gpu: "RTX PRO 5000 Blackwell", tooOld: "565.77", listed: "570.153.02", first: "570.153.02"},
		{gpu: "NVIDIA GB10", tooOld: "575.64.05", listed: "580.94.13", first: "580.119.02", unlisted: "580.105.08"},
		{gpu: "RTX PRO 2000 Blackwell", tooOld: "565.77", listed: "570.190", first: "570.190"},
		// older
		{gpu: "H100 80GB HBM3", tooOld: "520.61.05", listed: "525.47.07", first: "525.85.05", unlisted: "525.60.13"},
		{gpu: "Tesla V100-SXM2-16GB", tooNew: "590.44.01"},
		{gpu: "Tesla P100-PCIE-16GB", tooNew: "595.44.02"},
	} {
		g, err := db.FindGPU(tt.gpu)
		if err != nil {
			t.Errorf("%s: %v", tt.gpu, err)
			continue
		}
		s, _ := db.DriverSupportOf(g)
		if tt.first != "" && s.First.String() != tt.first {
			t.Errorf("%s: first driver %s, want %s", g.Name, s.First, tt.first)
		}
		if tt.listed != "" && (len(s.Branches) == 0 || s.Branches[0].First.String() != tt.listed) {
			t.Errorf("%s: first listing %v, want %s", g.Name, s.Branches, tt.listed)
		}
		for _, c := range []struct {
			driver string
			want   Status
			has    string
		}{
			{tt.tooOld, Fail, "does not know"},
			{tt.listed, Pass, "knows"},
			{tt.first, Pass, "knows"},
			{tt.unlisted, Warn, "may not know it"},
			{tt.tooNew, Fail, "no longer supports"},
		} {
			if c.driver == "" {
				continue
			}
			t.Run(g.Name+"@"+c.driver, func(t *testing.T) {
				f, ok := db.JudgeGPUDriver("gpu/driver", g, MustVersion(c.driver))
				if !ok || f.Status != c.want || !strings.Contains(f.Message, c.has) {
					t.Errorf("JudgeGPUDriver(%s, %s) = %s %q, want %s with %q", g.Name, c.driver, f.Status, f.Message, c.want, c.has)
				}
			})
		}
	}
}

// TestCurrentGenerationThor: Jetson Thor (T5000, T4000) is sm_110 from
// CUDA 13.0 (sm_101 in 12.8 and 12.9, which the error names); its driver
// comes with Jetson Linux, not the open-gpu-kernel-modules tables, so
// gpu/driver is unknown, never a pass.
func TestCurrentGenerationThor(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Jetson AGX Thor", "Jetson T4000"} {
		g, err := db.FindGPU(name)
		if err != nil || g.Arch != "sm_110" {
			t.Fatalf("FindGPU(%q) = %+v, %v", name, g, err)
		}
		if err := db.CUDATargets(MustVersion("13.0"), g); err != nil {
			t.Errorf("CUDA 13.0 on %s: %v", g.Name, err)
		}
		if err := db.CUDATargets(MustVersion("12.9"), g); err == nil || !strings.Contains(err.Error(), "names this architecture sm_101, renamed sm_110 in CUDA 13.0") {
			t.Errorf("CUDA 12.9 on %s: %v, want the sm_101 name", g.Name, err)
		}
		if f, ok := db.JudgeGPUDriver("gpu/driver", g, MustVersion("580.65.06")); !ok || f.Status != UnknownFact {
			t.Errorf("driver on %s: %+v, want unknown", g.Name, f)
		}
	}
}

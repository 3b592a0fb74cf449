package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// branchesOverlay is a GPU whose release tables list it in an off-cycle
// build before its mainline first (R570), leave it out of two later
// releases, skip a branch (R575) and list it again in R580.
const branchesOverlay = `gpus:
  - name: X9
    arch: sm_120
    source: drv-ogkm-tags
    driver:
      branch: "570"
      first: 570.124.04
      branches:
        - {branch: "570", first: 570.123.01, unlisted: ["570.123.06", "570.133.07"]}
        - {branch: "580", first: 580.82.07}
      source: drv-ogkm-tags
`

// TestJudgeGPUDriverBranches: the rule reads driver.branches release by
// release. An off-cycle build that lists the GPU passes though it is
// numbered below the mainline first; a release whose table leaves it out
// warns; a branch between listed ones whose releases never list it
// warns; a branch newer than every listed one passes; older branches fail.
func TestJudgeGPUDriverBranches(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(p, []byte(branchesOverlay), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	g, err := db.FindGPU("X9")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		driver string
		want   Status
		has    string
	}{
		{"565.77", Fail, "update the driver to R570"},
		{"570.86.16", Warn, "from 570.123.01 on"},
		{"570.123.01", Pass, "R570 releases list it from 570.123.01"},
		{"570.123.06", Warn, "does not list X9"},
		{"570.123.07", Pass, "list it from 570.123.01"},
		{"570.133.07", Warn, "does not list X9"},
		{"570.211.01", Pass, "knows X9"},
		{"575.64.05", Warn, "none of whose releases list X9"},
		{"580.65.06", Warn, "from 580.82.07 on"},
		{"580.82.07", Pass, "knows X9"},
		{"595.44.02", Pass, "R595 is newer"},
	} {
		t.Run(tt.driver, func(t *testing.T) {
			f, ok := db.JudgeGPUDriver("gpu/driver", g, MustVersion(tt.driver))
			if !ok || f.Status != tt.want || !strings.Contains(f.Message, tt.has) {
				t.Errorf("JudgeGPUDriver(X9, %s) = %s %q, want %s with %q", tt.driver, f.Status, f.Message, tt.want, tt.has)
			}
		})
	}
}

// TestDriverBranchesRows: driver.branches entries are releases of their
// own branch, ascend from the row's branch on, list unlisted releases
// after their first, and go only on gpus: rows.
func TestDriverBranchesRows(t *testing.T) {
	row := "gpus:\n  - name: X1\n    arch: sm_120\n    source: drv-ogkm-tags\n    driver:\n      branch: \"570\"\n      source: drv-ogkm-tags\n      branches:\n"
	for _, tt := range []struct{ yaml, err string }{
		{row + "        - {branch: \"570\", first: 575.51.02}\n", "needs a branch number (570) and a first release of it"},
		{row + "        - {branch: \"565\", first: 565.77}\n", "below (or without) the lowest branch 570"},
		{row + "        - {branch: \"580\", first: 580.65.06}\n        - {branch: \"575\", first: 575.51.02}\n", "must ascend: 575 after 580"},
		{row + "        - {branch: \"570\", first: 570.123.01, unlisted: [570.86.16]}\n", "unlisted 570.86.16 must be a release of the branch after its first"},
		{row + "        - {branch: \"570\", first: 570.123.01, unlisted: [575.51.02]}\n", "unlisted 575.51.02 must be a release of the branch"},
		{"archs:\n  - arch: sm_120\n    name: Blackwell\n    added_in: \"12.8\"\n    source: drv-ogkm\n    driver: {branch: \"570\", source: drv-ogkm, branches: [{branch: \"570\", first: 570.86.16}]}\n", "branches is for gpus: rows"},
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

package upstream

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestUpdateReadsPyPIDefault: which CUDA variant plain "pip install
// torch==X" gets is read from PyPI's simple page in its real layout (no
// local label, files under /packages/, PEP 658 core metadata beside
// them): the Linux x86_64 wheel's CUDA runtime requirement names it, in
// CUDA 12's shape (nvidia-cuda-runtime-cu12==12.8.90), CUDA 13's
// component shape (nvidia-cuda-runtime~=13.0.48) and the cuda-toolkit
// metapackage's (==13.0.2). A row that flags no variant gains the flag, a
// row that flags another has it moved (PyPI's metadata wins, the note
// names both), a row that already agrees is not written, and a wheel
// without a runtime requirement or for a CUDA the row lacks is a
// could-not-fill, never a guess. The overlay loads.
func TestUpdateReadsPyPIDefault(t *testing.T) {
	db := builtin(t)
	// Three releases of the built-in data, each with at least two variants:
	// one flagged row to agree with, one to move, one to flag afresh.
	byVersion := map[string]matrix.Torch{}
	for _, r := range db.Torch {
		byVersion[r.Version.String()] = r
	}
	flagged := func(r matrix.Torch) string {
		for _, v := range r.Variants {
			if v.PyPI {
				return "cu" + matrix.CUDATag(v.CUDA)
			}
		}
		return ""
	}
	// A release that flags no variant: its newest variant is flagged afresh.
	var none matrix.Torch
	for _, r := range db.Torch {
		if flagged(r) == "" && none.Version.IsZero() {
			none = r
		}
	}
	if none.Version.IsZero() {
		t.Fatal("every built-in torch row flags PyPI's variant; the test needs one that does not")
	}
	noneCUDA := none.Variants[len(none.Variants)-1].CUDA.Trunc(2)
	noneTag := "cu" + matrix.CUDATag(noneCUDA)
	for _, v := range []string{"2.8.0", "2.10.0", "2.9.0", "2.3.1"} {
		if _, ok := byVersion[v]; !ok {
			t.Fatalf("built-in data has no torch %s row; the test needs one", v)
		}
	}
	if flagged(byVersion["2.8.0"]) != "cu128" || flagged(byVersion["2.10.0"]) != "cu128" {
		t.Fatalf("the test assumes 2.8.0 and 2.10.0 flag cu128; they flag %q, %q", flagged(byVersion["2.8.0"]), flagged(byVersion["2.10.0"]))
	}
	tests := []struct {
		name, version string
		requires      []string
		want          string // variant flagged in the overlay row; "" = no row
		found         string // what the finding says; "" = none
		unfilled      string // substring of the could-not-fill reason
	}{
		{"agrees: no row", "2.8.0", []string{`nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"`}, "", "", ""},
		{"CUDA 13 components move the flag", "2.10.0", []string{`nvidia-cuda-runtime~=13.0.48; platform_system == "Linux"`, `nvidia-cudnn-cu13==9.15.1.9; platform_system == "Linux"`}, "cu130", "PyPI serves cu130, the matrix said cu128", ""},
		{"cuda-toolkit flags a row that had none", none.Version.String(), []string{`cuda-toolkit[cublas,cudart]==` + noneCUDA.String() + `.0; platform_system == "Linux"`}, noneTag, "PyPI serves " + noneTag, ""},
		{"a marker for another machine is not the x86_64 wheel's", "2.9.0", []string{`nvidia-cuda-runtime-cu12==12.6.77; platform_machine == "aarch64"`}, "", "", "requires no CUDA runtime wheel"},
		{"a CUDA the row lacks", "2.3.1", []string{`nvidia-cuda-runtime-cu12==12.9.79; platform_system == "Linux"`}, "", "", "no cu129 variant"},
	}
	f := newFakeUpstream(t)
	for _, tc := range tests {
		f.addPyPITorch(tc.version, "cp312", "manylinux_2_28_x86_64", append([]string{"filelock"}, tc.requires...)...)
		f.addPyPITorch(tc.version, "cp311", "manylinux_2_28_x86_64") // an older CPython: not the one read
		f.addPyPITorch(tc.version, "cp312", "win_amd64")
	}
	f.addPyPITorch("99.0.0", "cp312", "manylinux_2_28_x86_64", `nvidia-cuda-runtime-cu12==12.8.90`) // not in the matrix: torch's to add
	ov, err := Update(t.Context(), db, WithSources(SourceTorchPyPI), WithPyPIURL(f.pypiURL()), WithClock(testDay))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := slices.IndexFunc(ov.File.Torch, func(r matrix.Torch) bool { return r.Version.String() == tc.version })
			if tc.want == "" {
				if i >= 0 {
					t.Errorf("torch %s written: %+v", tc.version, ov.File.Torch[i])
				}
			} else if i < 0 {
				t.Errorf("torch %s not written", tc.version)
			} else if got := flagged(ov.File.Torch[i]); got != tc.want {
				t.Errorf("torch %s flags %q, want %q", tc.version, got, tc.want)
			} else if n := len(ov.File.Torch[i].Variants); n != len(byVersion[tc.version].Variants) {
				t.Errorf("torch %s has %d variants, want %d", tc.version, n, len(byVersion[tc.version].Variants))
			}
			fi := slices.IndexFunc(ov.Found, func(f Finding) bool { return strings.HasPrefix(f.What, "torch "+tc.version+":") })
			switch {
			case tc.found == "" && fi >= 0:
				t.Errorf("finding %v", ov.Found[fi])
			case tc.found != "" && (fi < 0 || !strings.Contains(ov.Found[fi].What, tc.found)):
				t.Errorf("findings %v, want one saying %q", ov.Found, tc.found)
			}
			ui := slices.IndexFunc(ov.Unfilled, func(u Unfilled) bool { return u.Row == "torch "+tc.version })
			switch {
			case tc.unfilled == "" && ui >= 0:
				t.Errorf("could not fill %v", ov.Unfilled[ui])
			case tc.unfilled != "" && (ui < 0 || ov.Unfilled[ui].Field != "pypi" || !strings.Contains(ov.Unfilled[ui].Reason, tc.unfilled)):
				t.Errorf("could not fill %v, want a pypi one saying %q", ov.Unfilled, tc.unfilled)
			}
		})
	}
	if len(ov.File.Torch) != 2 || len(ov.File.Sources) != 1 || ov.File.Sources[0].ID != "upstream-pypi-torch-"+ov.Date {
		t.Errorf("rows %d, sources %+v; want 2 rows and the PyPI source", len(ov.File.Torch), ov.File.Sources)
	}
	b, err := ov.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "o.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := matrix.Load(path); err != nil {
		t.Errorf("overlay does not load: %v\n%s", err, b)
	}
}

// TestUpdatePyPIDefaultRefusesBadMetadata: metadata whose hash differs
// from PyPI's page is an error naming the URL, and nothing is written.
func TestUpdatePyPIDefaultRefusesBadMetadata(t *testing.T) {
	db := builtin(t)
	f := newFakeUpstream(t)
	p := f.addPyPITorch("2.4.0", "cp312", "manylinux_2_28_x86_64", `nvidia-cuda-runtime-cu12==12.1.105`)
	f.badHash[p+".metadata"] = true
	ov, err := Update(t.Context(), db, WithSources(SourceTorchPyPI), WithPyPIURL(f.pypiURL()), WithClock(testDay))
	if err == nil || !strings.Contains(err.Error(), p+".metadata") {
		t.Fatalf("err %v, overlay %+v; want an error naming the metadata URL", err, ov)
	}
}

package matrix

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinnedLibrariesKnown: every cuDNN and NCCL release a torch variant,
// TensorFlow row or base image names (x.y.z or longer) is a cudnn: or
// nccl: row, so a --cudnn/--nccl constraint or a stack's library never
// meets a release the matrix has not heard of (issue 44). The matrix
// knows releases by x.y.z; 9.15.1.9 is cuDNN 9.15.1.
func TestPinnedLibrariesKnown(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	known := func(rows []Library) map[string]bool {
		m := map[string]bool{}
		for _, r := range rows {
			m[r.Version.Trunc(3).String()] = true
		}
		return m
	}
	cudnn, nccl := known(db.CuDNN), known(db.NCCL)
	check := func(m map[string]bool, lib string, v Version, by string) {
		if v.Len() < 3 {
			return // a major.minor prefix (cuDNN 9.1) names a family, not a release
		}
		if !m[v.Trunc(3).String()] {
			t.Errorf("%s names %s %s, which has no %s: row", by, lib, v, lib)
		}
	}
	for _, r := range db.Torch {
		for _, v := range r.Variants {
			by := fmt.Sprintf("torch %s cu%s", r.Version, v.CUDA)
			if r.Version.Compare(MustVersion("2.4")) < 0 {
				continue // older releases' pins predate issue 44's scope
			}
			check(cudnn, "cudnn", v.CuDNN, by)
			check(nccl, "nccl", v.NCCL, by)
		}
	}
	for _, r := range db.TensorFlow {
		check(cudnn, "cudnn", r.CuDNN, "tensorflow "+r.Version.String())
	}
}

// TestCuDNNFromRedistManifests: the cuDNN releases whose NVIDIA redistrib
// manifests were read (cuda_variant "12" and "13") have rows whose CUDA
// constraint takes a CUDA 12 and a CUDA 13 toolkit, and nothing older.
func TestCuDNNFromRedistManifests(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Library{}
	for _, r := range db.CuDNN {
		rows[r.Version.String()] = r
	}
	for _, v := range []string{"9.21.0", "9.21.1", "9.23.0", "9.23.1", "9.24.0", "9.24.1", "9.28.0", "9.28.1"} {
		r, ok := rows[v]
		if !ok {
			t.Errorf("cuDNN %s: no cudnn: row", v)
			continue
		}
		for cuda, want := range map[string]bool{"12.8": true, "13.0": true, "13.2": true, "11.8": false} {
			if got := r.CUDA.Check(MustVersion(cuda)); got != want {
				t.Errorf("cuDNN %s (cuda %q) on CUDA %s: %v, want %v", v, r.CUDA, cuda, got, want)
			}
		}
	}
}

// TestCuDNNFromPackaging: cuDNN releases known from Spack's table of
// NVIDIA's archives (9.2.0: -11 and -12) or from NVIDIA's -cu12/-cu13
// wheel files take exactly the CUDA majors a build was seen for.
func TestCuDNNFromPackaging(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Library{}
	for _, r := range db.CuDNN {
		rows[r.Version.String()] = r
	}
	for _, tt := range []struct {
		version, source    string
		cuda11, cu12, cu13 bool
	}{
		{"9.2.0", "cudnn-spack-package", true, true, false},
		{"9.9.0", "cudnn-pypi-wheel-files", false, true, false},
		{"9.13.1", "cudnn-pypi-wheel-files", false, true, true},
		{"9.14.0", "cudnn-pypi-wheel-files", false, true, false},
		{"9.16.0", "cudnn-pypi-wheel-files", false, true, true},
		{"9.19.0", "cudnn-torch-pins", false, true, true}, // CUDA 12 from its -cu12 wheel
	} {
		r, ok := rows[tt.version]
		if !ok {
			t.Errorf("cuDNN %s: no cudnn: row", tt.version)
			continue
		}
		if r.Source != tt.source {
			t.Errorf("cuDNN %s: source %q, want %s", tt.version, r.Source, tt.source)
		}
		for cuda, want := range map[string]bool{"11.8": tt.cuda11, "12.4": tt.cu12, "13.0": tt.cu13} {
			if got := r.CUDA.Check(MustVersion(cuda)); got != want {
				t.Errorf("cuDNN %s (cuda %q) on CUDA %s: %v, want %v", tt.version, r.CUDA, cuda, got, want)
			}
		}
	}
}

// TestNCCLFromWheelFiles: the NCCL releases known from NVIDIA's
// nvidia-nccl-cu12/-cu13 wheel files have rows whose CUDA constraint takes
// exactly the majors a wheel was seen for (a -cu12 wheel alone does not
// make a CUDA 13 build), and the CUDA 13 builds of releases with a tag in
// the git mirror carry its default gencode. 2.27.7 and 2.29.7 were rows
// before (CUDA 13 from torch's pins); their CUDA 12 wheels widened them.
func TestNCCLFromWheelFiles(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Library{}
	for _, r := range db.NCCL {
		rows[r.Version.String()] = r
	}
	for _, tt := range []struct {
		version      string
		cuda12, cu13 bool
		gencode13    bool
		source       string // the row's own source where the wheel files only widened it
	}{
		{"2.18.3", true, false, false, ""},
		{"2.22.3", true, false, false, ""},
		{"2.23.4", true, false, false, ""},
		{"2.25.1", true, false, false, ""},
		{"2.26.5", true, false, false, ""},
		{"2.27.6", true, false, false, ""},
		{"2.27.7", true, true, true, "nccl-torch-pins"},
		{"2.28.3", true, true, true, ""},
		{"2.29.2", true, true, true, ""},
		{"2.29.7", true, true, true, "nccl-torch-pins"},
		{"2.30.3", true, true, true, ""},
		{"2.30.4", true, true, true, ""},
		{"2.31.2", true, true, false, ""},
	} {
		r, ok := rows[tt.version]
		if !ok {
			t.Errorf("NCCL %s: no nccl: row", tt.version)
			continue
		}
		if want := cmp.Or(tt.source, "nccl-pypi-wheel-files"); r.Source != want {
			t.Errorf("NCCL %s: source %q, want %s", tt.version, r.Source, want)
		}
		for cuda, want := range map[string]bool{"12.4": tt.cuda12, "12.9": tt.cuda12, "13.0": tt.cu13, "11.8": false} {
			if got := r.CUDA.Check(MustVersion(cuda)); got != want {
				t.Errorf("NCCL %s (cuda %q) on CUDA %s: %v, want %v", tt.version, r.CUDA, cuda, got, want)
			}
		}
		var g13 *Gencode
		for i := range r.Gencode {
			if r.Gencode[i].CUDA.String() == "13" {
				g13 = &r.Gencode[i]
			}
		}
		if (g13 != nil) != tt.gencode13 {
			t.Errorf("NCCL %s: CUDA 13 gencode %v, want %v", tt.version, g13 != nil, tt.gencode13)
			continue
		}
		if g13 != nil && KernelCoverage("sm_110", g13.SASS, g13.PTX) != Native {
			t.Errorf("NCCL %s CUDA 13 build (%s) on sm_110: %v, want native", tt.version, g13, KernelCoverage("sm_110", g13.SASS, g13.PTX))
		}
	}
}

// TestNCCLGencode: the NCCL rows carry what makefiles/common.mk at the
// release tag compiles for, per CUDA build, and KernelCoverage judges it:
// 2.30.7's CUDA 12.9 build has Pascal to Blackwell SASS (sm_100 runs on a
// B300, sm_120 on GB10) and its CUDA 13.3 build drops everything before
// sm_75. A gencode for a CUDA the row does not list, or an architecture
// that is not sm_XY, fails the load.
func TestNCCLGencode(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	gen := map[string]Gencode{}
	for _, r := range db.NCCL {
		for _, g := range r.Gencode {
			gen[r.Version.String()+"/"+g.CUDA.String()] = g
		}
	}
	for _, tt := range []struct {
		build, gpu string
		want       Coverage
	}{
		{"2.30.7/12.9", "sm_103", Native},
		{"2.30.7/12.9", "sm_121", Native},
		{"2.30.7/12.9", "sm_60", Native},
		{"2.30.7/12.9", "sm_110", NoKernels}, // sm_100 SASS is not 11.x, sm_120 PTX does not JIT down to 11.0
		{"2.30.7/13.3", "sm_70", NoKernels},
		{"2.30.7/13.3", "sm_110", Native},
		{"2.27.3/12.4", "sm_100", ViaPTX}, // sm_90 PTX only
		{"2.18.1/11.0", "sm_90", ViaPTX},
		{"2.18.5/12.2", "sm_90", Native},
		{"2.18.5/11.0", "sm_90", ViaPTX},
		{"2.24.3/12.6", "sm_120", ViaPTX}, // no Blackwell SASS before the CUDA 12.8 list
		{"2.28.9/13", "sm_89", Native},
	} {
		g, ok := gen[tt.build]
		if !ok {
			t.Errorf("NCCL %s: no gencode", tt.build)
			continue
		}
		if got := KernelCoverage(tt.gpu, g.SASS, g.PTX); got != tt.want {
			t.Errorf("NCCL %s (%s) on %s: %v, want %v", tt.build, g, tt.gpu, got, tt.want)
		}
	}

	const head = "sources: [{id: ours, url: https://example.com/nccl}]\nnccl:\n"
	for _, tt := range []struct{ name, row, err string }{
		{"ok", `  - {version: "2.99.1", cuda: "12.9", gencode: [{cuda: "12.9", sass: [sm_90], ptx: [sm_90]}], source: ours}`, ""},
		{"cuda not listed", `  - {version: "2.99.1", cuda: "12.9", gencode: [{cuda: "12.4", sass: [sm_90]}], source: ours}`, "gencode for CUDA 12.4"},
		{"not an arch", `  - {version: "2.99.1", cuda: "12.9", gencode: [{cuda: "12.9", sass: [compute_90]}], source: ours}`, `"compute_90" must look like sm_90`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(p, []byte(head+tt.row+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("Load: %v, want error containing %q", err, tt.err)
			}
		})
	}
}

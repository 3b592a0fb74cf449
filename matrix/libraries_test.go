package matrix

import (
	"fmt"
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
	for _, v := range []string{"9.21.0", "9.21.1", "9.23.0", "9.24.0", "9.24.1", "9.28.0", "9.28.1"} {
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

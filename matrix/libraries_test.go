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

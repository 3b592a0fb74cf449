package validate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// deepLinkLayers is paths names of depth components each, under one
// chain of directories: a base layer lays a symlink to /etc at the
// bottom of the chain, and an upper layer writes half the names beside
// it (harmless) and half through it (each one named). Every name is
// resolved through the whole chain.
func deepLinkLayers(paths, depth int) (lists [][]rec, through int) {
	dir := strings.Repeat("d/", depth-1)
	base := []rec{{path: dir + "lnk", kind: recSymlink, link: "/etc"}}
	var upper []rec
	for i := range paths {
		p := fmt.Sprintf("%sf%d", dir, i)
		if i%2 == 1 {
			p = fmt.Sprintf("%slnk/x%d", dir, i)
			through++
		}
		upper = append(upper, rec{path: p, kind: recFile})
	}
	return [][]rec{base, upper}, through
}

// TestLinkEscapesIsLinear judges 15 names of 100,000 components each
// (issue 45: at 400,000, hashing every prefix cost 3 s a name) and, for
// a baseline, the same bytes as 15,000 names of 100 components. Linear
// resolution costs about the same for both (a deep chain misses the
// cache more, so the bound is 25x); hashing every prefix costs 1,000
// times more for the deep names. The best of a few runs of each is
// compared, so a loaded machine does not decide it
// (BenchmarkLinkEscapesDeep gives the figures).
func TestLinkEscapesIsLinear(t *testing.T) {
	const deep, shallow = 100_000, 100
	paths := 15
	timeIt := func(paths, depth int) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			lists, through := deepLinkLayers(paths, depth)
			start := time.Now()
			got := linkEscapes(lists)
			best = min(best, time.Since(start))
			if len(got) != through {
				t.Fatalf("%d names of depth %d: %d named, want %d", paths, depth, len(got), through)
			}
			for _, u := range got {
				if !strings.Contains(u.Reason, "passes through the symlink /d/d/") || len(u.Reason) > 400 {
					t.Fatalf("reason %.500q: want the symlink named, briefly", u.Reason)
				}
			}
		}
		return best
	}
	d := timeIt(paths, deep)
	s := timeIt(paths*deep/shallow, shallow)
	t.Logf("%d names of %d components: %s; %d of %d: %s (%.1fx)", paths, deep, d, paths*deep/shallow, shallow, s, float64(d)/float64(s))
	if d > 25*s {
		t.Errorf("deep names took %.1fx as long as the same bytes in shallow names (%s vs %s): link resolution is not linear in the names' bytes", float64(d)/float64(s), d, s)
	}
}

func BenchmarkLinkEscapesDeep(b *testing.B) {
	for _, depth := range []int{100, 400_000} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			lists, _ := deepLinkLayers(15*400_000/depth, depth)
			for b.Loop() {
				linkEscapes(lists)
			}
		})
	}
}

package validate

import (
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestResolveVisible pins the whiteout and opaque rules resolveVisible
// applies, newest layer first: a mark hides lower layers only, a
// whiteout or a non-directory hides the path and all below it, an
// opaque directory hides what lower layers hold below it (not itself).
func TestResolveVisible(t *testing.T) {
	f := func(p string) rec { return rec{path: p, kind: recFile} }
	d := func(p string) rec { return rec{path: p, kind: recDir} }
	wh := func(p string) rec { return rec{path: p, kind: recWhiteout} }
	opq := func(p string) rec { return rec{path: p, kind: recOpaque} }
	for _, tc := range []struct {
		name   string
		layers [][]rec
		want   map[string]int
	}{
		{"a whiteout hides the file below",
			[][]rec{{f("a"), f("b")}, {wh("a")}},
			map[string]int{"b": 0}},
		{"a whiteout hides a directory's subtree",
			[][]rec{{d("a"), f("a/b/c"), f("ab")}, {wh("a")}},
			map[string]int{"ab": 0}},
		{"a whiteout hides nothing in its own layer",
			[][]rec{{f("x")}, {f("a"), wh("a")}},
			map[string]int{"x": 0, "a": 1}},
		{"an opaque directory stays, its lower children go",
			[][]rec{{d("a"), f("a/b"), f("a/c/d")}, {opq("a"), d("a"), f("a/e")}},
			map[string]int{"a": 1, "a/e": 1}},
		{"an opaque root hides every lower entry",
			[][]rec{{f("a"), d("b")}, {opq(""), f("c")}},
			map[string]int{"c": 1}},
		{"a file replacing a directory hides its subtree",
			[][]rec{{d("a"), f("a/b")}, {f("a")}},
			map[string]int{"a": 1}},
		{"a directory over a directory merges",
			[][]rec{{d("a"), f("a/b")}, {d("a"), f("a/c")}},
			map[string]int{"a": 1, "a/b": 0, "a/c": 1}},
		{"a whiteout two layers up still counts",
			[][]rec{{f("a/b/c")}, {f("x")}, {wh("a/b")}},
			map[string]int{"x": 1}},
		{"a root whiteout hides nothing",
			[][]rec{{f("a")}, {wh("")}},
			map[string]int{"a": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &WalkResult{Layers: make([]LayerStats, len(tc.layers))}
			w.resolveVisible(tc.layers)
			if !maps.Equal(w.visible, tc.want) {
				t.Errorf("visible = %v, want %v", w.visible, tc.want)
			}
			if w.Files != len(tc.want) {
				t.Errorf("Files = %d, want %d", w.Files, len(tc.want))
			}
		})
	}
}

// deepLayers is a base layer of files under one directory depth levels
// deep, and an upper layer with whiteouts and opaque directories that
// hide none of them: each file's parents are all looked at.
func deepLayers(depth, files int) [][]rec {
	dir := strings.TrimSuffix(strings.Repeat("d/", depth), "/")
	base := make([]rec, 0, files)
	for i := range files {
		base = append(base, rec{path: fmt.Sprintf("%s/f%d", dir, i), kind: recFile})
	}
	// More than 8 marks each, so Go's maps hash every key looked up.
	var upper []rec
	for i := range 16 {
		upper = append(upper, rec{path: fmt.Sprintf("%s/gone%d", dir, i), kind: recWhiteout}, rec{path: fmt.Sprintf("%s/e%d", dir, i), kind: recOpaque})
	}
	return [][]rec{base, upper}
}

// TestResolveVisibleIsLinear resolves names 8 times as deep: the work
// should grow 8 times (linear in the names' bytes), not 64 (every parent
// hashed whole, as isHidden once did: 15 names of 400,000 directories
// took 3 s each). The best of five runs of each, each after a GC, is
// compared, and the bound sits halfway (in powers of two) between
// linear (8x) and quadratic (64x): at load 20 linear code measured 21x.
func TestResolveVisibleIsLinear(t *testing.T) {
	const files = 2000
	timeIt := func(depth int) time.Duration {
		best := time.Duration(1 << 62)
		for range 5 {
			lists := deepLayers(depth, files)
			w := &WalkResult{Layers: make([]LayerStats, len(lists))}
			runtime.GC()
			start := time.Now()
			w.resolveVisible(lists)
			best = min(best, time.Since(start))
			if w.Files != files {
				t.Fatalf("depth %d: %d files visible, want %d", depth, w.Files, files)
			}
		}
		return best
	}
	small, big := timeIt(256), timeIt(2048)
	t.Logf("depth 256: %s, depth 2048: %s (%.1fx)", small, big, float64(big)/float64(small))
	if big > 32*small {
		t.Errorf("names 8x as deep took %.1fx as long (%s vs %s): resolving visibility is not linear in the names' bytes", float64(big)/float64(small), big, small)
	}
}

func BenchmarkResolveVisibleDeep(b *testing.B) {
	for _, depth := range []int{256, 2048} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			lists := deepLayers(depth, 2000)
			for b.Loop() {
				w := &WalkResult{Layers: make([]LayerStats, len(lists))}
				w.resolveVisible(lists)
			}
		})
	}
}

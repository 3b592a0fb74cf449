package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// withinTime fails when f runs longer than a budget linear in n.
func withinTime(t *testing.T, n int, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took, limit := time.Since(start), 2*time.Second+time.Duration(n)*20*time.Microsecond; took > limit {
		t.Fatalf("%d bytes of input took %v (limit %v)", n, took, limit)
	}
}

// FuzzParseRequireCUDA: NVIDIA_REQUIRE_CUDA values, as images carry them.
// What parses is the last cuda>= term, and gpuimg's own value for it reads
// back the same.
func FuzzParseRequireCUDA(f *testing.F) {
	for _, s := range []string{
		"cuda>=12.2 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471",
		"cuda>=11.8", "cuda>=12.4 brand=tesla,driver>=535,driver<536", "cuda>=", "cuda>=x cuda>=12", "brand=tesla", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v Version
		var ok bool
		withinTime(t, len(s), func() { v, ok = ParseRequireCUDA(s) })
		if !ok {
			return
		}
		if !strings.Contains(s, "cuda>=") {
			t.Fatalf("%q has no cuda>= term but parsed as %s", s, v)
		}
		back, ok := ParseRequireCUDA(RequireCUDA(v))
		if !ok || back.Compare(v) != 0 {
			t.Fatalf("%q: RequireCUDA(%s) = %q reads back as %s %v", s, v, RequireCUDA(v), back, ok)
		}
	})
}

// FuzzParseFile: --matrix-file YAML, decoded strictly. Seeds are the
// built-in data files, the test world and the example internal matrix.
func FuzzParseFile(f *testing.F) {
	seeds, _ := filepath.Glob("data/*.yaml")
	seeds = append(seeds, "testdata/world.yaml", "../examples/matrix-internal.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("cuda: [{version: 12.2.2, min_driver: 535.104.05}]\nunknown: 1\n"))
	f.Add([]byte("a: &a [*a, *a, *a]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		withinTime(t, len(b), func() {
			file, err := ParseFile("fuzz.yaml", b)
			if err == nil && file == nil {
				t.Fatal("no file and no error")
			}
			if err != nil && !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	})
}

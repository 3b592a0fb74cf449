package publish

import (
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzParseFile: publish.yaml is decoded strictly; whatever the bytes,
// ParseFile returns a file or an error naming it, in time linear in the
// input.
func FuzzParseFile(f *testing.F) {
	if b, err := os.ReadFile("../../examples/publish.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("registry: ghcr.io/acme\nvariants: [{cuda: \"12.2\", torch: \"2.3\"}]\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		start := time.Now()
		file, err := ParseFile("publish.yaml", b)
		if took, limit := time.Since(start), 2*time.Second+time.Duration(len(b))*20*time.Microsecond; took > limit {
			t.Fatalf("%d bytes took %v", len(b), took)
		}
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), "publish.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
		case file == nil:
			t.Fatal("no file and no error")
		}
	})
}

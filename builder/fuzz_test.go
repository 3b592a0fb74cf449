package builder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzLoadConfig: gpuimg.yaml is decoded strictly; whatever the bytes,
// LoadConfig returns a valid config or an error naming the file, in time
// linear in the input.
func FuzzLoadConfig(f *testing.F) {
	if b, err := os.ReadFile("../examples/gpuimg.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("cuda: \"12.2\"\ntorch: \"2.3\"\npython: \"3.11\"\nextras:\n  pip: [numpy==1.26.4]\n  copy: [\"src:/app\"]\n"))
	f.Add([]byte("extras:\n  copy: [\"../x:/app\"]\n"))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "gpuimg.yaml")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		c, err := LoadConfig(p)
		if took, limit := time.Since(start), 2*time.Second+time.Duration(len(b))*20*time.Microsecond; took > limit {
			t.Fatalf("%d bytes took %v", len(b), took)
		}
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), p) && !strings.Contains(err.Error(), "read config") {
				t.Fatalf("error does not name the file: %v", err)
			}
		case c == nil:
			t.Fatal("no config and no error")
		default:
			if err := c.Validate(); err != nil {
				t.Fatalf("loaded a config that does not validate: %v", err)
			}
		}
	})
}

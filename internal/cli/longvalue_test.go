package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// TestLongValuesEchoShort feeds a 1 MiB value through a stack file, flags
// and a matrix file (each an error that names the bad value) and checks
// that the error is printed short, and soon: under 4 KiB in text and
// under -o json (errors.go's own cut, 4 KiB a line, is not reached), the
// value quoted only as a prefix (bound.Quote, bound.Cut, bound.Short).
func TestLongValuesEchoShort(t *testing.T) {
	long := strings.Repeat("9", 1<<20)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	stack := write("stack.json", `{"cuda": "`+long+`", "driver_min": "535.104.05"}`)
	rows := write("rows.yaml", "cuda:\n  - version: \""+long+"\"\n    min_driver: 535.104.05\n    source: x\n")
	badKey := write("badkey.yaml", long+": 1\n")
	for _, args := range [][]string{
		{"matrix", "check", "--stack", stack, "--driver", "535.104.05"},
		{"matrix", "resolve", "--cuda", long},
		{"matrix", "resolve", "--torch", "x" + long},
		{"matrix", "check", "--cuda", "12.2", "--driver", long},
		{"matrix", "check", "--cuda", "12.2", "--gpu", long},
		{"matrix", "resolve", "--cuda", "12.2", "--matrix-file", rows},
		{"matrix", "resolve", "--cuda", "12.2", "--matrix-file", badKey},
		{"images", "ls", "example.com/" + long},
		{"validate", "oci:" + long},
		{"build", "--cuda", "12.2", "--registry-mirror", "docker.io=" + long},
	} {
		name := bound.Quote(strings.Join(args, " "))[:60]
		for _, format := range []string{"text", "json"} {
			if format == "json" {
				args = append(slices.Clip(args), "-o", "json")
			}
			start := time.Now()
			out, errOut, code := run(t, args...)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s -o %s: took %s", name, format, d) // an unknown GPU's suggestions once took 19 s
			}
			if code == ExitOK {
				t.Errorf("%s -o %s: exit 0, want an error", name, format)
			}
			if n := len(out) + len(errOut); n > 4<<10 {
				t.Errorf("%s -o %s: %d bytes printed, want under 4 KiB:\n%.300s", name, format, n, errOut+out)
			}
		}
	}
}

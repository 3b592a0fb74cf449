package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileUserFiles runs commands on files a user (or an attacker who
// wrote their publish file) names: devices, FIFOs, files over the size
// bound, values of megabytes. Each must end at once with exit 2, an error
// naming the bound, and a short stderr.
// hangAfter is how long a hostile case may run before the test calls it a
// hang. It detects hangs, not slowness: the race detector on a loaded
// two-core CI machine makes an honest refusal take over 10 s.
const hangAfter = time.Minute

func TestHostileUserFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	big := filepath.Join(dir, "big.yaml")
	must(t, os.WriteFile(big, nil, 0o644))
	must(t, os.Truncate(big, 5<<20)) // sparse
	longValue := filepath.Join(dir, "long.json")
	must(t, os.WriteFile(longValue, []byte(`{"cuda": "`+strings.Repeat("9", 3<<20)+`"}`), 0o644))
	longYAML := filepath.Join(dir, "long.yaml")
	must(t, os.WriteFile(longYAML, []byte("repository: r.example.com/t\ntag: \""+strings.Repeat("x", 3<<20)+"\"\nmatrix:\n  torch: [\"2.7\"]\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--stack /dev/zero", []string{"matrix", "check", "--stack", "/dev/zero", "--gpu", "h100"}, "not a regular file (a character device)"},
		{"--stack FIFO", []string{"matrix", "check", "--stack", fifo, "--gpu", "h100"}, "not a regular file (a FIFO)"},
		{"--stack 5 MiB", []string{"matrix", "check", "--stack", big, "--gpu", "h100"}, "over the limit of 4 MiB"},
		{"--stack with a 3 MiB value", []string{"matrix", "check", "--stack", longValue, "--gpu", "h100"}, "gpuimg: "},
		{"--matrix-file /dev/zero", []string{"matrix", "resolve", "--matrix-file", "/dev/zero", "--torch", "2.7"}, "not a regular file (a character device)"},
		{"--matrix-file FIFO", []string{"matrix", "resolve", "--matrix-file", fifo, "--torch", "2.7"}, "not a regular file (a FIFO)"},
		{"--matrix-file 5 MiB", []string{"matrix", "resolve", "--matrix-file", big, "--torch", "2.7"}, "over the limit of 4 MiB"},
		{"publish -f /dev/zero", []string{"publish", "-f", "/dev/zero", "--dry-run"}, "not a regular file (a character device)"},
		{"publish -f FIFO", []string{"publish", "-f", fifo, "--dry-run"}, "not a regular file (a FIFO)"},
		{"publish -f 5 MiB", []string{"publish", "-f", big, "--dry-run"}, "over the limit of 4 MiB"},
		{"publish -f with a 3 MiB tag", []string{"publish", "-f", longYAML, "--dry-run"}, "gpuimg: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				errOut string
				code   int
			}
			done := make(chan result, 1)
			go func() {
				_, errOut, code := run(t, tc.args...)
				done <- result{errOut, code}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(hangAfter):
				t.Fatalf("still running after %s", hangAfter)
			}
			if r.code != ExitInvalid || !strings.Contains(r.errOut, tc.want) {
				t.Errorf("exit %d, stderr %.300q; want exit 2 and %q", r.code, r.errOut, tc.want)
			}
			if len(r.errOut) > 4096 {
				t.Errorf("stderr of %d bytes echoes the input: %.300q", len(r.errOut), r.errOut)
			}
		})
	}
}

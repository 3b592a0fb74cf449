package cli

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTablesFitTheTerminal runs the tables issue 46 measured (targets 234
// columns wide, gpus 261, sources 913) at 80 and 120 columns: every line
// fits and keeps the row's name whole, and piped output (no COLUMNS, no
// terminal) is the --wide and -o wide output, byte for byte.
func TestTablesFitTheTerminal(t *testing.T) {
	tests := []struct {
		args []string
		name string // a row's name that stays whole
	}{
		{[]string{"matrix", "list", "targets"}, "eks/al2023"},
		{[]string{"matrix", "list", "gpus"}, "RTX-PRO-6000-Workstation"},
		{[]string{"matrix", "list", "sources"}, "adv-ghsa-torch-24747"},
		{[]string{"matrix", "resolve", "--cuda", "12.2", "--torch", "2.3"}, "NVIDIA_REQUIRE_CUDA"},
		{[]string{"matrix", "check", "--cuda", "12.2", "--torch", "2.3", "--driver", "535.104.05", "--gpu", "h100"}, "require_cuda"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("COLUMNS", "")
			piped, _, code := run(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			for _, wide := range [][]string{{"--wide"}, {"-o", "wide"}} {
				if got, _, _ := run(t, append(tt.args, wide...)...); got != piped {
					t.Errorf("piped output differs from %s", strings.Join(wide, " "))
				}
			}
			for _, width := range []int{80, 120} {
				t.Setenv("COLUMNS", strconv.Itoa(width))
				got, _, code := run(t, tt.args...)
				if code != 0 {
					t.Fatalf("COLUMNS=%d: exit %d", width, code)
				}
				for line := range strings.SplitSeq(got, "\n") {
					if n := utf8.RuneCountInString(strings.TrimRight(line, " ")); n > width {
						t.Errorf("COLUMNS=%d: a line of %d runes: %q", width, n, line)
					}
				}
				if !strings.Contains(got, tt.name+" ") {
					t.Errorf("COLUMNS=%d: %q was cut:\n%s", width, tt.name, got)
				}
			}
		})
	}
}

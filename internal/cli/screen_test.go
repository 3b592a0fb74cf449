package cli

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/gpuimg/gpuimg/internal/redact"
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

// TestTablesFitAPseudoTerminal runs Main with a real pseudo-terminal of 80
// columns as stdout and no COLUMNS: the width comes from the terminal,
// through the writers Main wraps stdout in (the error object's counter,
// the password mask). A merge once hid the terminal behind them, and
// every table printed at full width on a screen.
func TestTablesFitAPseudoTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COLUMNS", "")
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx)
		read <- string(b)
	}()
	for _, args := range [][]string{
		{"matrix", "list", "targets"},
		{"matrix", "list", "gpus"},
	} {
		if code := Main(t.Context(), args, tty, io.Discard); code != 0 {
			t.Fatalf("%q: exit %d", args, code)
		}
	}
	if _, ok := isTerminal(redact.NewWriter(tty, []string{"pw"})); !ok {
		t.Error("the password mask hides the terminal")
	}
	_ = tty.Close()
	got := <-read
	for l := range strings.SplitSeq(strings.ReplaceAll(got, "\r", ""), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d runes on an 80-column terminal: %q", n, l)
		}
	}
}

// unwrapReader is a reader that wraps another, as a prompt's input may.
type unwrapReader struct{ r io.Reader }

func (u unwrapReader) Read(p []byte) (int, error) { return u.r.Read(p) }
func (u unwrapReader) Unwrap() io.Reader          { return u.r }

// TestIsTerminal: the one terminal test of the CLI (tables, progress and
// the password prompts of login and keygen) finds a pseudo-terminal
// given as a writer or a reader, bare or wrapped, and nothing else.
func TestIsTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	pr, pw, err := os.Pipe()
	must(t, err)
	defer pr.Close()
	defer pw.Close()
	for _, tt := range []struct {
		name string
		v    any
		want bool
	}{
		{"the terminal", tty, true},
		{"the terminal behind the password mask", redact.NewWriter(tty, []string{"pw"}), true},
		{"the terminal behind a reader", unwrapReader{tty}, true},
		{"a pipe's reading end", pr, false},
		{"a pipe's writing end", pw, false},
		{"a pipe behind a reader", unwrapReader{pr}, false},
		{"a buffer", &strings.Builder{}, false},
		{"a reader that wraps nothing", strings.NewReader(""), false},
	} {
		if _, got := isTerminal(tt.v); got != tt.want {
			t.Errorf("%s: isTerminal %v, want %v", tt.name, got, tt.want)
		}
	}
}

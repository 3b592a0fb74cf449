package cli

import (
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// The terminal: tables on stdout fit its width, progress on stderr is
// redrawn in place on it. Piped output is never fitted, so scripts read
// the same bytes whatever terminal they were started from.

// addScreenFlags binds the global --wide and --quiet flags to root.
func addScreenFlags(fs *pflag.FlagSet) {
	fs.Bool("wide", false, "tables show every cell whole, however wide the terminal (as -o wide)")
	fs.BoolP("quiet", "q", false, "no progress and no chatter on stderr; results and errors still print")
}

// quiet reports whether the global --quiet is set on cmd.
func quiet(cmd *cobra.Command) bool {
	q, _ := cmd.Flags().GetBool("quiet")
	return q
}

// chatter is where cmd writes what is neither its result nor an error
// nor progress (internal/progress and BuildKit's display are quieted on
// their own): notes such as "reading ./gpuimg.yaml", what was written or
// attached, a probe's own stderr. It is stderr, and nothing under the
// global --quiet. Every such line of the CLI goes through it;
// TestQuietStderr runs the commands with -q and finds stderr empty.
func chatter(cmd *cobra.Command) io.Writer {
	if quiet(cmd) {
		return io.Discard
	}
	return cmd.ErrOrStderr()
}

// screenWidth is the width cmd's tables fit, 0 for unlimited: unlimited
// under --wide or -o wide, else $COLUMNS when it is a number, else the
// width of the terminal stdout is, else (piped) unlimited.
func screenWidth(cmd *cobra.Command) int {
	if wide, _ := cmd.Flags().GetBool("wide"); wide {
		return 0
	}
	if f := cmd.Flags().Lookup("output"); f != nil && f.Value.String() == "wide" {
		return 0
	}
	return termWidth(cmd.OutOrStdout(), os.Getenv("COLUMNS"))
}

// termWidth is columns when it is a positive number, else the width of
// the terminal w is, else 0.
func termWidth(w io.Writer, columns string) int {
	if n, err := strconv.Atoi(columns); err == nil && n > 0 {
		return n
	}
	if fd, ok := isTerminal(w); ok {
		if n, _, err := term.GetSize(fd); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// isTerminal returns the file descriptor of v, a writer or a reader,
// when it is a terminal, looking through writers and readers that wrap
// another (Unwrap), as Main's stdout does. It is the one test of "is
// this a terminal" in the CLI: tables and progress ask it of stdout and
// stderr, the password prompts of stdin.
func isTerminal(v any) (int, bool) {
	for {
		switch f := v.(type) {
		case *os.File:
			fd := int(f.Fd()) //nolint:gosec // a descriptor fits an int
			return fd, term.IsTerminal(fd)
		case interface{ Unwrap() io.Writer }:
			v = f.Unwrap()
		case interface{ Unwrap() io.Reader }:
			v = f.Unwrap()
		default:
			return 0, false
		}
	}
}

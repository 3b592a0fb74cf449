package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpuimg/gpuimg/matrix"
)

// Exit codes shared by every command.
const (
	ExitOK      = 0 // success
	ExitFailed  = 1 // the command ran and the answer is "no" (conflict, failed checks)
	ExitInvalid = 2 // the command could not run (bad input, unreachable daemon)
	// ExitUnknown: matrix check and validate ran, nothing failed, but a
	// fact the matrix lacks left a check unknown (verdict unknown). It is
	// not a pass; under --strict the same run exits ExitFailed.
	ExitUnknown = 4
)

// verdictError is the error for a check or validate verdict: nil on pass,
// ExitFailed on fail (failed says what), ExitUnknown on unknown.
func verdictError(v matrix.Status, failed string) error {
	switch v {
	case matrix.Fail:
		return &Error{Err: errors.New(failed), Code: ExitFailed}
	case matrix.UnknownFact:
		return &Error{Err: errors.New("nothing failed, but the matrix lacks a fact a check needs (see the unknown checks)"),
			Hint: "supply it as each check says, or run with --strict to treat unknown as a failure", Code: ExitUnknown}
	}
	return nil
}

// Error is a user-facing error: what went wrong, and how to fix it.
type Error struct {
	Err  error
	Hint string
	Code int
	// File or Flag names the file or the flag at fault, for the error
	// object of -o json (errjson.go); when neither is set it is read
	// from the error.
	File, Flag string
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "; " + e.Hint
}

func (e *Error) Unwrap() error { return e.Err }

// invalid marks err as bad input (exit 2) with a hint.
func invalid(err error, hint string) error { return &Error{Err: err, Hint: hint, Code: ExitInvalid} }

// exitCode picks the process exit code for err.
func exitCode(err error) int {
	var e *Error
	if errors.As(err, &e) && e.Code != 0 {
		return e.Code
	}
	if errors.Is(err, matrix.ErrNoStack) {
		return ExitFailed
	}
	return ExitInvalid
}

// printError prints err once, as "gpuimg: message", folding multi-line
// errors (matrix file problems) under the first line.
func printError(w io.Writer, err error) {
	msg := strings.TrimSpace(err.Error())
	lines := strings.Split(msg, "\n")
	if len(lines) > maxErrorLines {
		lines = append(lines[:maxErrorLines], fmt.Sprintf("… (%d more lines)", len(lines)-maxErrorLines))
	}
	fmt.Fprintf(w, "gpuimg: %s\n", cutLine(lines[0]))
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "  %s\n", cutLine(l))
	}
}

// Bounds on a printed error, whatever a value in it held: the messages
// quote values short (bound.Quote), and these catch any that do not.
const (
	maxErrorLine  = 4096
	maxErrorLines = 200
)

// cutLine cuts a line over maxErrorLine bytes at a rune boundary.
func cutLine(l string) string {
	if len(l) <= maxErrorLine {
		return l
	}
	cut := maxErrorLine
	for cut > 0 && !utf8.RuneStart(l[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", l[:cut], len(l)-cut)
}

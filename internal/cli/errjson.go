package cli

import (
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A command asked for -o json, or for another machine format it offers
// (yaml, github, bake, spdx-json, cyclonedx-json), that ends in an error
// with nothing on stdout prints one error object there, besides the plain line on
// stderr, so that a program reading stdout always gets one JSON
// document (docs/output.md, "## JSON"):
//
//	{"error": {"message": "…", "hint": "…", "code": 2, "flag": "--cuda"}}

// ErrorObject is the object printed on stdout for a failed command that
// asked for a machine format.
type ErrorObject struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is what went wrong, how to fix it, the exit code, and the
// file or the flag at fault when one is (never both).
type ErrorDetail struct {
	// Message is what went wrong (the stderr line without "gpuimg: " and
	// the hint).
	Message string `json:"message"`
	// Hint is how to fix it; empty when the message says it.
	Hint string `json:"hint"`
	// Code is the process exit code: 2 could not run, 1 the answer is
	// no, 4 unknown, 130/143 interrupted.
	Code int `json:"code"`
	// File is the file at fault (a publish, matrix or stack file).
	File string `json:"file,omitempty"`
	// Flag is the flag at fault by its long name ("--file" for -f), an
	// unknown one as typed ("-x").
	Flag string `json:"flag,omitempty"`
}

// machineFormats are the -o formats a program reads; JSON is also YAML.
// junit (XML) is not among them: a JUnit reader fails on an empty file
// as on JSON.
var machineFormats = []string{"json", "yaml", "github", "bake", "spdx-json", "cyclonedx-json"}

// countingWriter records whether anything was written through it.
type countingWriter struct {
	io.Writer
	n int64
}

// Unwrap is the writer underneath (terminal looks through it).
func (w *countingWriter) Unwrap() io.Writer { return w.Writer }

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.Writer.Write(p)
	w.n += int64(n)
	return n, err
}

// writeErrorObject prints err's object on stdout when cmd (the command
// that ran, or the deepest one found) was asked for a machine format in
// args and the command wrote nothing there.
func writeErrorObject(stdout *countingWriter, cmd *cobra.Command, args []string, err error, code int) {
	if stdout.n > 0 || !wantsErrorObject(cmd, requestedFormat(cmd, args)) {
		return
	}
	obj := ErrorObject{Error: errorDetail(cmd, args, err, code)}
	if requestedFormat(cmd, args) == "github" {
		_ = writeCompactJSON(stdout, obj) // one line, as -o github's result
		return
	}
	_ = writeJSON(stdout, obj) // stderr has the error already
}

// wantsErrorObject says whether format asks for the error object: json
// always (the format every program reads), another machine format when
// cmd offers it (-o yaml where the command has no yaml is refused in
// words only).
func wantsErrorObject(cmd *cobra.Command, format string) bool {
	if format == "json" {
		return true
	}
	if !slices.Contains(machineFormats, format) || cmd == nil {
		return false
	}
	var offered bool
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		offered = offered || slices.Contains(f.Annotations[formatsAnnotation], format)
	})
	return offered
}

// errorDetail fills the object from err: an *Error's message and hint
// apart, the culprit from the error itself, else from the message.
func errorDetail(cmd *cobra.Command, args []string, err error, code int) ErrorDetail {
	d := ErrorDetail{Message: err.Error(), Code: code}
	if e, ok := errors.AsType[*Error](err); ok && e.Err != nil && strings.HasSuffix(err.Error(), e.Error()) {
		d.Message, d.Hint = strings.TrimSuffix(err.Error(), e.Error())+e.Err.Error(), e.Hint
		d.File, d.Flag = e.File, e.Flag
	}
	d.Message = boundMessage(d.Message)
	if d.File == "" && d.Flag == "" {
		d.File, d.Flag = culprit(cmd, args, err, d.Message)
	}
	return d
}

// boundMessage bounds a message as printError bounds the printed one.
func boundMessage(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	if len(lines) > maxErrorLines {
		lines = lines[:maxErrorLines]
	}
	for i, l := range lines {
		lines[i] = cutLine(l)
	}
	return strings.Join(lines, "\n")
}

// culprit names the file or the flag an error is about: a flag pflag
// refused; a file of the command line the message starts with or quotes
// as "FILE:"; a flag of cmd the message starts with ("--target: …",
// "--to is required"); a set flag whose value the message quotes or
// names.
func culprit(cmd *cobra.Command, args []string, err error, msg string) (file, flag string) {
	if f := pflagCulprit(err); f != "" {
		return "", f
	}
	if cmd == nil {
		return "", ""
	}
	for _, c := range fileCandidates(cmd, args) {
		if strings.HasPrefix(msg, c+":") || strings.Contains(msg, " "+c+":") {
			return c, ""
		}
	}
	if name, ok := strings.CutPrefix(msg, "--"); ok {
		if i := strings.IndexAny(name, " :=,"); i >= 0 {
			name = name[:i]
		}
		if cmd.Flags().Lookup(name) != nil {
			return "", "--" + name
		}
	}
	return "", quotedFlag(cmd, msg)
}

// quotedFlag is the set flag whose value the message quotes (unknown
// target "nope", copy "app": …) or names as "VALUE:" (a file that is not
// there), the output flag aside.
func quotedFlag(cmd *cobra.Command, msg string) string {
	var flag string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if flag != "" || len(f.Annotations[formatsAnnotation]) > 0 {
			return
		}
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if v != "" && (strings.Contains(msg, strconv.Quote(v)) || strings.Contains(msg, " "+v+":")) {
				flag = "--" + f.Name
				return
			}
		}
	})
	return flag
}

// pflagCulprit is the flag of pflag's own errors, as typed.
func pflagCulprit(err error) string {
	if e, ok := errors.AsType[*pflag.NotExistError](err); ok {
		if e.GetSpecifiedShortnames() != "" {
			return "-" + e.GetSpecifiedName()
		}
		return "--" + e.GetSpecifiedName()
	}
	if e, ok := errors.AsType[*pflag.ValueRequiredError](err); ok {
		if e.GetSpecifiedShortnames() != "" {
			return "-" + e.GetSpecifiedName()
		}
		return "--" + e.GetSpecifiedName()
	}
	if e, ok := errors.AsType[*pflag.InvalidValueError](err); ok {
		return "--" + e.GetFlag().Name
	}
	if e, ok := errors.AsType[*pflag.InvalidSyntaxError](err); ok {
		return e.GetSpecifiedFlag()
	}
	return ""
}

// fileCandidates are the values of cmd's set flags and its arguments
// that name regular files, longest first (a path before its prefix).
func fileCandidates(cmd *cobra.Command, args []string) []string {
	var out []string
	add := func(v string) {
		if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				add(v)
			}
			return
		}
		add(f.Value.String())
	})
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			add(a)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// requestedFormat is the format cmd's output flag (outputFlag) was given,
// read from args when the flags were not parsed (a bad flag before it),
// or from -o/--output when cmd has no output flag (a group refusing an
// unknown command, a command without -o); "" when none was.
func requestedFormat(cmd *cobra.Command, args []string) string {
	name := "output"
	if cmd != nil {
		var found *pflag.Flag
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if len(f.Annotations[formatsAnnotation]) > 0 {
				found = f
			}
		})
		if found != nil && found.Changed {
			return canonicalFormat(found.Value.String())
		}
		if found != nil {
			name = found.Name
		}
	}
	return canonicalFormat(scanFlag(args, name, "o"))
}

// scanFlag is the last value args give --name or -short, in pflag's
// spellings (--name V, --name=V, -s V, -s=V, -sV); it stops at "--".
func scanFlag(args []string, name, short string) string {
	var v string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		switch {
		case a == "--"+name || a == "-"+short:
			if i+1 < len(args) {
				v = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--"+name+"="):
			v = strings.TrimPrefix(a, "--"+name+"=")
		case strings.HasPrefix(a, "-"+short) && !strings.HasPrefix(a, "--"):
			v = strings.TrimPrefix(strings.TrimPrefix(a, "-"+short), "=")
		}
	}
	return v
}

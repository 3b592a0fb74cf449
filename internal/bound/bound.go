// Package bound holds the bounds every package applies to what it reads
// from a user or an image: files read whole (ReadFile: regular files only,
// capped; ReadAll and ReadAllContext for streams) and values echoed in
// errors (Quote: a short prefix).
// docs/faults.md lists each bound, its default and its flag.
package bound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"unicode/utf8"
)

// ErrBound is wrapped by every error of an input over a bound: the input
// is refused, not read further.
var ErrBound = errors.New("over a bound of gpuimg")

// ErrNotRegular is wrapped by the errors of files that are not regular
// files (a FIFO, a device such as /dev/zero, a socket, a directory),
// which ReadFile refuses to read.
var ErrNotRegular = errors.New("not a regular file")

// Sizes of files read whole.
const (
	// MaxManifest caps manifests, indexes, index.json and configs, as
	// skopeo does: containers/image's internal/iolimits/iolimits.go sets
	// MaxManifestBodySize (after distribution's own manifest limit) and
	// MaxConfigBodySize to 4 MiB.
	MaxManifest = 4 << 20
	// MaxUserFile caps files a user names (-f, --matrix-file, --stack,
	// publish files, gpuimg.yaml).
	MaxUserFile = 4 << 20
	// MaxReport caps a publish report.json read back (--since).
	MaxReport = 64 << 20
)

// The decompression-bomb bound of validate's walk and images convert: a
// layer may expand MaxRatio times its compressed bytes once past
// MinBombBytes uncompressed.
const (
	MaxRatio     = 200
	MinBombBytes = 256 << 20
)

// maxQuote is how many bytes of a value Quote keeps: a whole image tag
// (128) or version, a prefix of anything longer.
const maxQuote = 200

// Quote quotes s as %q does, cut to its first 200 bytes (at a rune
// boundary) with the length of the whole, so that an error about a 50 MiB
// value is a line, not 150 MiB.
func Quote(s string) string {
	if len(s) <= maxQuote {
		return strconv.Quote(s)
	}
	cut := maxQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// Cut is s as it is when at most 200 bytes long, else its first 200 bytes
// (at a rune boundary) and the length of the whole: Quote without the
// quotes, for messages that print a value bare (a path, a reference).
func Cut(s string) string {
	if len(s) <= maxQuote {
		return s
	}
	cut := maxQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// maxErrText is how much of a wrapped error's text Short keeps.
const maxErrText = 1024

// Short wraps err so that its text is at most about 1 KiB: for the error
// of a library that echoes the whole value it was given (a reference
// parser, a YAML decoder). errors.Is and errors.As still see err.
func Short(err error) error {
	if err == nil || len(err.Error()) <= maxErrText {
		return err
	}
	return shortError{err}
}

type shortError struct{ err error }

func (e shortError) Error() string {
	s := e.err.Error()
	cut := maxErrText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}

func (e shortError) Unwrap() error { return e.err }

// ReadFile reads a regular file of at most max bytes: what, if not "",
// names the file in errors before its path ("index.json of oci:DIR,"). A FIFO, device or
// other non-regular file (also through a symbolic link) is refused
// without blocking; a larger file is refused without reading it, and one
// that grows while read is cut at max+1 bytes and refused.
func ReadFile(path, what string, max int64) ([]byte, error) {
	f, err := Open(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, prefix(what, err)
	}
	if fi.Size() > max {
		return nil, TooBig(name(what, path), fi.Size(), max)
	}
	b, err := ReadAll(f, name(what, path), max)
	if err != nil && !errors.Is(err, ErrBound) {
		return nil, prefix(what, err)
	}
	return b, err
}

// ReadAll reads r to its end when that is at most max bytes. A longer
// stream is read to max+1 bytes, no further, and refused with TooBig's
// error for what (wrapping ErrBound); a read error is returned as it is.
func ReadAll(r io.Reader, what string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, TooBig(what, int64(len(b)), max)
	}
	return b, nil
}

// ReadAllContext is ReadAll of a stream that may block without end (stdin
// left open, a pipe nobody writes): the read runs aside, and the end of
// ctx (SIGINT, SIGTERM) returns at once with ctx's cause. The aside read
// keeps r until it returns, which for a stalled stdin is when the
// process exits.
func ReadAllContext(ctx context.Context, r io.Reader, what string, max int64) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := ReadAll(r, what, max)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		return res.b, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("read %s: %w", what, context.Cause(ctx))
	}
}

// Open opens a regular file for reading (what as in ReadFile); anything
// else is refused without blocking (a FIFO is opened non-blocking, then refused).
func Open(path, what string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, prefix(what, err)
	}
	if err := regular(fi, path, what); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a file swapped for a FIFO between Stat and Open must not
	// block the open; regular files ignore the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, prefix(what, err)
	}
	if fi, err = f.Stat(); err == nil {
		err = regular(fi, path, what)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func regular(fi fs.FileInfo, path, what string) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s: %w (%s); give a regular file", name(what, path), ErrNotRegular, kind(fi.Mode()))
}

// name is what and path, for errors.
func name(what, path string) string {
	if what == "" {
		return path
	}
	return what + " " + path
}

// prefix puts what before err (which names the path already).
func prefix(what string, err error) error {
	if what == "" {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// TooBig is the error of an input of size bytes (or more) over max.
func TooBig(what string, size, max int64) error {
	return fmt.Errorf("%s: %w: %d bytes or more, over the limit of %s", what, ErrBound, size, human(max))
}

func human(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

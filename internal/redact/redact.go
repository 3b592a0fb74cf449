// Package redact keeps credentials written into URLs out of what gpuimg
// prints: the password of scheme://user:password@host, in any flag, any
// message.
package redact

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask is what a password is shown as, as net/url's URL.Redacted does.
const Mask = "xxxxx"

// minSecret is the shortest password masked outside its URL.
const minSecret = 4

// reUserinfo finds scheme://user:password@ anywhere in a string; group 2
// is the password. The user and host are kept: they name the account and
// the server, which the user needs to see.
var reUserinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*):([^/\s@]*)@`)

// URLs returns s with the password of every URL in it masked.
func URLs(s string) string {
	return reUserinfo.ReplaceAllString(s, "${1}:"+Mask+"@")
}

// HasPassword says whether s holds a URL with a password.
func HasPassword(s string) bool {
	for _, m := range reUserinfo.FindAllStringSubmatch(s, -1) {
		if m[2] != "" {
			return true
		}
	}
	return false
}

// Passwords are the passwords of the URLs in args (a command line) of at
// least minSecret bytes, longest first, so a Writer masks a password
// wherever it is printed: in its URL, or in a message that took the URL
// apart. A shorter one is masked only inside a URL (masking every "ab"
// would garble the output, and hides little).
func Passwords(args []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range args {
		for _, m := range reUserinfo.FindAllStringSubmatch(a, -1) {
			if p := m[2]; len(p) >= minSecret && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	// Longest first: a password that holds another is masked whole.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Writer masks the given passwords in what is written through it. It
// holds back a line until its end ('\n' or '\r'), so a password split
// over two writes is masked too; Flush writes what is held.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	secrets []string
	pending []byte
}

// NewWriter masks secrets in what is written to w.
func NewWriter(w io.Writer, secrets []string) *Writer {
	return &Writer{w: w, secrets: secrets}
}

func (r *Writer) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, p...)
	i := bytes.LastIndexAny(r.pending, "\r\n")
	if i < 0 {
		return len(p), nil
	}
	out := r.mask(r.pending[:i+1])
	r.pending = append(r.pending[:0], r.pending[i+1:]...)
	if _, err := io.WriteString(r.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back.
func (r *Writer) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	out := r.mask(r.pending)
	r.pending = r.pending[:0]
	_, err := io.WriteString(r.w, out)
	return err
}

func (r *Writer) mask(b []byte) string {
	s := URLs(string(b))
	for _, p := range r.secrets {
		s = strings.ReplaceAll(s, p, Mask)
	}
	return s
}

// Unwrap is the writer underneath, for callers that ask whether output
// goes to a terminal.
func (w *Writer) Unwrap() io.Writer { return w.w }

package publish

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Progress writes a publish run's progress as plain lines, one per variant
// event, for logs and other non-terminals:
//
//	      torch 2.7.1 cu128 py3.12: building on tcp://buildkit-0:1234
//	[1/8] torch 2.6.0 cu124 py3.11: unchanged, not rebuilt (sha256:0123456789ab)
//	[2/8] torch 2.7.1 cu128 py3.12: built in 41s, 12/15 steps cached, published sha256:89abcdef0123
//	[3/8] torch 2.7.1 cu126 py3.11: failed: build: pip install nosuchpkg==1.0: no matching distribution
//
// A numbered line says a variant is done ([done/total]); an indented one is
// an event on the way (Event). It is safe for concurrent use: variants
// finish on many builders at once. It writes only to the writer it is
// given.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	done  int
	err   error
}

// NewProgress returns a Progress for total variants writing to w.
func NewProgress(w io.Writer, total int) *Progress {
	return &Progress{w: w, total: total}
}

// Event writes an event on the way for variant v ("building on
// tcp://b1:1234", "builder tcp://b1:1234 unreachable, retrying on
// tcp://b2:1234").
func (p *Progress) Event(v Variant, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(strings.Repeat(" ", len(p.counter())), v, msg)
}

// Done writes the line that says how a variant ended and counts it: what
// it did, its build time and cache reuse, or its error.
func (p *Progress) Done(r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.line(p.counter(), r.Variant, doneText(r))
}

// Finish writes the run's closing line, the report's counts.
func (p *Progress) Finish(r *Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write(r.Counts().Summary() + "\n")
}

// Err is the first error writing to the writer, if any.
func (p *Progress) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *Progress) counter() string {
	t := strconv.Itoa(p.total)
	return fmt.Sprintf("[%*d/%s]", len(t), p.done, t)
}

// line writes "prefix label: msg"; a message's further lines are indented
// under the label, so a multi-line error stays in one block.
func (p *Progress) line(prefix string, v Variant, msg string) {
	msg = strings.TrimRight(msg, "\n")
	msg = strings.ReplaceAll(msg, "\n", "\n"+strings.Repeat(" ", len(prefix)+1))
	p.write(prefix + " " + VariantLabel(v) + ": " + msg + "\n")
}

func (p *Progress) write(s string) {
	if _, err := io.WriteString(p.w, s); err != nil && p.err == nil {
		p.err = fmt.Errorf("write progress: %w", err)
	}
}

// doneText says how a variant ended, in words.
func doneText(r Result) string {
	switch r.Outcome {
	case Failed:
		return "failed: " + r.Error
	case Unchanged:
		s := "unchanged, not rebuilt"
		if r.Digest != "" {
			s += " (" + reportShortDigest(r.Digest) + ")"
		}
		return s
	case Planned:
		return "planned (dry run) as " + r.Variant.Tag
	}
	var parts []string
	if r.BuildTime > 0 {
		parts = append(parts, "built in "+reportDuration(r.BuildTime))
	} else {
		parts = append(parts, "built")
	}
	if r.TotalSteps > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d steps cached", r.CachedSteps, r.TotalSteps))
	}
	pub := string(r.Outcome)
	if r.Digest != "" {
		pub += " " + reportShortDigest(r.Digest)
	}
	parts = append(parts, pub)
	if n := len(r.Mirrors); n > 0 {
		parts = append(parts, reportPlural(n, "mirror"))
	}
	if n := len(r.Tags); n > 0 {
		parts = append(parts, reportPlural(n, "tag")+" promoted")
	}
	return strings.Join(parts, ", ")
}

package publish

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
//
// On a terminal (NewLiveProgress) the finished lines scroll the same way,
// and below them a block redrawn in place shows the variants in flight,
// what each is doing and for how long.
type Progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	done  int
	err   error

	// live: the block of variants in flight is drawn below the lines.
	live  bool
	width int
	// flight holds the variants in flight by name; drawn is how many
	// lines the block on the screen has.
	flight map[string]*inFlight
	drawn  int
	now    func() time.Time
}

type inFlight struct {
	label, msg string
	since      time.Time
}

// liveMaxRows is the most variants in flight the live block lists.
const liveMaxRows = 20

// NewProgress returns a Progress for total variants writing plain lines
// to w (a log, a pipe, a file).
func NewProgress(w io.Writer, total int) *Progress {
	return &Progress{w: w, total: total, now: time.Now}
}

// NewLiveProgress returns a Progress for total variants on a terminal of
// width columns: the lines of NewProgress, and below them the variants in
// flight redrawn in place (ANSI cursor movement). The caller decides that
// w is a terminal; call Run to keep the elapsed times ticking.
func NewLiveProgress(w io.Writer, total, width int) *Progress {
	if width < 20 {
		width = 80
	}
	return &Progress{w: w, total: total, now: time.Now, live: true, width: width, flight: map[string]*inFlight{}}
}

// Event reports an event on the way for variant v ("building on
// tcp://b1:1234", "builder tcp://b1:1234 unreachable, retrying on
// tcp://b2:1234"): a line of its own, or on a terminal the variant's
// status in the block of variants in flight.
func (p *Progress) Event(v Variant, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live {
		p.line(strings.Repeat(" ", len(p.counter())), v, msg)
		return
	}
	f := p.flight[v.Name]
	if f == nil {
		f = &inFlight{label: VariantLabel(v), since: p.now()}
		p.flight[v.Name] = f
	}
	f.msg = msg
	p.write(p.eraseBlock() + p.block())
}

// Done writes the line that says how a variant ended and counts it: what
// it did, its build time and cache reuse, or its error.
func (p *Progress) Done(r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if !p.live {
		p.line(p.counter(), r.Variant, doneText(r))
		return
	}
	delete(p.flight, r.Variant.Name)
	p.write(p.eraseBlock() + p.lineText(p.counter(), r.Variant, doneText(r)) + p.block())
}

// Finish writes the run's closing line, the report's counts (on a
// terminal, in place of the block of variants in flight).
func (p *Progress) Finish(r *Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	erase := ""
	if p.live {
		erase = p.eraseBlock()
		clear(p.flight)
	}
	p.write(erase + r.Counts().Summary() + "\n")
}

// Run redraws the block of variants in flight every second, so their
// elapsed times move, until ctx is done. It does nothing for plain lines.
func (p *Progress) Run(ctx context.Context) {
	if !p.live {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.mu.Lock()
			if p.drawn > 0 {
				p.write(p.eraseBlock() + p.block())
			}
			p.mu.Unlock()
		}
	}
}

// eraseBlock moves up over the block of variants in flight, clearing its
// lines, and leaves the cursor where it began.
func (p *Progress) eraseBlock() string {
	s := strings.Repeat("\x1b[1A\x1b[2K", p.drawn) + "\r"
	p.drawn = 0
	return s
}

// block draws the variants in flight, oldest first, and a count line;
// nothing when none is in flight. Each line is cut to the terminal's
// width so that none wraps (the erase counts lines).
func (p *Progress) block() string {
	if len(p.flight) == 0 {
		return ""
	}
	fs := make([]*inFlight, 0, len(p.flight))
	for _, f := range p.flight {
		fs = append(fs, f)
	}
	slices.SortFunc(fs, func(a, b *inFlight) int {
		if c := a.since.Compare(b.since); c != 0 {
			return c
		}
		return strings.Compare(a.label, b.label)
	})
	var b strings.Builder
	now := p.now()
	for i, f := range fs {
		if i == liveMaxRows {
			b.WriteString(p.fit(fmt.Sprintf("  … and %d more", len(fs)-i)) + "\n")
			p.drawn++
			break
		}
		msg, _, _ := strings.Cut(f.msg, "\n")
		b.WriteString(p.fit(fmt.Sprintf("  » %s: %s (%s)", f.label, msg, now.Sub(f.since).Round(time.Second))) + "\n")
		p.drawn++
	}
	b.WriteString(p.fit(fmt.Sprintf("%s %d in flight", p.counter(), len(fs))) + "\n")
	p.drawn++
	return b.String()
}

// fit cuts s to fit a terminal line.
func (p *Progress) fit(s string) string {
	if r := []rune(s); len(r) > p.width-1 {
		return string(r[:p.width-2]) + "…"
	}
	return s
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
	p.write(p.lineText(prefix, v, msg))
}

func (p *Progress) lineText(prefix string, v Variant, msg string) string {
	msg = strings.TrimRight(msg, "\n")
	msg = strings.ReplaceAll(msg, "\n", "\n"+strings.Repeat(" ", len(prefix)+1))
	return prefix + " " + VariantLabel(v) + ": " + msg + "\n"
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
		s := "planned (dry run) as " + r.Variant.Tag
		switch {
		case r.Variant.Validation != "":
			s += "; but " + r.Variant.Validation + ", so no tag would move"
		case len(r.Tags) > 0:
			s += "; would move " + strings.Join(r.Tags, ", ")
		}
		return s
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

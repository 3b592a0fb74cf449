// Package progress shows how far a long read or write has come (bytes
// and layers done, rate, ETA) on stderr, for every command but builds,
// which keep BuildKit's progressui: redrawn in place on a terminal, an
// occasional plain line otherwise, nothing when quiet.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpuimg/gpuimg/internal/humanize"
)

// Mode is how progress is shown, as buildx's --progress names them.
type Mode string

// Modes.
const (
	// Auto redraws one line in place on a terminal and writes Plain lines
	// elsewhere.
	Auto Mode = "auto"
	// Plain writes a line every PlainEvery, at each tenth of the work, and
	// when done.
	Plain Mode = "plain"
	// Quiet shows nothing.
	Quiet Mode = "quiet"
)

// Modes are the modes a --progress flag accepts.
func Modes() []string { return []string{string(Auto), string(Plain), string(Quiet)} }

// PlainEvery is how often a plain line is written while little changes.
const PlainEvery = 10 * time.Second

// redrawEvery is how often the live line is redrawn at most.
const redrawEvery = 100 * time.Millisecond

// State is how far the work has come: Bytes of Total (0: unknown), and
// for layer reads LayersDone of Layers; for a walk of a tree, Files read
// so far and At, where the walk is.
type State struct {
	Bytes, Total       int64
	LayersDone, Layers int
	Files              int64
	At                 string
}

// Display shows one piece of work's progress on w. Its methods may be
// called from several goroutines.
type Display struct {
	w     io.Writer
	label string
	live  bool
	quiet bool
	now   func() time.Time

	mu       sync.Mutex
	start    time.Time
	last     time.Time // last line or redraw
	tenth    int64     // tenths of Total last written (plain)
	state    State
	shown    State // the state of the last plain line
	drawn    bool
	finished bool
}

// New is a display of work called label on w: live when mode is Auto and
// w is a terminal (tty), plain lines otherwise, nothing under Quiet.
// now is the clock (nil: time.Now).
func New(w io.Writer, label string, mode Mode, tty bool, now func() time.Time) *Display {
	if now == nil {
		now = time.Now
	}
	return &Display{w: w, label: label, live: mode == Auto && tty, quiet: mode == Quiet, now: now, start: now(), tenth: -1}
}

// Update records s and shows it when it is time to.
func (d *Display) Update(s State) {
	if d.quiet {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.finished {
		return
	}
	d.state = s
	now := d.now()
	if d.live {
		if now.Sub(d.last) >= redrawEvery || d.complete() {
			d.last = now
			d.drawn = true
			fmt.Fprintf(d.w, "\r%s\x1b[K", d.line(now))
		}
		return
	}
	tenth := int64(-1)
	if s.Total > 0 {
		tenth = min(s.Bytes, s.Total) * 10 / s.Total
	}
	if tenth > d.tenth || now.Sub(d.last) >= PlainEvery {
		d.tenth, d.last, d.shown = max(tenth, d.tenth), now, s
		d.drawn = true
		fmt.Fprintln(d.w, d.line(now))
	}
}

// Done ends the display with the last state: the live line stays, a
// plain one is written if the last line did not show it.
func (d *Display) Done() {
	if d.quiet {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.finished || !d.drawn {
		d.finished = true
		return
	}
	d.finished = true
	now := d.now()
	if d.live {
		fmt.Fprintf(d.w, "\r%s\x1b[K\n", d.line(now))
		return
	}
	if d.shown != d.state {
		fmt.Fprintln(d.w, d.line(now))
	}
}

// complete says whether every byte is done.
func (d *Display) complete() bool { return d.state.Total > 0 && d.state.Bytes >= d.state.Total }

// line is "LABEL: 1.2 GiB / 3.4 GiB (35%), layers 3/12, 84.6 MiB/s, ETA 26s",
// or for a tree "LABEL: 80 MB, 120000 files, 4.1 MB/s, pass 1/3 /usr/lib".
func (d *Display) line(now time.Time) string {
	s := d.state
	done := s.Bytes
	if s.Total > 0 {
		done = min(done, s.Total)
	}
	parts := []string{humanize.Bytes(done)}
	if s.Total > 0 {
		parts[0] += fmt.Sprintf(" / %s (%d%%)", humanize.Bytes(s.Total), done*100/s.Total)
	}
	if s.Layers > 0 {
		parts = append(parts, fmt.Sprintf("layers %d/%d", s.LayersDone, s.Layers))
	}
	if s.Files > 0 {
		parts = append(parts, fmt.Sprintf("%d files", s.Files))
	}
	elapsed := now.Sub(d.start).Seconds()
	if elapsed >= 1 && done > 0 {
		rate := float64(done) / elapsed
		parts = append(parts, humanize.Bytes(int64(rate))+"/s")
		if s.Total > 0 && done < s.Total {
			eta := time.Duration(float64(s.Total-done) / rate * float64(time.Second))
			parts = append(parts, "ETA "+eta.Round(time.Second).String())
		}
	}
	if s.At != "" {
		parts = append(parts, s.At)
	}
	return d.label + ": " + strings.Join(parts, ", ")
}

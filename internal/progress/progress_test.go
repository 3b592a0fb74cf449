package progress

import (
	"strings"
	"testing"
	"time"
)

// clock is a fake time.Now that the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestPlainLines(t *testing.T) {
	c := &clock{time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)}
	var b strings.Builder
	d := New(&b, "validate", Plain, true, c.now) // plain even on a terminal
	const total = 1000 << 20
	for i := int64(1); i <= 100; i++ {
		c.t = c.t.Add(time.Second)
		d.Update(State{Bytes: i * total / 100, Total: total, LayersDone: int(i / 10), Layers: 10})
	}
	d.Done()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	// One line at 0%..9% (the first), one at each further tenth: 11 in
	// all; no 10-second line falls between tenths (each takes 10 s).
	if len(lines) != 11 {
		t.Fatalf("%d lines, want 11:\n%s", len(lines), b.String())
	}
	if strings.Contains(b.String(), "\r") || strings.Contains(b.String(), "\x1b[") {
		t.Errorf("plain output redraws:\n%q", b.String())
	}
	want := "validate: 1000.0 MiB / 1000.0 MiB (100%), layers 10/10, 10.0 MiB/s"
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
	if mid := lines[5]; !strings.Contains(mid, "(50%), layers 5/10, 10.0 MiB/s, ETA 50s") {
		t.Errorf("line at half way: %q", mid)
	}
}

func TestPlainEveryTenSeconds(t *testing.T) {
	c := &clock{time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)}
	var b strings.Builder
	d := New(&b, "copy", Auto, false, c.now) // auto, not a terminal: plain
	for i := range 60 {
		c.t = c.t.Add(time.Second)
		d.Update(State{Bytes: int64(i+1) << 20}) // total unknown
	}
	d.Done()
	if n := strings.Count(b.String(), "\n"); n != 7 { // 1 s, 11 s, …, 51 s, and the last
		t.Errorf("%d lines, want 7:\n%s", n, b.String())
	}
}

func TestLiveRedraws(t *testing.T) {
	c := &clock{time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)}
	var b strings.Builder
	d := New(&b, "export", Auto, true, c.now)
	for i := range 50 {
		c.t = c.t.Add(50 * time.Millisecond)
		d.Update(State{Bytes: int64(i+1) << 20, Total: 50 << 20, LayersDone: (i + 1) / 10, Layers: 5})
	}
	d.Done()
	out := b.String()
	if n := strings.Count(out, "\r"); n < 20 || n > 30 { // every 100 ms of 2.5 s, the end, and Done
		t.Errorf("%d redraws, want about 26:\n%q", n, out)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\rexport: 50.0 MiB / 50.0 MiB (100%), layers 5/5, 20.0 MiB/s\x1b[K\n") {
		t.Errorf("live output does not end on its last line:\n%q", out)
	}
}

func TestQuiet(t *testing.T) {
	var b strings.Builder
	d := New(&b, "copy", Quiet, true, nil)
	d.Update(State{Bytes: 1, Total: 2})
	d.Done()
	if b.Len() != 0 {
		t.Errorf("quiet wrote %q", b.String())
	}
}

// TestTreeWalkLine: a walk of a tree shows its files and where it is.
func TestTreeWalkLine(t *testing.T) {
	c := &clock{time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)}
	var b strings.Builder
	d := New(&b, "capture /", Plain, false, c.now)
	c.t = c.t.Add(2 * time.Second)
	d.Update(State{Bytes: 4 << 20, Files: 120000, At: "pass 1/3 /usr/lib"})
	d.Done()
	want := "capture /: 4.0 MiB, 120000 files, 2.0 MiB/s, pass 1/3 /usr/lib\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

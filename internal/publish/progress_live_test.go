package publish

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tonistiigi/vt100"

	"github.com/gpuimg/gpuimg/matrix"
)

// vtScreen is what a terminal shows: its non-empty lines, right-trimmed.
func vtScreen(term *vt100.VT100) []string {
	var lines []string
	for _, row := range term.Content {
		lines = append(lines, strings.TrimRight(string(row), " "))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// TestLiveProgress feeds the live view to a VT100 emulator (the one
// BuildKit's progress display is tested with) and reads the screen after
// each step.
func TestLiveProgress(t *testing.T) {
	const width = 140
	term := vt100.NewVT100(30, width)
	r := reportFixture()
	clock := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	p := NewLiveProgress(term, 3, width)
	p.now = func() time.Time { return clock }
	check := func(step string, want ...string) {
		t.Helper()
		if got := vtScreen(term); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("after %s the screen shows:\n%s\nwant:\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	p.Event(r.Results[0].Variant, "building on tcp://buildkit-0:1234")
	clock = clock.Add(2 * time.Second)
	p.Event(r.Results[2].Variant, "building on tcp://buildkit-1:1234")
	clock = clock.Add(5 * time.Second)
	p.Event(r.Results[0].Variant, "validating\nwith more lines")
	check("three events",
		"  » torch 2.7.1 cu128 py3.12: validating (7s)",
		"  » torch 2.7.1 cu126 py3.11: building on tcp://buildkit-1:1234 (5s)",
		"[0/3] 2 in flight")

	p.Done(r.Results[2])
	check("a failure",
		"[1/3] torch 2.7.1 cu126 py3.11: failed: build: pip install evil==1.0 | tee: <script>alert(1)</script>",
		"      ERROR: No matching distribution found for evil==1.0",
		"  » torch 2.7.1 cu128 py3.12: validating (7s)",
		"[1/3] 1 in flight")

	// Run redraws the elapsed time.
	clock = clock.Add(30 * time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		p.mu.Lock() // Run writes to the emulator under it
		s := strings.Join(vtScreen(term), "\n")
		p.mu.Unlock()
		if strings.Contains(s, "(37s)") {
			break
		}
	}
	cancel()
	<-done
	check("a second of Run",
		"[1/3] torch 2.7.1 cu126 py3.11: failed: build: pip install evil==1.0 | tee: <script>alert(1)</script>",
		"      ERROR: No matching distribution found for evil==1.0",
		"  » torch 2.7.1 cu128 py3.12: validating (37s)",
		"[1/3] 1 in flight")

	long := r.Results[1]
	long.Variant.Stack = matrix.Stack{}
	long.Variant.Name = strings.Repeat("x", 150)
	p.Event(long.Variant, "building")
	if lines := vtScreen(term); len(lines) != 5 || !strings.HasPrefix(lines[3], "  » xxx") || len([]rune(lines[3])) >= width {
		t.Errorf("a long name wrapped the block:\n%s", strings.Join(lines, "\n"))
	}
	p.Done(r.Results[0])
	p.Done(long)
	p.Finish(r)
	lines := vtScreen(term)
	if got, want := lines[len(lines)-1], "3 variants: 1 published, 1 unchanged, 1 failed; 2 combinations skipped"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
	if s := strings.Join(lines, "\n"); strings.Contains(s, "in flight") || strings.Contains(s, "»") {
		t.Errorf("the block of variants in flight is left on the screen:\n%s", s)
	}
	if len(lines) != 6 {
		t.Errorf("screen has %d lines, want 6 (2 for the failure, 2 done, one wrapped, the summary):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if p.Err() != nil {
		t.Error(p.Err())
	}
}

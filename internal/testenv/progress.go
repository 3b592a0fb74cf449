package testenv

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// progressKey carries the *progress set by WithProgress.
type progressKey struct{}

// progress serialises lines from steps that run at the same time.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// WithProgress returns a context under which testenv's slow steps
// (apt-get, compiling the pinned tools, debootstrap, building the arm64
// emulator, downloading Debian's CUDA packages, starting the daemons)
// write to w what they are doing as they start, with how long a first run
// takes, a line every 30 seconds while they run, and the time they took.
// Without it testenv is silent, as tests want. w may be shared by steps
// that run at the same time.
func WithProgress(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, progressKey{}, &progress{w: w})
}

// progressTick is how often a running step says it is still running, and
// progressQuiet how short a step may be without a line saying it is done
// (variables for the test).
var progressTick, progressQuiet = 30 * time.Second, 2 * time.Second

// startStep announces the step name (what it does, with an -ing verb) on
// ctx's progress writer, if any, with detail (what it works on and how
// long it takes), and returns the function that ends it; call that
// exactly once.
func startStep(ctx context.Context, name, detail string) (done func()) {
	p, _ := ctx.Value(progressKey{}).(*progress)
	if p == nil {
		return func() {}
	}
	p.printf("  - %s: %s\n", name, detail)
	start := time.Now()
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.printf("    still %s (%s so far)\n", name, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() {
		close(stop)
		<-finished
		if d := time.Since(start); d >= progressQuiet {
			p.printf("    %s: done in %s\n", name, d.Round(time.Second))
		}
	}
}

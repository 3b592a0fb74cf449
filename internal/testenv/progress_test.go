package testenv

import (
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStartStep(t *testing.T) {
	tick, quiet := progressTick, progressQuiet
	t.Cleanup(func() { progressTick, progressQuiet = tick, quiet })
	progressTick = 20 * time.Millisecond

	tests := []struct {
		name     string
		progress bool
		quiet    time.Duration
		want     *regexp.Regexp // nil: nothing written
	}{
		{name: "silent without WithProgress", quiet: 0},
		{
			name: "start, ticks and done", progress: true, quiet: 0,
			want: regexp.MustCompile(`^  - compiling: tools, once \(5 minutes\)\n(    still compiling \(\d+s so far\)\n){2,}    compiling: done in \d+s\n$`),
		},
		{
			name: "a short step does not say it is done", progress: true, quiet: time.Hour,
			want: regexp.MustCompile(`^  - compiling: tools, once \(5 minutes\)\n(    still compiling \(\d+s so far\)\n){2,}$`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			progressQuiet = tt.quiet
			var b syncBuilder
			ctx := t.Context()
			if tt.progress {
				ctx = WithProgress(ctx, &b)
			}
			done := startStep(ctx, "compiling", "tools, once (5 minutes)")
			// Two ticks' lines (five ticks' time when nothing is written).
			for i := 0; i < 5 || tt.progress && strings.Count(b.String(), "still") < 2 && i < 250; i++ {
				time.Sleep(progressTick)
			}
			done()
			got := b.String()
			switch {
			case tt.want == nil && got != "":
				t.Errorf("wrote %q, want nothing", got)
			case tt.want != nil && !tt.want.MatchString(got):
				t.Errorf("wrote %q, want it to match %s", got, tt.want)
			}
			time.Sleep(2 * progressTick)
			if b.String() != got {
				t.Errorf("wrote %q after done", strings.TrimPrefix(b.String(), got))
			}
		})
	}
}

// syncBuilder is a strings.Builder that the test reads while the ticker
// may write.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

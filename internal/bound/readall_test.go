package bound

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestReadAll: a stream of at most max bytes is read whole; a longer one
// (here 1 MiB) is refused after max+1 bytes, naming what and the bound.
func TestReadAll(t *testing.T) {
	for _, tc := range []struct {
		in      string
		max     int64
		refused bool
	}{
		{"abc", 3, false},
		{"", 3, false},
		{"abcd" + strings.Repeat("x", 1<<20), 3, true},
	} {
		r := &countReader{r: strings.NewReader(tc.in)}
		b, err := ReadAll(r, "the thing", tc.max)
		switch {
		case tc.refused && (!errors.Is(err, ErrBound) || !strings.Contains(err.Error(), "the thing")):
			t.Errorf("%.8q: %v, want a bound error naming the thing", tc.in, err)
		case tc.refused && r.n > tc.max+1:
			t.Errorf("%.8q: read %d bytes, want at most %d", tc.in, r.n, tc.max+1)
		case !tc.refused && (err != nil || string(b) != tc.in):
			t.Errorf("%q: %q, %v", tc.in, b, err)
		}
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestReadAllContextEndsOnCancel: a read that never returns (a pipe
// nobody writes) ends when ctx does, with its cause.
func TestReadAllContextEndsOnCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	cause := errors.New("interrupted by SIGTERM")
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	_, err := ReadAllContext(ctx, pr, "stdin", 1<<20)
	if !errors.Is(err, cause) || time.Since(start) > 5*time.Second {
		t.Fatalf("%v after %s, want the cause at once", err, time.Since(start))
	}
	b, err := ReadAllContext(t.Context(), strings.NewReader("stack"), "stdin", 1<<20)
	if err != nil || string(b) != "stack" {
		t.Fatalf("%q, %v", b, err)
	}
}

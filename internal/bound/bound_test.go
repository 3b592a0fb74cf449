package bound

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 1<<30); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error
		msg  string
	}{
		{small, nil, ""},
		{sparse, ErrBound, "over the limit of 4 MiB"},
		{fifo, ErrNotRegular, "(a FIFO)"},
		{zero, ErrNotRegular, "(a character device)"},
		{dir, ErrNotRegular, "(a directory)"},
		{filepath.Join(dir, "missing"), os.ErrNotExist, "no such file"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			start := time.Now()
			b, err := ReadFile(tc.path, "the file", 4<<20)
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			if tc.want == nil {
				if err != nil || string(b) != "ok" {
					t.Fatalf("got %q, %v", b, err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "the file") {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.msg)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"12.4", `"12.4"`},
		{strings.Repeat("x", 200), `"` + strings.Repeat("x", 200) + `"`},
		{strings.Repeat("x", 50<<20), `"` + strings.Repeat("x", 200) + `"… (52428800 bytes)`},
		{strings.Repeat("é", 150), `"` + strings.Repeat("é", 100) + `"… (300 bytes)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q…) = %.80s…, want %.80s…", tc.in, got, tc.want)
		}
	}
}

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadPrioritized(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "prefetch.txt")
	if err := os.WriteFile(list, []byte("# from a start trace\nusr/bin/python3.13\n\n  opt/venv/lib/python3.13/site-packages/torch/__init__.py  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readPrioritized(list, "estargz")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"usr/bin/python3.13", "opt/venv/lib/python3.13/site-packages/torch/__init__.py"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, tt := range []struct{ name, file, comp, want string }{
		{"not estargz", list, "zstd", "applies to --compression estargz"},
		{"missing file", filepath.Join(dir, "none.txt"), "estargz", "read --prioritize file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readPrioritized(tt.file, tt.comp)
			if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != ExitInvalid {
				t.Errorf("got %v (exit %d), want an invalid-input error containing %q", err, exitCode(err), tt.want)
			}
		})
	}
}

package builder

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	fstypes "github.com/tonistiigi/fsutil/types"
)

// TestClampedContext: the context directory's files reach the build with
// mtimes no later than the epoch; older ones keep theirs.
func TestClampedContext(t *testing.T) {
	const epoch = 1_700_000_000
	dir := t.TempDir()
	old := time.Unix(epoch-3600, 0)
	for name, mtime := range map[string]time.Time{"new.py": time.Now(), "old.py": old} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	ctxFS, err := clampedContext(dir, epoch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"new.py": time.Unix(epoch, 0).UnixNano(), "old.py": old.UnixNano()}
	got := map[string]int64{}
	err = ctxFS.Walk(t.Context(), "", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*fstypes.Stat); ok && !e.IsDir() {
			got[p] = st.ModTime
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: mtime %v, want %v", name, time.Unix(0, got[name]).UTC(), time.Unix(0, w).UTC())
		}
	}
}

package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: the file holds all of the new content, with mode 0644, and
// no temporary file is left; a write that cannot happen leaves the old
// content and names the path.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.json")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "new" {
		t.Errorf("content %q, %v", b, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("left %v", left)
	}
	missing := filepath.Join(dir, "missing", "o.yaml")
	if err := Write(missing, []byte("x")); err == nil || !strings.Contains(err.Error(), "write "+missing) {
		t.Errorf("write into a missing directory: %v", err)
	}
	tmp, err := WriteTemp(p, []byte("staged"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tmp) != dir || !strings.HasPrefix(filepath.Base(tmp), ".report.json.tmp-") {
		t.Errorf("temporary file %s, want one beside %s", tmp, p)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("WriteTemp changed %s: %q", p, b)
	}
}

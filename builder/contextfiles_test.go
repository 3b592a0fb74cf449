package builder

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestContextFilesCoverDockerfiles checks that every context file the
// generated Dockerfiles (the golden ones) mount is one ContextFiles
// writes, so a Dockerfile written with build --dockerfile-only
// --context-dir builds without gpuimg, and that WriteContext writes
// them all.
func TestContextFilesCoverDockerfiles(t *testing.T) {
	dir := t.TempDir()
	req := filepath.Join(dir, "requirements.txt")
	must(t, os.WriteFile(req, []byte("numpy==1.26.4\n"), 0o644))
	r := Request{ContextDir: dir}
	r.Extras.Requirements = "requirements.txt"
	plan := &Plan{Dockerfile: "FROM scratch\n"}
	files, err := ContextFiles(r, plan)
	must(t, err)
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.Dockerfile"))
	must(t, err)
	if len(goldens) == 0 {
		t.Fatal("no golden Dockerfiles")
	}
	source := regexp.MustCompile(`source=(gpuimg/[A-Za-z0-9._/-]+)`)
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		must(t, err)
		for _, m := range source.FindAllStringSubmatch(string(b), -1) {
			if _, ok := files[m[1]]; !ok {
				t.Errorf("%s mounts %s, which ContextFiles does not write", g, m[1])
			}
		}
	}
	out := t.TempDir()
	must(t, WriteContext(out, r, plan))
	for name := range files {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("WriteContext: %v", err)
		}
	}
}

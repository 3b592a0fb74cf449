package builder

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestInputs checks the build's inputs digest (InputsLabel): the same for
// the same inputs, another when any one of them changes, the content of
// a --copy source included, and never the label's own old value.
func TestInputs(t *testing.T) {
	ctxDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(ctxDir, "main.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func() (*run, map[string][]byte) {
		req := Request{Tags: []string{"r/x:1"}, Push: true, Extras: Extras{Copy: []string{"main.py:/app/main.py"}}}
		plan := &Plan{Dockerfile: "FROM base\n", Labels: map[string]string{"org.opencontainers.image.version": "v"}, SourceDateEpoch: 1700000000}
		return &run{req: req, plan: plan}, map[string][]byte{"Dockerfile": []byte("FROM base\n"), ctxVerify: []byte("verify")}
	}
	digest := func(t *testing.T, b *run, files map[string][]byte) string {
		t.Helper()
		d, err := b.inputs(files, ctxDir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	b, files := base()
	want := digest(t, b, files)
	if again := digest(t, b, files); again != want {
		t.Fatalf("the same inputs gave %s, then %s", want, again)
	}
	for _, tc := range []struct {
		name   string
		change func(b *run, files map[string][]byte)
		same   bool
	}{
		{"the old inputs label", func(b *run, _ map[string][]byte) { b.plan.Labels[InputsLabel] = "sha256:old" }, true},
		{"the Dockerfile", func(b *run, _ map[string][]byte) { b.plan.Dockerfile += "RUN true\n" }, false},
		{"a label", func(b *run, _ map[string][]byte) { b.plan.Labels["org.opencontainers.image.version"] = "w" }, false},
		{"the epoch", func(b *run, _ map[string][]byte) { b.plan.SourceDateEpoch++ }, false},
		{"a context file", func(_ *run, files map[string][]byte) { files[ctxVerify] = []byte("verify 2") }, false},
		{"the compression", func(b *run, _ map[string][]byte) { b.req.Compression = matrix.CompressionGzip }, false},
		{"the large-wheel threshold", func(b *run, _ map[string][]byte) { b.req.LargeWheel = 1 }, false},
		{"the pip index", func(b *run, _ map[string][]byte) { b.req.PipIndexURL = "http://mirror/simple" }, false},
		{"provenance", func(b *run, _ map[string][]byte) { b.req.Provenance = ProvenanceAuto }, false},
		{"the tags", func(b *run, _ map[string][]byte) { b.req.Tags = []string{"r/y:2"} }, true},
		{"the proof's stages (--no-checks: the same image)", func(b *run, files map[string][]byte) {
			b.plan.definition = Definition{Stack: resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}), Base: "base@sha256:" + strings.Repeat("0", 64)}
			checked, err := Dockerfile(b.plan.definition)
			if err != nil {
				t.Fatal(err)
			}
			b.plan.definition.NoChecks = true
			unchecked, err := Dockerfile(b.plan.definition)
			if err != nil || unchecked == checked {
				t.Fatalf("the Dockerfile with and without checks: the same, or %v", err)
			}
			b.plan.Dockerfile, files["Dockerfile"] = unchecked, []byte(unchecked)
			noChecks := digest(t, b, files)
			b.plan.definition.NoChecks = false
			b.plan.Dockerfile, files["Dockerfile"] = checked, []byte(checked)
			if d := digest(t, b, files); d != noChecks {
				t.Errorf("with the proof %s, without %s", d, noChecks)
			}
		}, false},
		{"a --copy source's content", func(*run, map[string][]byte) {
			if err := os.WriteFile(filepath.Join(ctxDir, "main.py"), []byte("print(2)\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, files := base()
			tc.change(b, files)
			if got := digest(t, b, files); (got == want) != tc.same {
				t.Errorf("after changing %s: %s, before %s; want the same: %v", tc.name, got, want, tc.same)
			}
		})
	}
}

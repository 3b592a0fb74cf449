package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// readData reads the real matrix/data files.
func readData(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range DataFiles() {
		b, err := os.ReadFile(filepath.Join("..", "..", "matrix", "data", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

// loadFolded loads the built-in data with the folded files on top.
func loadFolded(t *testing.T, folded map[string][]byte) *matrix.DB {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for name, b := range folded {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	db, err := matrix.Load(paths...)
	if err != nil {
		t.Fatalf("folded files do not load: %v", err)
	}
	return db
}

// TestFoldWritesNewRows folds the overlay of the fake upstream into the
// real data files: every new row and its source lands in its file, the
// rest of each file is byte for byte what it was, and with the folded
// files loaded the updater finds nothing new.
func TestFoldWritesNewRows(t *testing.T) {
	db := builtin(t)
	w := newWorld(t, db)
	ov, err := Update(t.Context(), db, w.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	files := readData(t)
	folded, err := Fold(files, ov)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"torch.yaml":      "version: " + w.torch,
		"tensorflow.yaml": "version: " + w.tf,
		"jax.yaml":        "version: " + w.jax,
		"cuda.yaml":       "version: " + w.cuda,
		"cudnn.yaml":      "version: " + w.newCuDNN,
		"nccl.yaml":       "version: " + w.newNCCL,
		"images.yaml":     "cuda: " + w.cuda,
	}
	if len(folded) != len(want) {
		t.Errorf("changed %d files, want %d", len(folded), len(want))
	}
	for name, s := range want {
		b, ok := folded[name]
		if !ok {
			t.Errorf("%s not changed", name)
			continue
		}
		if !strings.Contains(string(b), s) || !strings.Contains(string(b), "retrieved: \"2026-11-30\"") {
			t.Errorf("%s lacks %q or its source", name, s)
		}
		// Only lines were added: the old file is the new one with some
		// whole lines taken out, in order.
		if !isSubsequence(splitLines(string(files[name])), splitLines(string(b))) {
			t.Errorf("%s: old lines were changed or reordered", name)
		}
	}
	// torch.yaml lists oldest first: the new release is its last row;
	// cudnn.yaml too; base_images is newest first: the new CUDA comes first.
	if tb := string(folded["torch.yaml"]); strings.LastIndex(tb, "- version: ") != strings.Index(tb, "- version: "+w.torch) {
		t.Errorf("torch %s is not the last row of torch.yaml", w.torch)
	}
	ib := string(folded["images.yaml"])
	if i := strings.Index(ib, "- cuda: "); i < 0 || !strings.HasPrefix(ib[i:], "- cuda: "+w.cuda) {
		t.Errorf("CUDA %s is not the first base_images row", w.cuda)
	}
	again, err := Update(t.Context(), loadFolded(t, folded), w.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Empty() {
		t.Errorf("with the folded data, update still finds %v", again.Found)
	}
}

// TestFoldExtendsKnownRow: new variants of a torch release the file has
// replace that row's lines, and only those.
func TestFoldExtendsKnownRow(t *testing.T) {
	db := builtin(t)
	f := newFakeUpstream(t)
	f.mirrorTorch(db)
	nt := db.Torch[len(db.Torch)/2]
	f.addWheel("torch", nt.Version.String(), "cu199", "cp312", "manylinux_2_28_x86_64", "nvidia-cudnn-cu19==19.0.0.1")
	ov, err := Update(t.Context(), db, WithSources(SourceTorch), WithTorchIndexURL(f.torchURL()), WithClock(testDay))
	if err != nil {
		t.Fatal(err)
	}
	files := readData(t)
	folded, err := Fold(files, ov)
	if err != nil {
		t.Fatal(err)
	}
	if len(folded) != 1 {
		t.Fatalf("changed %v", len(folded))
	}
	got := loadFolded(t, folded)
	for _, r := range got.Torch {
		if r.Version.Compare(nt.Version) == 0 {
			if len(r.Variants) != len(nt.Variants)+1 || r.Variants[len(r.Variants)-1].CuDNN.String() != "19.0.0.1" || r.Source != nt.Source {
				t.Errorf("row %s = %+v", r.Version, r)
			}
		}
	}
	if len(got.Torch) != len(db.Torch) {
		t.Errorf("%d torch rows, want %d", len(got.Torch), len(db.Torch))
	}
	old, nw := string(files["torch.yaml"]), string(folded["torch.yaml"])
	if c := strings.Count(nw, "\n- version: "); c != strings.Count(old, "\n- version: ") {
		t.Errorf("row count changed: %d", c)
	}
	if !strings.Contains(nw, "variants cu199 added by gpuimg matrix update") {
		t.Errorf("extended row lacks its note")
	}
}

// TestFoldRefuses: a file without the list, or a list in flow style,
// is an error naming the file; nothing comes back.
func TestFoldRefuses(t *testing.T) {
	db := builtin(t)
	w := newWorld(t, db)
	ov, err := Update(t.Context(), db, append(w.opts(), WithSources(SourceCuDNN))...)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"no list":   "sources:\n  - id: x\n    title: x\n    url: https://x\n",
		"flow list": "sources: []\ncudnn: []\n",
	} {
		out, err := Fold(map[string][]byte{"cudnn.yaml": []byte(text)}, ov)
		if err == nil || out != nil || !strings.Contains(err.Error(), "cudnn.yaml") {
			t.Errorf("%s: %v, %v", name, out, err)
		}
	}
}

func isSubsequence(sub, of []string) bool {
	i := 0
	for _, l := range of {
		if i < len(sub) && sub[i] == l {
			i++
		}
	}
	return i == len(sub)
}

package upstream

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// checkout makes a gpuimg checkout in a temporary directory: go.mod,
// matrix/data/ with a copy of the real data files, and docs/. It returns
// the checkout's root and its data directory.
func checkout(t *testing.T, parent string) (root, data string) {
	t.Helper()
	root = filepath.Join(parent, "gpuimg")
	data = filepath.Join(root, "matrix", "data")
	for _, d := range []string{data, filepath.Join(root, "docs", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "go.mod"), "module "+Module+"\n\ngo 1.26\n")
	src, err := filepath.Glob(filepath.Join("..", "..", "matrix", "data", "*.yaml"))
	if err != nil || len(src) == 0 {
		t.Fatalf("no data files: %v", err)
	}
	for _, p := range src {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(data, filepath.Base(p)), string(b))
	}
	return root, data
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot reads every file of dir (name → content).
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func dataStep(t *testing.T, err error) DataStep {
	t.Helper()
	de, ok := errors.AsType[*DataError](err)
	if !ok {
		t.Fatalf("%v (%T) is not a *DataError", err, err)
	}
	return de.Step
}

// TestFindData: the checkout is found from itself and from below it; a
// go.mod of another module, one without matrix/data beside it, or a
// matrix/data that is a file is passed over; outside any checkout the
// error names the directory and wraps ErrNoCheckout.
func TestFindData(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, tmp string) (start, want string) // want "": not found
	}{
		{"from the root", func(t *testing.T, tmp string) (string, string) {
			root, data := checkout(t, tmp)
			return root, data
		}},
		{"from a subdirectory", func(t *testing.T, tmp string) (string, string) {
			root, data := checkout(t, tmp)
			return filepath.Join(root, "docs", "deep"), data
		}},
		{"from matrix/data itself", func(t *testing.T, tmp string) (string, string) {
			_, data := checkout(t, tmp)
			return data, data
		}},
		{"go.mod with white space and CRLF", func(t *testing.T, tmp string) (string, string) {
			root, data := checkout(t, tmp)
			writeFile(t, filepath.Join(root, "go.mod"), "module "+Module+"  \r\n\r\ngo 1.26\r\n")
			return root, data
		}},
		{"an inner module of another name", func(t *testing.T, tmp string) (string, string) {
			root, data := checkout(t, tmp)
			inner := filepath.Join(root, "tools")
			writeFile(t, filepath.Join(inner, "go.mod"), "module "+Module+"/tools\n")
			writeFile(t, filepath.Join(inner, "matrix", "data", "torch.yaml"), "torch: []\n")
			return inner, data
		}},
		{"an inner module of the same name without matrix/data", func(t *testing.T, tmp string) (string, string) {
			root, data := checkout(t, tmp)
			inner := filepath.Join(root, "docs", "deep")
			writeFile(t, filepath.Join(inner, "go.mod"), "module "+Module+"\n")
			return inner, data
		}},
		{"another module", func(t *testing.T, tmp string) (string, string) {
			writeFile(t, filepath.Join(tmp, "go.mod"), "module example.com/other\n")
			writeFile(t, filepath.Join(tmp, "matrix", "data", "torch.yaml"), "torch: []\n")
			return tmp, ""
		}},
		{"the module named on a later line", func(t *testing.T, tmp string) (string, string) {
			writeFile(t, filepath.Join(tmp, "go.mod"), "// module "+Module+"\nmodule "+Module+"\n")
			writeFile(t, filepath.Join(tmp, "matrix", "data", "torch.yaml"), "torch: []\n")
			return tmp, ""
		}},
		{"matrix/data is a file", func(t *testing.T, tmp string) (string, string) {
			writeFile(t, filepath.Join(tmp, "go.mod"), "module "+Module+"\n")
			writeFile(t, filepath.Join(tmp, "matrix", "data"), "")
			return tmp, ""
		}},
		{"no go.mod", func(t *testing.T, tmp string) (string, string) {
			return tmp, ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, want := tt.setup(t, t.TempDir())
			got, err := FindData(start)
			if want != "" {
				if err != nil || got != want {
					t.Fatalf("FindData(%s) = %q, %v; want %q", start, got, err, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FindData(%s) = %q, want an error", start, got)
			}
			if step := dataStep(t, err); step != DataFind || !errors.Is(err, ErrNoCheckout) {
				t.Errorf("step %s, errors.Is(ErrNoCheckout) %v: %v", step, errors.Is(err, ErrNoCheckout), err)
			}
			wantMsg := start + " is not inside a gpuimg checkout (no go.mod of github.com/gpuimg/gpuimg with matrix/data/ above it)"
			if err.Error() != wantMsg {
				t.Errorf("error\n got %q\nwant %q", err, wantMsg)
			}
		})
	}
}

// TestLoadData: the directory's *.yaml load over the built-in data, then
// the extra files; a file that does not load is a DataLoad error with its
// file and line, a missing directory a DataRead error.
func TestLoadData(t *testing.T) {
	t.Run("the checkout's data", func(t *testing.T) {
		_, data := checkout(t, t.TempDir())
		db, err := LoadData(data)
		if err != nil {
			t.Fatal(err)
		}
		if want := builtin(t); db.Torch[0].Version.String() != want.Torch[0].Version.String() {
			t.Errorf("newest torch %s, want the built-in %s", db.Torch[0].Version, want.Torch[0].Version)
		}
	})
	t.Run("a directory name with glob characters", func(t *testing.T) {
		// A glob over the path would match no file here, and load the
		// built-in data alone.
		_, data := checkout(t, filepath.Join(t.TempDir(), "a[b]*"))
		writeFile(t, filepath.Join(data, "extra.yaml"), "torhc: []\n")
		if _, err := LoadData(data); err == nil || !strings.Contains(err.Error(), "extra.yaml") {
			t.Fatalf("the directory's files were not read: %v", err)
		}
	})
	tests := []struct {
		name    string
		file    string // written into the data directory ("" none)
		content string
		extra   string // a --matrix-file's content ("" none)
		step    DataStep
		has     []string
	}{
		{name: "a file that is not YAML", file: "torch.yaml", content: "torch:\n- version: [\n", step: DataLoad,
			has: []string{filepath.Join("matrix", "data", "torch.yaml"), "line "}},
		{name: "an unknown key in a new file", file: "extra.yaml", content: "torhc: []\n", step: DataLoad,
			has: []string{"extra.yaml", "line 1", `unknown key "torhc"`}},
		{name: "a bad --matrix-file", extra: "cdua: []\n", step: DataLoad,
			has: []string{"extra-matrix.yaml", "line 1", `unknown key "cdua"`}},
		{name: "files not ending .yaml are not read", file: "notes.txt", content: "torhc: [\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			_, data := checkout(t, tmp)
			if tt.file != "" {
				writeFile(t, filepath.Join(data, tt.file), tt.content)
			}
			var extra []string
			if tt.extra != "" {
				p := filepath.Join(tmp, "extra-matrix.yaml")
				writeFile(t, p, tt.extra)
				extra = append(extra, p)
			}
			db, err := LoadData(data, extra...)
			if tt.step == "" {
				if err != nil || db == nil {
					t.Fatalf("LoadData: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded")
			}
			if step := dataStep(t, err); step != tt.step {
				t.Errorf("step %s, want %s: %v", step, tt.step, err)
			}
			for _, s := range tt.has {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q lacks %q", err, s)
				}
			}
		})
	}
	t.Run("a missing directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "gone")
		_, err := LoadData(dir)
		if err == nil {
			t.Fatal("loaded")
		}
		if step := dataStep(t, err); step != DataRead || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), dir) {
			t.Errorf("step %s: %v", step, err)
		}
	})
}

// TestWriteData folds the fake upstream's overlay into a checkout's data:
// the changed files are replaced whole and load with the new rows, the
// others are untouched, and no temporary file is left. When a step fails
// (a data file missing, the folded data not loading) nothing is replaced
// and nothing is left behind.
func TestWriteData(t *testing.T) {
	db := builtin(t)
	w := newWorld(t, db)
	ov, err := Update(t.Context(), db, w.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Empty() {
		t.Fatal("the fake upstream has nothing new")
	}

	t.Run("folds and replaces", func(t *testing.T) {
		_, data := checkout(t, t.TempDir())
		before := snapshot(t, data)
		written, err := WriteData(data, ov)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range written {
			if filepath.Dir(p) != data {
				t.Errorf("wrote %s outside %s", p, data)
			}
			names = append(names, filepath.Base(p))
		}
		if want := DataFiles(); !slices.Equal(names, want) {
			t.Errorf("wrote %v, want %v (sorted)", names, want)
		}
		after := snapshot(t, data)
		if !slices.Equal(slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before))) {
			t.Errorf("files after %v, before %v (a temporary file left?)", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
		}
		for name, b := range after {
			if changed := !bytes.Equal(b, before[name]); changed != slices.Contains(names, name) {
				t.Errorf("%s changed: %v", name, changed)
			}
		}
		loaded, err := LoadData(data)
		if err != nil {
			t.Fatalf("written data does not load: %v", err)
		}
		if got := loaded.Torch[0].Version.String(); got != w.torch {
			t.Errorf("newest torch %s, want %s", got, w.torch)
		}
		// With the rows folded in, upstream has nothing new.
		again, err := Update(t.Context(), loaded, w.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Empty() {
			t.Errorf("after WriteData upstream still has %v", again.Found)
		}
	})

	t.Run("an empty overlay writes nothing", func(t *testing.T) {
		_, data := checkout(t, t.TempDir())
		before := snapshot(t, data)
		written, err := WriteData(data, &Overlay{})
		if err != nil || len(written) != 0 {
			t.Fatalf("wrote %v, %v", written, err)
		}
		if after := snapshot(t, data); !maps.EqualFunc(after, before, bytes.Equal) {
			t.Error("the data changed")
		}
	})

	tests := []struct {
		name  string
		spoil func(t *testing.T, data string)
		step  DataStep
		has   []string
	}{
		{"a data file missing", func(t *testing.T, data string) {
			if err := os.Remove(filepath.Join(data, "nccl.yaml")); err != nil {
				t.Fatal(err)
			}
		}, DataRead, []string{"nccl.yaml", "no such file"}},
		{"a file the overlay cannot fold into", func(t *testing.T, data string) {
			p := filepath.Join(data, "torch.yaml")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, string(b)+"torhc: []\n")
		}, DataFold, []string{"torch.yaml", `unknown key "torhc"`}},
		{"the folded data does not load", func(t *testing.T, data string) {
			// A row twice in one file parses (Fold folds it) but does
			// not load; the set is loaded before anything is renamed,
			// and cuda.yaml, renamed first, stays as it was.
			p := filepath.Join(data, "nccl.yaml")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			head, tail, found := strings.Cut(string(b), "\nnccl:\n")
			if !found {
				t.Fatal("nccl.yaml has no nccl: list")
			}
			writeFile(t, p, head+"\nnccl:\n  - version: \"2.7.8\"\n    cuda: \"10.1\"\n    source: nccl-rn-2-7-8\n\n"+tail)
		}, DataCheck, []string{"the folded data does not load (a gpuimg bug; nothing was written): ", "NCCL 2.7.8 is listed twice in this file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, data := checkout(t, t.TempDir())
			tt.spoil(t, data)
			before := snapshot(t, data)
			written, err := WriteData(data, ov)
			if err == nil {
				t.Fatalf("wrote %v", written)
			}
			if step := dataStep(t, err); step != tt.step {
				t.Errorf("step %s, want %s: %v", step, tt.step, err)
			}
			for _, s := range tt.has {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q lacks %q", err, s)
				}
			}
			if len(written) != 0 {
				t.Errorf("replaced %v", written)
			}
			if after := snapshot(t, data); !maps.EqualFunc(after, before, bytes.Equal) {
				t.Errorf("the data changed or a temporary file was left: %v", slices.Sorted(maps.Keys(after)))
			}
		})
	}
}

// TestDataErrorMessages: each step's words, as the CLI shows them after
// "--write: ".
func TestDataErrorMessages(t *testing.T) {
	cause := errors.New("cause")
	tests := []struct {
		err  DataError
		want string
	}{
		{DataError{Step: DataFind, Path: "/tmp/x", Err: ErrNoCheckout}, "/tmp/x is not inside a gpuimg checkout (no go.mod of github.com/gpuimg/gpuimg with matrix/data/ above it)"},
		{DataError{Step: DataRead, Path: "/d/torch.yaml", Err: cause}, "cause"},
		{DataError{Step: DataLoad, Path: "/d", Err: cause}, "cause"},
		{DataError{Step: DataFold, Path: "/d", Err: cause}, "cause"},
		{DataError{Step: DataStage, Path: "/d/torch.yaml", Err: cause}, "write /d/torch.yaml: cause"},
		{DataError{Step: DataCheck, Path: "/d", Err: cause}, "the folded data does not load (a gpuimg bug; nothing was written): cause"},
		{DataError{Step: DataRename, Path: "/d/torch.yaml", Err: cause}, "cause"},
	}
	for _, tt := range tests {
		t.Run(string(tt.err.Step), func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if !errors.Is(&tt.err, tt.err.Err) {
				t.Error("the cause is not wrapped")
			}
		})
	}
}

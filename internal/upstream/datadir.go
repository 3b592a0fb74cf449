package upstream

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/matrix"
)

// The data directory is matrix/data/ of a gpuimg checkout: the files the
// binary embeds, which maintainers fold an overlay into (matrix update
// --write). FindData finds it, LoadData loads it and WriteData folds an
// overlay into it.

// Module is the module path of a gpuimg checkout's go.mod.
const Module = "github.com/gpuimg/gpuimg"

// ErrNoCheckout is the cause of FindData's error when no gpuimg checkout
// holds the directory.
var ErrNoCheckout = errors.New("not inside a gpuimg checkout")

// DataStep is the step of finding, loading or writing a data directory
// that failed (DataError.Step).
type DataStep string

// The steps, in the order they run.
const (
	// DataFind: no checkout with matrix/data/ above the directory.
	DataFind DataStep = "find"
	// DataRead: a data file, or the directory's listing, could not be read.
	DataRead DataStep = "read"
	// DataLoad: the data (with the extra matrix files) does not load.
	DataLoad DataStep = "load"
	// DataFold: the overlay could not be folded into a file's text.
	DataFold DataStep = "fold"
	// DataStage: a folded file's temporary copy could not be written.
	DataStage DataStep = "stage"
	// DataCheck: the folded files do not load; nothing was written.
	DataCheck DataStep = "check"
	// DataRename: a temporary copy could not replace its file.
	DataRename DataStep = "rename"
)

// DataError is the error of FindData, LoadData and WriteData: the step
// that failed, the directory or file it was about, and the cause.
type DataError struct {
	Step DataStep
	// Path is the directory FindData started from (DataFind), the data
	// directory (DataRead of its listing, DataLoad, DataFold, DataCheck)
	// or the file (DataRead, DataStage, DataRename).
	Path string
	Err  error
}

// Error says what went wrong in words; the causes that do not name their
// file (DataFind, DataStage) get the path.
func (e *DataError) Error() string {
	switch e.Step {
	case DataFind:
		return fmt.Sprintf("%s is not inside a gpuimg checkout (no go.mod of %s with matrix/data/ above it)", e.Path, Module)
	case DataStage:
		return fmt.Sprintf("write %s: %v", e.Path, e.Err)
	case DataCheck:
		return fmt.Sprintf("the folded data does not load (a gpuimg bug; nothing was written): %v", e.Err)
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *DataError) Unwrap() error { return e.Err }

// FindData walks up from dir to the gpuimg checkout holding it (a go.mod
// whose first line is "module github.com/gpuimg/gpuimg", with a
// matrix/data directory beside it) and returns that matrix/data. An inner
// module of the same name without matrix/data is passed over. The error
// is a *DataError of step DataFind wrapping ErrNoCheckout.
func FindData(dir string) (string, error) {
	for d := dir; ; {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if strings.TrimSpace(first) == "module "+Module {
				data := filepath.Join(d, "matrix", "data")
				if fi, err := os.Stat(data); err == nil && fi.IsDir() {
					return data, nil
				}
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", &DataError{Step: DataFind, Path: dir, Err: ErrNoCheckout}
		}
		d = parent
	}
}

// LoadData loads the matrix a run over the data directory dir compares
// upstream with: the built-in data, dir's *.yaml files over it (the binary
// may be older than the checkout), then files (--matrix-file). Errors are
// *DataError: DataRead when dir cannot be listed, DataLoad (matrix.Load's
// file:line error) when the files do not load.
func LoadData(dir string, files ...string) (*matrix.DB, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &DataError{Step: DataRead, Path: dir, Err: err}
	}
	var paths []string
	for _, e := range entries { // sorted by name
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	db, err := matrix.Load(append(paths, files...)...)
	if err != nil {
		return nil, &DataError{Step: DataLoad, Path: dir, Err: err}
	}
	return db, nil
}

// WriteData folds ov into the data directory dir (Fold over DataFiles)
// and returns the files it replaced, sorted. Every changed file is written
// to a temporary file beside it first, and the set is loaded as the matrix
// would load it; only then are they renamed into place, so a failure
// before the renames leaves the data as it was and no temporary file
// behind, and no file is ever half written. An empty overlay writes
// nothing. Errors are *DataError (DataRead, DataFold, DataStage,
// DataCheck, DataRename); after a DataRename error the returned files are
// those already replaced.
func WriteData(dir string, ov *Overlay) ([]string, error) {
	if ov.Empty() {
		return nil, nil
	}
	files := map[string][]byte{}
	for _, name := range DataFiles() {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, &DataError{Step: DataRead, Path: p, Err: err}
		}
		files[name] = b
	}
	folded, err := Fold(files, ov)
	if err != nil {
		return nil, &DataError{Step: DataFold, Path: dir, Err: err}
	}
	names := slices.Sorted(maps.Keys(folded))
	tmps := map[string]string{}
	defer func() {
		for _, t := range tmps {
			_ = os.Remove(t) // best effort: the error being returned matters more
		}
	}()
	var staged []string
	for _, name := range names {
		p := filepath.Join(dir, name)
		t, err := atomicfile.WriteTemp(p, folded[name])
		if err != nil {
			return nil, &DataError{Step: DataStage, Path: p, Err: err}
		}
		tmps[name] = t
		staged = append(staged, t)
	}
	if _, err := matrix.Load(staged...); err != nil {
		return nil, &DataError{Step: DataCheck, Path: dir, Err: err}
	}
	var written []string
	for _, name := range names {
		p := filepath.Join(dir, name)
		if err := os.Rename(tmps[name], p); err != nil {
			return written, &DataError{Step: DataRename, Path: p, Err: err}
		}
		delete(tmps, name)
		written = append(written, p)
	}
	return written, nil
}

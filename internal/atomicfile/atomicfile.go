// Package atomicfile writes files so that no reader ever sees half of
// one: through a temporary file beside the destination and a rename.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteTemp writes b (mode 0644, synced) to a new temporary file beside
// path, named ".NAME.tmp-*.tmp", and returns its name, for a caller that
// renames it (or a set of them) into place. On an error nothing is left.
func WriteTemp(path string, b []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*.tmp")
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// Write writes b to path through WriteTemp and a rename: path holds its
// old content or all of b. Errors name path.
func Write(path string, b []byte) error {
	tmp, err := WriteTemp(path, b)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

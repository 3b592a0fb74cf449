package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuimg/gpuimg/validate"
)

// maxCopyScan bounds what CheckCopy reads of one file: the secrets check
// looks at text and small files; a larger file is read up to here.
const maxCopyScan = 8 << 20

// CheckCopy runs the secrets check on every file under each --copy
// SRC[:DST] before anything is built: an error names each file that holds
// a secret and what (redacted), or a SRC that cannot be read.
func CheckCopy(specs []string) error {
	var errs []error
	for _, s := range specs {
		src, _, _ := strings.Cut(s, ":")
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := readHead(p)
			if err != nil {
				return err
			}
			if found := validate.FileSecrets(p, b); len(found) > 0 {
				errs = append(errs, fmt.Errorf("--copy %s: %s holds %s", s, p, strings.Join(found, ", ")))
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("--copy %s: %w", s, err))
		}
	}
	return errors.Join(errs...)
}

func readHead(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxCopyScan))
}

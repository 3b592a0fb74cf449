package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/validate"
)

// maxCopyScan bounds what CheckCopy reads of one file: the secrets check
// looks at text and small files; a larger file is read up to here.
const maxCopyScan = 8 << 20

// CopyPath is one --copy: Path, absolute in the captured environment,
// carried to Dst in the image (Path when not given).
type CopyPath struct {
	Path, Dst string
}

// ParseCopyPaths reads --copy's PATH[:DST] values: both absolute, clean,
// without "..". The errors quote the value and say how to write it.
func ParseCopyPaths(specs []string) ([]CopyPath, error) {
	out := make([]CopyPath, 0, len(specs))
	for _, s := range specs {
		p, dst, _ := strings.Cut(s, ":")
		if dst == "" {
			dst = p
		}
		for _, x := range []string{p, dst} {
			if !path.IsAbs(x) || slices.Contains(strings.Split(x, "/"), "..") || x == "/" {
				return nil, fmt.Errorf("--copy %q: want PATH or PATH:DST, each an absolute path below / without \"..\" (PATH in the captured environment, DST in the image)", s)
			}
		}
		out = append(out, CopyPath{Path: path.Clean(p), Dst: path.Clean(dst)})
	}
	return out, nil
}

// rel is c.Path relative to the environment's root, as fs.FS names it.
func (c CopyPath) rel() string { return strings.TrimPrefix(c.Path, "/") }

// CheckCopy runs the secrets check on every file under each --copy path
// of the environment fsys (its root) before anything is staged: an error
// names each file that holds a secret and what (redacted), or a path that
// cannot be read.
func CheckCopy(fsys fs.FS, copies []CopyPath) error {
	var errs []error
	for _, c := range copies {
		err := fs.WalkDir(fsys, c.rel(), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := readHead(fsys, p)
			if err != nil {
				return err
			}
			if found := validate.FileSecrets("/"+p, b); len(found) > 0 {
				errs = append(errs, fmt.Errorf("--copy %s: /%s holds %s", c.Path, p, strings.Join(found, ", ")))
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("--copy %s: %w", c.Path, err))
		}
	}
	return errors.Join(errs...)
}

func readHead(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxCopyScan))
}

// Stage copies each --copy path of the environment fsys into dir (which
// exists, empty) as dir/PATH: regular files with their mode, directories
// and symbolic links as they are. It returns the copy: entries of the
// spec, relative to dir's parent (the build's context): NAME/PATH:DST,
// NAME being dir's base name.
func Stage(fsys fs.FS, copies []CopyPath, dir string) ([]string, error) {
	var specs []string
	for _, c := range copies {
		err := fs.WalkDir(fsys, c.rel(), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return stageOne(fsys, p, d, filepath.Join(dir, filepath.FromSlash(p)))
		})
		if err != nil {
			return nil, fmt.Errorf("--copy %s: stage it in %s: %w", c.Path, dir, err)
		}
		specs = append(specs, filepath.Base(dir)+c.Path+":"+c.Dst)
	}
	return specs, nil
}

func stageOne(fsys fs.FS, p string, d fs.DirEntry, dst string) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case d.IsDir():
		return os.MkdirAll(dst, info.Mode().Perm()|0o700)
	case d.Type()&fs.ModeSymlink != 0:
		target, err := fs.ReadLink(fsys, p)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case !d.Type().IsRegular():
		return nil // devices, sockets and pipes are not carried
	}
	in, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copied says whether p is one of the copied paths or below one.
func copied(p string, paths []string) bool {
	for _, c := range paths {
		if p == c || strings.HasPrefix(p, strings.TrimSuffix(c, "/")+"/") {
			return true
		}
	}
	return false
}

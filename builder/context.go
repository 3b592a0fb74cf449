package builder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideContext is wrapped when a --copy source leaves the context
// directory through a symbolic link.
var ErrOutsideContext = errors.New("points outside the context directory")

// checkCopySources checks that every --copy source exists and stays inside
// ctxDir: neither the source, nor a directory on its way, nor any symbolic
// link below it points outside. BuildKit would copy such a link as it is
// (dangling in the image) or, for a top-level source, follow it; either
// way the image would not hold what the context holds, so it is refused.
func checkCopySources(ctxDir string, copies []string) error {
	if len(copies) == 0 {
		return nil
	}
	root, err := filepath.Abs(ctxDir)
	if err != nil {
		return fmt.Errorf("context directory %s: %w", ctxDir, err)
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return fmt.Errorf("context directory %s: %w", ctxDir, err)
	}
	for _, cp := range copies {
		spec, err := ParseCopySpec(cp)
		if err != nil {
			return err
		}
		src := spec.Src
		p := filepath.Join(root, src)
		if _, err := os.Lstat(p); err != nil {
			return fmt.Errorf("copy %s: %w", cp, err)
		}
		// The directories on the way (src = "link/file").
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return fmt.Errorf("copy %s: %w", cp, err)
		}
		if !within(root, dir) {
			return fmt.Errorf("copy %s: %s %w (%s); copy what it points to into the context instead", cp, filepath.Dir(src), ErrOutsideContext, dir)
		}
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			target, err := os.Readlink(q)
			if err != nil {
				return err
			}
			dest := target
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(filepath.Dir(q), dest)
			}
			if real, err := filepath.EvalSymlinks(q); err == nil {
				dest = real // follows chains of links
			}
			if !within(root, filepath.Clean(dest)) {
				rel, _ := filepath.Rel(root, q)
				return fmt.Errorf("symbolic link %s -> %s %w; replace the link with the file, or copy what it points to into the context", rel, target, ErrOutsideContext)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("copy %s: %w", cp, err)
		}
	}
	return nil
}

// within says whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

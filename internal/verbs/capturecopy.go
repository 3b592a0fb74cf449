package verbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuimg/gpuimg/validate/capture"
)

// CaptureCopy is capture's --copy: paths of the captured environment
// carried into the build as a layer of their own.
type CaptureCopy struct {
	// Paths are PATH or PATH:DST (capture.ParseCopyPaths).
	Paths []string
	// File is the capture file. The paths are staged beside it, in
	// NAME.files (NAME: File's name less its extension), the build's
	// context: gpuimg build -f FILE --context DIR, DIR being File's
	// directory.
	File string
}

// StageDir is where the files of a capture file's --copy are staged.
func StageDir(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".files"
}

// Staged are --copy's files, in a temporary directory beside the capture
// file until Commit puts them in place; nil when nothing was copied.
type Staged struct {
	tmp, dir string
}

// Commit replaces the staging directory's former content, if any, with
// this capture's.
func (s *Staged) Commit() error {
	if s == nil {
		return nil
	}
	old := s.tmp + ".old"
	if err := os.Rename(s.dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.Discard()
		return fmt.Errorf("replace %s: %w", s.dir, err)
	}
	if err := os.Rename(s.tmp, s.dir); err != nil {
		s.Discard()
		return fmt.Errorf("put the copied files in %s: %w", s.dir, err)
	}
	return os.RemoveAll(old)
}

// Discard removes what was staged.
func (s *Staged) Discard() {
	if s != nil {
		_ = os.RemoveAll(s.tmp)
	}
}

// stage checks --copy's paths (parsed, readable, no secret in them) and
// copies them into a temporary directory beside cp.File; opt gets the
// spec's copy: entries. Nothing is written when a check fails.
func stage(ctx context.Context, e Environment, cp CaptureCopy, opt *capture.Options) (*Staged, error) {
	if len(cp.Paths) == 0 {
		return nil, nil
	}
	copies, err := capture.ParseCopyPaths(cp.Paths)
	if err != nil {
		return nil, err
	}
	if cp.File == "" {
		return nil, errors.New("--copy stages the files beside the capture file: give --file")
	}
	root, err := environmentRoot(ctx, e)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	defer r.Close()
	fsys := r.FS()
	if err := capture.CheckCopy(fsys, copies); err != nil {
		return nil, fmt.Errorf("%w: leave the file out of --copy, or remove the secret and pass it at run time", err)
	}
	dir := StageDir(cp.File)
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+"-")
	if err != nil {
		return nil, fmt.Errorf("stage --copy beside %s: %w", cp.File, err)
	}
	s := &Staged{tmp: tmp, dir: dir}
	specs, err := capture.Stage(fsys, copies, tmp)
	if err != nil {
		s.Discard()
		return nil, err
	}
	// The entries name the final directory, not the temporary one.
	for i, sp := range specs {
		specs[i] = filepath.Base(dir) + strings.TrimPrefix(sp, filepath.Base(tmp))
	}
	opt.Copy = specs
	for _, c := range copies {
		opt.Copied = append(opt.Copied, c.Path)
	}
	return s, nil
}

// environmentRoot is the directory tree of e: this machine's /, dir:'s
// directory or a running container's root file system. An image has
// none: --copy reads files from a tree.
func environmentRoot(ctx context.Context, e Environment) (string, error) {
	switch e.Kind() {
	case "host":
		return "/", nil
	case "dir":
		return strings.TrimPrefix(e.Source, "dir:"), nil
	case "container":
		root, _, err := containerRoot(ctx, strings.TrimPrefix(e.Source, "container:"))
		return root, err
	}
	return "", fmt.Errorf("--copy reads files from a tree, and %s is an image: capture it from a container of it (container:NAME) or its unpacked root (dir:PATH)", e.Source)
}

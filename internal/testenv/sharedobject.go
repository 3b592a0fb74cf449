package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// ErrNoCC is wrapped when no C compiler is found and none can be
// installed (not root): tests that build ELF files skip on it.
var ErrNoCC = errors.New("no C compiler")

// ELFSpec is the dynamic section of a tiny ELF shared object.
type ELFSpec struct {
	// Soname is DT_SONAME (none if empty).
	Soname string
	// Needed are the DT_NEEDED names, in order.
	Needed []string
	// SearchPath is the colon-separated list written as DT_RPATH, or as
	// DT_RUNPATH when RunPath is set; none if empty.
	SearchPath string
	RunPath    bool
	// Executable builds an executable (ET_EXEC/PIE) instead.
	Executable bool
}

// CC returns gcc's path, installing Debian's gcc when it is missing and
// the test runs as root; otherwise the error wraps ErrNoCC.
func CC(ctx context.Context) (string, error) {
	if p, err := exec.LookPath("gcc"); err == nil {
		return p, nil
	}
	if err := EnsurePackages(ctx, "gcc"); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoCC, err)
	}
	return exec.LookPath("gcc")
}

// SharedObject compiles a shared object of a few KB with gcc whose
// dynamic section is spec (real linker output, as ld.so and readelf see
// it) and returns its bytes. It links with -nostdlib, so it needs no
// library beyond spec.Needed; each of those is linked from a stub built
// in dir with that soname.
func SharedObject(ctx context.Context, dir string, spec ELFSpec) ([]byte, error) {
	cc, err := CC(ctx)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(dir, "so-")
	if err != nil {
		return nil, err
	}
	src := filepath.Join(work, "f.c")
	if err := os.WriteFile(src, []byte("int gpuimg_fixture(void) { return 42; }\nvoid _start(void) {}\n"), 0o644); err != nil {
		return nil, err
	}
	gcc := func(args ...string) error {
		out, err := exec.CommandContext(ctx, cc, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("gcc %v: %w\n%s", args, err, out)
		}
		return nil
	}
	args := []string{"-nostdlib", "-o", filepath.Join(work, "out"), src, "-Wl,--no-as-needed"}
	if spec.Executable {
		args = append(args, "-no-pie")
	} else {
		args = append(args, "-shared", "-fPIC")
	}
	if spec.Soname != "" {
		args = append(args, "-Wl,-soname,"+spec.Soname)
	}
	if spec.SearchPath != "" {
		tags := "-Wl,--disable-new-dtags"
		if spec.RunPath {
			tags = "-Wl,--enable-new-dtags"
		}
		args = append(args, tags, "-Wl,-rpath,"+spec.SearchPath)
	}
	for i, n := range spec.Needed {
		stub := filepath.Join(work, "stub"+strconv.Itoa(i), n)
		if err := os.MkdirAll(filepath.Dir(stub), 0o755); err != nil {
			return nil, err
		}
		if err := gcc("-nostdlib", "-shared", "-fPIC", "-o", stub, src, "-Wl,-soname,"+n); err != nil {
			return nil, err
		}
		args = append(args, stub)
	}
	if err := gcc(args...); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(work, "out"))
}

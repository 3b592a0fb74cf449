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
	// Source is the C source compiled (empty: one function and _start);
	// CFlags are added to the compile (-I for headers). Symbols the
	// source uses and does not define stay undefined, for the loader to
	// bind from the process (Python's C API in an extension module) or
	// from Needed.
	Source string
	CFlags []string
	// Size pads the file to at least Size bytes with a non-allocated
	// section of incompressible bytes (.gpuimg.pad, seeded by Soname):
	// the library keeps the size of the one it stands for and still loads.
	Size int
	// Fill is what the padding holds (Incompressible by default).
	Fill Fill
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
	// Relative names, run in work: the objects do not carry the
	// temporary directory's name, so the same spec gives the same bytes.
	const stubSrc = "f.c"
	if err := os.WriteFile(filepath.Join(work, stubSrc), []byte("int gpuimg_fixture(void) { return 42; }\nvoid _start(void) {}\n"), 0o644); err != nil {
		return nil, err
	}
	src := stubSrc
	if spec.Source != "" {
		src = "src.c"
		if err := os.WriteFile(filepath.Join(work, src), []byte(spec.Source), 0o644); err != nil {
			return nil, err
		}
	}
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %v: %w\n%s", filepath.Base(name), args, err, out)
		}
		return nil
	}
	gcc := func(args ...string) error { return run(cc, args...) }
	// -z noseparate-code: one page-aligned segment less, a 5 KB object
	// rather than 13 KB.
	args := append([]string{"-nostdlib", "-o", "out", src, "-Wl,--no-as-needed", "-Wl,-z,noseparate-code"}, spec.CFlags...)
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
		stub := filepath.Join("stub"+strconv.Itoa(i), n)
		if err := os.MkdirAll(filepath.Join(work, filepath.Dir(stub)), 0o755); err != nil {
			return nil, err
		}
		if err := gcc("-nostdlib", "-shared", "-fPIC", "-o", stub, stubSrc, "-Wl,-soname,"+n); err != nil {
			return nil, err
		}
		args = append(args, stub)
	}
	if err := gcc(args...); err != nil {
		return nil, err
	}
	out := filepath.Join(work, "out")
	if fi, err := os.Stat(out); err != nil {
		return nil, err
	} else if pad := int64(spec.Size) - fi.Size(); pad > 0 {
		// The section header table grows by one entry and the name by
		// a few bytes; the file ends up a little over Size.
		if err := os.WriteFile(filepath.Join(work, "pad"), []byte(spec.Fill.bytes("pad:"+spec.Soname, int(pad))), 0o644); err != nil {
			return nil, err
		}
		objcopy, err := exec.LookPath("objcopy")
		if err != nil {
			return nil, fmt.Errorf("padding %s: objcopy (binutils) not on PATH: %w", spec.Soname, err)
		}
		if err := run(objcopy, "--add-section", ".gpuimg.pad=pad", "--set-section-flags", ".gpuimg.pad=readonly", "out"); err != nil {
			return nil, err
		}
	}
	return os.ReadFile(out)
}

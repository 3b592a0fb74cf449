package main

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// startTrace is what the start command read, traced with strace around
// runc in a container on containerd.
type startTrace struct {
	// Prioritized are the image files the start opened, in the order of
	// first use, relative to / (eStargz prefetch landmarks).
	Prioritized []string
	// OpenedBytes is the size of those files; ReadBytes what was read of
	// them (read, pread64, and mmap lengths, each file capped at its size).
	OpenedBytes, ReadBytes int64
	// ImageBytes is the image's files, uncompressed; Pulled its layers,
	// compressed (a full pull).
	ImageBytes, Pulled int64
	Syscalls           int
}

// The strace lines the trace needs (strace -f -y: each fd carries its path).
var (
	reExec = regexp.MustCompile(`^\d+\s+execve\("([^"]*)".* = 0$`)
	reOpen = regexp.MustCompile(`^\d+\s+open(?:at)?\(.*\) = \d+<([^>]*)>$`)
	reRead = regexp.MustCompile(`^\d+\s+p?read(?:64)?\(\d+<([^>]*)>, .*\) = (\d+)$`)
	reMmap = regexp.MustCompile(`^\d+\s+mmap\([^,]*, (\d+), [^,]*, [^,]*, \d+<([^>]*)>, [^)]*\) = `)
)

// traceStart runs the start command of ref in a container on a fresh
// containerd whose shim finds a runc wrapped by strace (-f, from runc create on, so the
// container's first process is traced from its execve), and measures what
// it opened and read against the image's files.
func traceStart(ctx context.Context, dir, ref string, o options) (*startTrace, error) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return nil, fmt.Errorf("find runc: %w", err)
	}
	if err := testenv.EnsurePackages(ctx, "strace"); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "start.strace")
	wrapDir := filepath.Join(dir, "runc-strace")
	if err := os.MkdirAll(wrapDir, 0o755); err != nil {
		return nil, err
	}
	wrapper := filepath.Join(wrapDir, "runc")
	// strace -D detaches from runc create, which the shim waits for; it
	// keeps tracing runc init and, after its execve, the start command.
	script := fmt.Sprintf("#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = create ]; then exec strace -D -f -qq -y -s 0 -e trace=open,openat,execve,read,pread64,mmap -o %s %s \"$@\"; fi\ndone\nexec %s \"$@\"\n", out, runc, runc)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return nil, err
	}
	c, err := testenv.StartContainerd(ctx, filepath.Join(dir, "ctd-trace"), testenv.ContainerdOptions{MaxConcurrentDownloads: o.downloads, PathPrefix: wrapDir})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if _, err := c.Run(ctx, "images", "pull", "--plain-http", ref); err != nil {
		return nil, err
	}
	if _, err := c.Run(ctx, append([]string{"run", "--rm", ref, "trace"}, startCommand...)...); err != nil {
		return nil, err
	}
	if err := waitStable(ctx, out); err != nil {
		return nil, err
	}
	files, err := imageFiles(ctx, ref)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := parseTrace(f, files)
	if err != nil {
		return nil, err
	}
	for _, fi := range files {
		if fi.size > 0 {
			t.ImageBytes += fi.size
		}
	}
	if t.Pulled, err = imageSize(ctx, ref); err != nil {
		return nil, err
	}
	if o.keep != "" {
		if err := os.MkdirAll(o.keep, 0o755); err == nil {
			b, _ := os.ReadFile(out)
			_ = os.WriteFile(filepath.Join(o.keep, "start.strace"), b, 0o644)
		}
	}
	return t, nil
}

// waitStable waits until the trace file stops growing (strace runs
// detached and ends after the container's last process).
func waitStable(ctx context.Context, p string) error {
	var last int64 = -1
	for range 100 {
		st, err := os.Stat(p)
		if err == nil && st.Size() > 0 && st.Size() == last {
			return nil
		}
		if err == nil {
			last = st.Size()
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("the start trace %s did not appear or kept growing", p)
}

// imageFile is a path in an image: a regular file's size, or a symlink.
type imageFile struct {
	size int64
	link string
}

// imageFiles lists the files of ref's layers (later layers win; whiteouts
// remove).
func imageFiles(ctx context.Context, ref string) (map[string]imageFile, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(r, remote.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	files := map[string]imageFile{}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		err = func() error {
			defer rc.Close()
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				p := "/" + strings.TrimPrefix(path.Clean("/"+h.Name), "/")
				base := path.Base(p)
				if victim, ok := strings.CutPrefix(base, ".wh."); ok {
					delete(files, path.Join(path.Dir(p), victim))
					continue
				}
				switch h.Typeflag {
				case tar.TypeReg:
					files[p] = imageFile{size: h.Size}
				case tar.TypeSymlink:
					files[p] = imageFile{link: h.Linkname, size: -1}
				}
			}
		}()
		if err != nil {
			return nil, fmt.Errorf("read layer %d of %s: %w", i, ref, err)
		}
	}
	return files, nil
}

// resolve follows symlinks (in the final path component and its parents)
// through the image's files.
func resolve(files map[string]imageFile, p string) (string, bool) {
	for range 16 {
		if f, ok := files[p]; ok {
			if f.link == "" {
				return p, true
			}
			if strings.HasPrefix(f.link, "/") {
				p = path.Clean(f.link)
			} else {
				p = path.Join(path.Dir(p), f.link)
			}
			continue
		}
		// A parent may be a symlink (/lib → usr/lib).
		found := false
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			if f, ok := files[d]; ok && f.link != "" {
				t := f.link
				if !strings.HasPrefix(t, "/") {
					t = path.Join(path.Dir(d), t)
				}
				p = path.Join(t, strings.TrimPrefix(p, d))
				found = true
				break
			}
		}
		if !found {
			return "", false
		}
	}
	return "", false
}

// parseTrace reads strace output from the start command's execve on
// (before it, the lines are runc's) and sums what it opened and read of
// the image's files.
func parseTrace(r io.Reader, files map[string]imageFile) (*startTrace, error) {
	t := &startTrace{}
	started := false
	seen := map[string]bool{}
	read := map[string]int64{}
	use := func(p string) (string, bool) {
		rp, ok := resolve(files, p)
		if !ok {
			return "", false
		}
		if !seen[rp] {
			seen[rp] = true
			t.Prioritized = append(t.Prioritized, strings.TrimPrefix(rp, "/"))
			t.OpenedBytes += files[rp].size
		}
		return rp, true
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := reExec.FindStringSubmatch(line); m != nil {
			if !started && !strings.Contains(m[1], "runc") && m[1] != "/proc/self/exe" {
				started = true
			}
			if started {
				use(m[1])
				t.Syscalls++
			}
			continue
		}
		if !started {
			continue
		}
		t.Syscalls++
		if m := reOpen.FindStringSubmatch(line); m != nil {
			use(m[1])
		} else if m := reRead.FindStringSubmatch(line); m != nil {
			if rp, ok := use(m[1]); ok {
				n, _ := strconv.ParseInt(m[2], 10, 64)
				read[rp] += n
			}
		} else if m := reMmap.FindStringSubmatch(line); m != nil {
			if rp, ok := use(m[2]); ok {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				read[rp] += n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !started {
		return nil, fmt.Errorf("the trace has no execve of the start command")
	}
	for p, n := range read {
		t.ReadBytes += min(n, files[p].size)
	}
	return t, nil
}

package verbs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/validate/capture"
)

// Environment is something capture and diff read: this machine ("" or
// "/"), dir:PATH, container:NAME or an image reference in any transport
// images.Open reads.
type Environment struct {
	// Source is as the user wrote it.
	Source string
	// HostEnv is this machine's environment (KEY=VALUE), the caller's
	// snapshot; used only when Source is this machine.
	HostEnv []string
	// Tree bounds and reports the read of a directory tree (this machine,
	// dir:, a container's root); unused for an image.
	Tree capture.TreeOptions
}

// Kind names what an Environment's Source is.
func (e Environment) Kind() string {
	switch {
	case e.Source == "" || e.Source == "/" || e.Source == ".":
		return "host"
	case strings.HasPrefix(e.Source, "dir:"):
		return "dir"
	case strings.HasPrefix(e.Source, "container:"):
		return "container"
	}
	return "image"
}

// OpenEnvironment opens e as an image: a directory tree (this machine,
// dir:, a container's root file system, read through its runtime's
// inspect) streamed as one layer, or the image itself. close releases
// what Open made.
func OpenEnvironment(ctx context.Context, e Environment, opts ...images.Option) (img v1.Image, closeFn func() error, err error) {
	nop := func() error { return nil }
	switch e.Kind() {
	case "host":
		img, err = capture.DirImage(ctx, "/", e.HostEnv, e.Tree)
		return img, nop, err
	case "dir":
		img, err = capture.DirImage(ctx, strings.TrimPrefix(e.Source, "dir:"), nil, e.Tree)
		return img, nop, err
	case "container":
		root, env, err := containerRoot(ctx, strings.TrimPrefix(e.Source, "container:"))
		if err != nil {
			return nil, nil, err
		}
		img, err = capture.DirImage(ctx, root, env, e.Tree)
		return img, nop, err
	}
	ref, err := images.ParseRef(e.Source)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: give nothing (this machine), dir:PATH, container:NAME or an image reference", err)
	}
	o, err := images.Open(ctx, ref, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", ref, err)
	}
	return o.Image, o.Close, nil
}

// containerRoot is a running container's root file system and
// environment, from docker inspect, else podman inspect: overlay
// storage's merged directory, else /proc/PID/root of its first process
// (any storage driver; needs the rights to read it, as root has).
func containerRoot(ctx context.Context, name string) (string, []string, error) {
	var errs []error
	for _, engine := range []string{"docker", "podman"} {
		out, err := exec.CommandContext(ctx, engine, "inspect", "--type", "container", name).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s inspect %s: %w", engine, name, err))
			continue
		}
		var got []struct {
			GraphDriver struct {
				Data map[string]string
			}
			State struct {
				Pid     int
				Running bool
			}
			Config struct {
				Env []string
			}
		}
		if err := json.Unmarshal(out, &got); err != nil || len(got) == 0 {
			errs = append(errs, fmt.Errorf("%s inspect %s: unreadable answer", engine, name))
			continue
		}
		c := got[0]
		if dir := c.GraphDriver.Data["MergedDir"]; dir != "" && c.State.Running {
			return dir, c.Config.Env, nil
		}
		// Any storage driver: the root its first process sees.
		if c.State.Running && c.State.Pid > 0 {
			return fmt.Sprintf("/proc/%d/root", c.State.Pid), c.Config.Env, nil
		}
		errs = append(errs, fmt.Errorf("%s inspect %s: the container is not running", engine, name))
	}
	return "", nil, fmt.Errorf("container %s: %w: start it, or capture its image", name, errors.Join(errs...))
}

// Capture reads the environment e and writes the gpuimg.yaml that
// rebuilds it (capture.Capture); opt.Source defaults to e.Source. With
// --copy paths (cp), it runs the secrets check on them, then stages them
// beside cp.File: the caller Commits the Staged once the capture file is
// written (or Discards it), so nothing is half-written.
func Capture(ctx context.Context, e Environment, opt capture.Options, cp CaptureCopy, opts ...images.Option) (*capture.Result, *Staged, error) {
	staged, err := stage(ctx, e, cp, &opt)
	if err != nil {
		return nil, nil, &Error{Step: Opening, Err: err}
	}
	r, err := captureEnvironment(ctx, e, opt, opts...)
	if err != nil {
		staged.Discard()
		return nil, nil, err
	}
	return r, staged, nil
}

func captureEnvironment(ctx context.Context, e Environment, opt capture.Options, opts ...images.Option) (*capture.Result, error) {
	img, closeFn, err := OpenEnvironment(ctx, e, opts...)
	if err != nil {
		return nil, &Error{Step: Opening, Err: err}
	}
	defer func() { _ = closeFn() }()
	if opt.Source == "" {
		opt.Source = e.Source
		if e.Kind() == "host" {
			opt.Source = "/"
		}
	}
	r, err := capture.Capture(ctx, img, opt)
	if err != nil {
		return nil, &Error{Step: Inspecting, Err: err}
	}
	return r, nil
}

// CaptureFile says whether source names a capture file (a .yaml, .yml or
// .json file that exists) rather than an image reference.
func CaptureFile(source string) bool {
	ext := strings.ToLower(filepath.Ext(source))
	if ext != ".yaml" && ext != ".yml" && ext != ".json" {
		return false
	}
	st, err := os.Stat(source)
	return err == nil && st.Mode().IsRegular()
}

// Facts reads an environment's facts: a capture file's (CaptureFile),
// else the environment's own (capture.Collect).
func Facts(ctx context.Context, e Environment, opt capture.CollectOptions, opts ...images.Option) (*capture.Facts, error) {
	if CaptureFile(e.Source) {
		b, err := bound.ReadFile(e.Source, "", bound.MaxUserFile)
		if err != nil {
			return nil, &Error{Step: Opening, Err: fmt.Errorf("read capture file: %w", err)}
		}
		f, err := capture.ReadFile(e.Source, b)
		if err != nil {
			return nil, &Error{Step: Reading, Err: err}
		}
		return f, nil
	}
	img, closeFn, err := OpenEnvironment(ctx, e, opts...)
	if err != nil {
		return nil, &Error{Step: Opening, Err: err}
	}
	defer func() { _ = closeFn() }()
	if opt.Name == "" {
		opt.Name = e.Source
	}
	f, _, err := capture.Collect(ctx, img, opt)
	if err != nil {
		return nil, &Error{Step: Inspecting, Err: err}
	}
	return f, nil
}

// Diff reads two environments (each a capture file, an image, dir:,
// container: or this machine) and compares them (capture.Diff).
func Diff(ctx context.Context, a, b Environment, opt capture.CollectOptions, diff capture.DiffOptions, opts ...images.Option) (*capture.Delta, error) {
	opt.Files = diff.Files
	fa, err := Facts(ctx, a, opt, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Source, err)
	}
	fb, err := Facts(ctx, b, opt, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	d := capture.Diff(fa, fb, diff)
	d.A, d.B = a.Source, b.Source
	return d, nil
}

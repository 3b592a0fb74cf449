// Command capture times `gpuimg capture` and `gpuimg diff` on the Debian
// bookworm root file system the tests build, with a venv of -dists Python
// distributions laid over it as pip leaves them (dist-info METADATA and
// INSTALLER): the capture of a directory (hashed once, walked twice),
// its JSON form, the diff of the tree with itself and with its own
// capture file. Each figure is the median of -runs runs.
//
// With -roundtrip (the default), it then times the restore on the test
// environment (testenv.Start: buildkitd, registry, index, apt repository
// on loopback): the hand-built environment of the tests
// (testenv.HandBuiltRoot, with the torch 2.6.0 cu124 twin's wheels
// unpacked into its venv) captured with --copy, built with gpuimg build -f
// and pushed (cold, then again with BuildKit's cache), and diffed with
// its source; once each.
//
// Run it with `make bench-capture` (root, Debian 12).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	dists := flag.Int("dists", 300, "Python distributions in the venv")
	runs := flag.Int("runs", 3, "runs of each command")
	roundTrip := flag.Bool("roundtrip", true, "also time capture → build → diff on the test environment")
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *dists, *runs, *gpuimg)
	if err == nil && *roundTrip {
		err = roundtrip(ctx, *gpuimg)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dists, runs int, gpuimg string) error {
	tarball, err := testenv.BaseRootfs(ctx)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "bench-capture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	root := filepath.Join(work, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "tar", "-xf", tarball, "-C", root, "--exclude=./dev/*").CombinedOutput(); err != nil {
		return fmt.Errorf("unpack %s: %w: %s", tarball, err, out)
	}
	if err := venv(root, dists); err != nil {
		return err
	}
	file := filepath.Join(work, "env.yaml")
	steps := []struct {
		name string
		args []string
	}{
		{"capture dir: (yaml)", []string{"capture", "dir:" + root, "--file", file}},
		{"capture dir: -o json", []string{"capture", "dir:" + root, "-o", "json", "--file", filepath.Join(work, "env.json")}},
		{"diff dir: dir: (same tree)", []string{"diff", "dir:" + root, "dir:" + root}},
		{"diff env.yaml dir:", []string{"diff", file, "dir:" + root}},
	}
	fmt.Printf("Debian bookworm root (%s) + %d distributions, median of %d runs\n", filepath.Base(tarball), dists, runs)
	for _, s := range steps {
		var times []time.Duration
		for range runs {
			start := time.Now()
			if out, err := exec.CommandContext(ctx, gpuimg, s.args...).CombinedOutput(); err != nil {
				return fmt.Errorf("gpuimg %v: %w: %s", s.args, err, out)
			}
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		fmt.Printf("%-28s %8.2fs\n", s.name, times[len(times)/2].Seconds())
	}
	return nil
}

// venv writes n distributions' dist-info into a venv under /opt/venv.
func venv(root string, n int) error {
	site := filepath.Join(root, "opt/venv/lib/python3.11/site-packages")
	if err := os.MkdirAll(site, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "opt/venv/pyvenv.cfg"), []byte("version = 3.11.2\n"), 0o644); err != nil {
		return err
	}
	for i := range n {
		info := filepath.Join(site, fmt.Sprintf("pkg%d-1.%d.0.dist-info", i, i))
		if err := os.MkdirAll(info, 0o755); err != nil {
			return err
		}
		md := fmt.Sprintf("Metadata-Version: 2.1\nName: pkg%d\nVersion: 1.%d.0\n", i, i)
		if err := os.WriteFile(filepath.Join(info, "METADATA"), []byte(md), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(info, "INSTALLER"), []byte("pip\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// roundtrip times capture → build → diff of the hand-built environment
// on the test environment.
func roundtrip(ctx context.Context, gpuimg string) error {
	dir, err := os.MkdirTemp("/tmp", "bcr-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env, err := testenv.Start(ctx, dir)
	defer func() { _ = env.Stop(context.WithoutCancel(ctx)) }()
	if err != nil {
		return err
	}
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := testenv.HandBuiltRoot(ctx, root); err != nil {
		return err
	}
	if _, err := env.PushBase(ctx, "nvidia/cuda:12.4.1-base-ubuntu22.04"); err != nil {
		return err
	}
	if err := testenv.LayeredStackWheels(ctx, env.WheelDir, "2.6.0", "0.21.0", "2.6.0", "12.4", []string{"3.11"}, 1e-3); err != nil {
		return err
	}
	for _, d := range testenv.HandBuiltExtras() {
		if _, err := testenv.Wheel(env.WheelDir, d.Name, d.Version, "py3-none-any", map[string]string{d.Name + "/__init__.py": ""}); err != nil {
			return err
		}
	}
	if err := testenv.UnpackWheels(env.WheelDir, filepath.Join(root, testenv.HandBuiltSite)); err != nil {
		return err
	}
	work := filepath.Join(dir, "ctx")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	file := filepath.Join(work, "env.yaml")
	ref := env.Registry.Host + "/bench/restored:1"
	build := []string{"build", "-f", file, "--context", work, "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(), "-t", ref, "--push", "--progress", "plain"}
	steps := []struct {
		name string
		args []string
		code int
	}{
		{"capture --copy", []string{"capture", "dir:" + root, "--matrix-file", env.MatrixFile, "--copy", "/opt/tools/run.sh", "--file", file}, 0},
		{"build -f --push (cold)", build, 0},
		{"build -f --push (cached)", build, 0},
		{"diff env.yaml REF", []string{"diff", file, ref, "--matrix-file", env.MatrixFile}, 0},
		{"diff dir: REF --files", []string{"diff", "dir:" + root, ref, "--files", "--matrix-file", env.MatrixFile}, 1},
	}
	fmt.Printf("\nround trip: the hand-built environment on the test environment, once each\n")
	var total time.Duration
	for _, s := range steps {
		start := time.Now()
		out, err := exec.CommandContext(ctx, gpuimg, s.args...).CombinedOutput()
		took := time.Since(start)
		if code := exitCode(err); code != s.code {
			return fmt.Errorf("gpuimg %v: exit %d, want %d: %s", s.args, code, s.code, out)
		}
		if s.name != "build -f --push (cached)" {
			total += took
		}
		fmt.Printf("%-28s %8.2fs\n", s.name, took.Seconds())
	}
	fmt.Printf("%-28s %8.2fs\n", "capture → cold build → diffs", total.Seconds())
	return sizes(ctx, root, file, ref)
}

// sizes prints what a restore carries: the source tree (what a disk
// snapshot or docker commit keeps, less the base), the capture file with
// its staged --copy files, and the image's compressed layers.
func sizes(ctx context.Context, root, file, ref string) error {
	du := func(p string) (int64, error) {
		out, err := exec.CommandContext(ctx, "du", "-sb", p).Output()
		if err != nil {
			return 0, fmt.Errorf("du %s: %w", p, err)
		}
		var n int64
		_, err = fmt.Sscan(string(out), &n)
		return n, err
	}
	tree, err := du(root)
	if err != nil {
		return err
	}
	capFile, err := du(file)
	if err != nil {
		return err
	}
	staged, err := du(strings.TrimSuffix(file, ".yaml") + ".files")
	if err != nil {
		return err
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	img, err := remote.Image(r, remote.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("read %s: %w", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	var layers int64
	for _, l := range m.Layers {
		layers += l.Size
	}
	fmt.Printf("%-28s %10d bytes\n%-28s %10d bytes (+ %d staged by --copy)\n%-28s %10d bytes in %d layers\n",
		"source tree", tree, "capture file", capFile, staged, "image (compressed)", layers, len(m.Layers))
	return nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

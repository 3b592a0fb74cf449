// Command capture times `gpuimg capture` and `gpuimg diff` on the Debian
// bookworm root file system the tests build, with a venv of -dists Python
// distributions laid over it as pip leaves them (dist-info METADATA and
// INSTALLER): the capture of a directory (hashed once, walked twice),
// its JSON form, the diff of the tree with itself and with its own
// capture file. Each figure is the median of -runs runs.
//
// Run it with `make bench-capture` (root, Debian 12).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	dists := flag.Int("dists", 300, "Python distributions in the venv")
	runs := flag.Int("runs", 3, "runs of each command")
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *dists, *runs, *gpuimg)
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

// Command copy compares `gpuimg images copy` with `crane copy` and
// `skopeo copy` on the same multi-layer image of about 1 GB, between two
// local distribution registries, in one run: a cold copy into a fresh
// registry, then a second copy when every blob already exists. It reports
// median wall times and ratios to crane.
//
// Run it with `make bench-copy` (root, Debian 12).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	layers := flag.Int("layers", 8, "layers of CUDA libraries (about 135 MB each compressed)")
	runs := flag.Int("runs", 3, "runs of each tool")
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *layers, *runs, *gpuimg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, nLayers, runs int, gpuimg string) error {
	if err := testenv.EnsurePackages(ctx, "skopeo"); err != nil {
		return err
	}
	tools, err := testenv.BuildTools(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("/tmp", "gc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src, err := testenv.StartRegistry(ctx, tools.Registry, filepath.Join(dir, "src"))
	if err != nil {
		return err
	}
	defer src.Stop()
	img, err := testenv.CUDALibsImage(ctx, dir, nLayers)
	if err != nil {
		return err
	}
	ref := src.Host + "/bench/cuda-libs:1"
	r, _ := name.ParseReference(ref, name.Insecure)
	fmt.Fprintf(os.Stderr, "pushing a %d-layer image to %s …\n", nLayers, ref)
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return err
	}
	m, _ := img.Manifest()
	var size int64
	for _, l := range m.Layers {
		size += l.Size
	}

	tools3 := []struct {
		name string
		args func(dst string) []string
	}{
		{"gpuimg images copy", func(dst string) []string { return []string{gpuimg, "images", "copy", ref, dst} }},
		{"crane copy", func(dst string) []string { return []string{tools.Crane, "copy", "--insecure", ref, dst} }},
		{"skopeo copy", func(dst string) []string {
			return []string{"skopeo", "copy", "--src-tls-verify=false", "--dest-tls-verify=false", "docker://" + ref, "docker://" + dst}
		}},
	}
	cold := map[string][]time.Duration{}
	warm := map[string][]time.Duration{}
	for i := range runs {
		for _, t := range tools3 {
			// A fresh destination registry per cold copy.
			dst, err := testenv.StartRegistry(ctx, tools.Registry, filepath.Join(dir, fmt.Sprintf("dst-%d-%d", i, len(cold[t.name]))))
			if err != nil {
				return err
			}
			target := dst.Host + "/bench/cuda-libs:1"
			for _, into := range []map[string][]time.Duration{cold, warm} {
				args := t.args(target)
				cmd := exec.CommandContext(ctx, args[0], args[1:]...)
				cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
				start := time.Now()
				if err := cmd.Run(); err != nil {
					dst.Stop()
					return fmt.Errorf("%s: %w", t.name, err)
				}
				into[t.name] = append(into[t.name], time.Since(start))
			}
			dst.Stop()
			_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("dst-%d-%d", i, len(cold[t.name])-1)))
		}
	}
	// Two destinations at once: gpuimg reads each source blob once (spool);
	// crane and skopeo copy twice.
	two := map[string][]time.Duration{}
	for i := range runs {
		for _, mode := range []string{"streamed", "read-source-once"} {
			var regs []*testenv.Registry
			for j := range 2 {
				r, err := testenv.StartRegistry(ctx, tools.Registry, filepath.Join(dir, fmt.Sprintf("two-%s-%d-%d", mode, i, j)))
				if err != nil {
					return err
				}
				regs = append(regs, r)
			}
			args := []string{"images", "copy", ref, regs[0].Host + "/bench/cuda-libs:1", regs[1].Host + "/bench/cuda-libs:1"}
			if mode == "read-source-once" {
				args = append(args, "--read-source-once")
			}
			start := time.Now()
			cmd := exec.CommandContext(ctx, gpuimg, args...)
			cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
			err := cmd.Run()
			two[mode] = append(two[mode], time.Since(start))
			for j, r := range regs {
				r.Stop()
				_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("two-%s-%d-%d", mode, i, j)))
			}
			if err != nil {
				return fmt.Errorf("gpuimg two destinations (%s): %w", mode, err)
			}
		}
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	fmt.Printf("copy of a %d-layer image, %.0f MB compressed, between two local registries; %d runs each (median wall)\n", nLayers, float64(size)/1e6, runs)
	fmt.Printf("%-22s %10s %10s %12s %12s\n", "tool", "cold", "existing", "cold/crane", "exist/crane")
	cc, cw := med(cold["crane copy"]), med(warm["crane copy"])
	for _, t := range tools3 {
		c, w := med(cold[t.name]), med(warm[t.name])
		fmt.Printf("%-22s %9.2fs %9.2fs %11.2fx %11.2fx\n", t.name, c.Seconds(), w.Seconds(), c.Seconds()/cc.Seconds(), w.Seconds()/cw.Seconds())
	}
	fmt.Printf("two destinations in one gpuimg command: streamed %.2fs, --read-source-once %.2fs (median)\n", med(two["streamed"]).Seconds(), med(two["read-source-once"]).Seconds())
	return nil
}

// Command build measures gpuimg build on a real buildkitd and registry
// (the test environment of internal/testenv): a cold build from an empty
// cache, a no-op rebuild, and a rebuild after changing one --pip package.
// Each is run several times; the median and the range are reported.
//
// Run it with `make bench` (as root on Debian 12). Goal: a no-op rebuild
// under 2 s; a one-package change rebuilds only the user layers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	runs := flag.Int("runs", 5, "runs per scenario")
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *runs, *gpuimg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, runs int, gpuimg string) (err error) {
	dir, err := os.MkdirTemp("/tmp", "gb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env, err := testenv.Start(ctx, dir)
	defer func() {
		if serr := env.Stop(context.WithoutCancel(ctx)); serr != nil && err == nil {
			err = serr
		}
	}()
	if err != nil {
		return err
	}
	if _, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04"); err != nil {
		return err
	}
	if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		return err
	}
	for i := range runs + 1 {
		v := fmt.Sprintf("1.%d", i)
		if _, err := testenv.Wheel(env.WheelDir, "gpuimg-extra", v, "py3-none-any", map[string]string{"gpuimg_extra/__init__.py": "VERSION = '" + v + "'\n"}); err != nil {
			return err
		}
	}
	build := func(extra string) (time.Duration, string, error) {
		args := []string{"build", "--cuda", "12.2", "--torch", "2.3", "--matrix-file", env.MatrixFile,
			"--registry-mirror", env.Mirror(), "--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(),
			"--pip", "gpuimg-extra==" + extra, "-t", env.Registry.Host + "/bench/torch:" + extra, "--push", "--progress", "plain"}
		var progress strings.Builder
		cmd := exec.CommandContext(ctx, gpuimg, args...)
		cmd.Stderr = &progress
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			return d, progress.String(), fmt.Errorf("gpuimg build: %w: %s", err, progress.String())
		}
		return d, progress.String(), nil
	}
	prune := func() error {
		out, err := exec.CommandContext(ctx, env.Tools.Buildctl, "--addr", env.BuildKit.Address(), "prune", "--all").CombinedOutput()
		if err != nil {
			return fmt.Errorf("buildctl prune: %w: %s", err, out)
		}
		return nil
	}
	results := map[string][]time.Duration{}
	for range runs {
		if err := prune(); err != nil {
			return err
		}
		d, _, err := build("1.0")
		if err != nil {
			return err
		}
		results["cold"] = append(results["cold"], d)
	}
	for range runs {
		d, p, err := build("1.0")
		if err != nil {
			return err
		}
		if strings.Count(p, "CACHED") < 3 {
			return fmt.Errorf("a no-op rebuild ran steps:\n%s", p)
		}
		results["noop"] = append(results["noop"], d)
	}
	for i := range runs {
		d, _, err := build(fmt.Sprintf("1.%d", i+1))
		if err != nil {
			return err
		}
		results["one-pip"] = append(results["one-pip"], d)
	}
	fmt.Printf("gpuimg build --cuda 12.2 --torch 2.3 --push, %d runs each, on %s\n", runs, hostInfo())
	fmt.Printf("%-10s %10s %10s %10s\n", "scenario", "median", "min", "max")
	cold := median(results["cold"])
	for _, name := range []string{"cold", "noop", "one-pip"} {
		r := results[name]
		fmt.Printf("%-10s %9.2fs %9.2fs %9.2fs   (%.2fx cold)\n", name, median(r).Seconds(), slices.Min(r).Seconds(), slices.Max(r).Seconds(), median(r).Seconds()/cold.Seconds())
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func hostInfo() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	n := strings.Count(string(b), "processor\t:")
	return fmt.Sprintf("%d CPUs", n)
}

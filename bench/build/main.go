// Command build measures gpuimg build on a real buildkitd and registry
// (the test environment of internal/testenv): a cold build from an empty
// cache, a no-op rebuild, and a rebuild after changing one --pip package;
// the cold build and the no-op rebuild also with --no-checks, so the
// build's proof (library closure and imports, run inside the image) is
// measured by itself. Each is run several times; the median and the range
// are reported.
//
// Run it with `make bench` (as root on Debian 12). Goals: a no-op rebuild
// under 2 s, of which the proof under 0.5 s; a one-package change
// rebuilds only the user layers. They are printed, not asserted.
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
	build := func(extra string, more ...string) (time.Duration, string, error) {
		args := []string{"build", "--cuda", "12.2", "--torch", "2.3", "--matrix-file", env.MatrixFile,
			"--registry-mirror", env.Mirror(), "--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(),
			"--pip", "gpuimg-extra==" + extra, "-t", env.Registry.Host + "/bench/torch:" + extra, "--push", "--progress", "plain"}
		args = append(args, more...)
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
	// Cold and no-op, with and without the proof, interleaved so that a
	// machine's drift falls on both alike.
	for range runs {
		for _, sc := range []struct {
			name string
			args []string
		}{{"cold", nil}, {"cold-nochk", []string{"--no-checks"}}} {
			if err := prune(); err != nil {
				return err
			}
			d, p, err := build("1.0", sc.args...)
			if err != nil {
				return err
			}
			if sc.args == nil {
				if !strings.Contains(p, "gpuimg check: import torch ok") {
					return fmt.Errorf("the cold build did not run the proof:\n%s", p)
				}
				results["proof-steps"] = append(results["proof-steps"], proofSteps(p))
			}
			results[sc.name] = append(results[sc.name], d)
		}
	}
	for range runs {
		for _, sc := range []struct {
			name string
			args []string
		}{{"noop", nil}, {"noop-nochk", []string{"--no-checks"}}} {
			d, p, err := build("1.0", sc.args...)
			if err != nil {
				return err
			}
			if strings.Count(p, "CACHED") < 3 {
				return fmt.Errorf("a no-op rebuild ran steps:\n%s", p)
			}
			results[sc.name] = append(results[sc.name], d)
		}
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
	for _, name := range []string{"cold", "cold-nochk", "proof-steps", "noop", "noop-nochk", "one-pip"} {
		r := results[name]
		fmt.Printf("%-10s %9.2fs %9.2fs %9.2fs   (%.2fx cold)\n", name, median(r).Seconds(), slices.Min(r).Seconds(), slices.Max(r).Seconds(), median(r).Seconds()/cold.Seconds())
	}
	// The proof's cost: the median of the paired differences (each run's
	// build with the proof minus the one without, run next to it).
	for _, p := range []struct{ with, without, goal string }{{"cold", "cold-nochk", ""}, {"noop", "noop-nochk", " (goal: under 0.5 s)"}} {
		var diff []time.Duration
		for i := range results[p.with] {
			diff = append(diff, results[p.with][i]-results[p.without][i])
		}
		fmt.Printf("proof on %-5s %+8.2fs median of paired differences (%+.2fs to %+.2fs), %+.0f%%%s\n", p.with, median(diff).Seconds(), slices.Min(diff).Seconds(), slices.Max(diff).Seconds(),
			100*median(diff).Seconds()/median(results[p.without]).Seconds(), p.goal)
	}
	return nil
}

// proofSteps is the time BuildKit's plain progress gives the proof's
// steps (the RUNs of proof.py) of one build, together: "#12 [gpuimg-check
// 1/1] RUN … gpuimg-proof.py …", then "#12 DONE 0.8s".
func proofSteps(progress string) time.Duration {
	ids := map[string]bool{}
	var total time.Duration
	for line := range strings.SplitSeq(progress, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "#") {
			continue
		}
		if strings.Contains(line, "] RUN ") && strings.Contains(line, "gpuimg-proof.py") {
			ids[f[0]] = true
		}
		if ids[f[0]] && f[1] == "DONE" && len(f) >= 3 {
			if d, err := time.ParseDuration(f[2]); err == nil {
				total += d
			}
		}
	}
	return total
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

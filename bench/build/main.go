// Command build measures gpuimg build on a real buildkitd and registry
// (the test environment of internal/testenv) against the Dockerfile a
// user would otherwise write (plain.go): a cold build from an empty
// cache, a no-op rebuild, and a rebuild after changing one --pip
// package, each side run right after the other so that the machine's
// load falls on both. -size scales the framework wheels to a real torch
// CUDA stack's proportions (testenv.LayeredStackWheels: torch, 13
// nvidia-* wheels, triton) at that many GB installed, their bulk
// compressing about 2:1 as real CUDA libraries do; -size 0 keeps the
// small fixture wheels. The cold build and the no-op rebuild are also run
// with --no-checks (-nochk), so the build's proof is measured by itself,
// and the cold build with --torch-compile=false (-nocompile), so is the
// cost of the compiler packages every default image carries.
//
// Run it with `make bench` (as root on Debian 12). Goals: a no-op rebuild
// under 0.5 s at every size; a one-package change at most 1.5x the plain
// Dockerfile's; a cold build at most 1.2x the plain Dockerfile's with
// zstd layers. They are printed, not asserted.
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
	"strings"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// config is the benchmark's flags.
type config struct {
	runs int
	// changes is how many one-package changes are measured (-runs when 0):
	// more samples of the scenario with the smallest times.
	changes int
	gpuimg  string
	// other, when set, is a second gpuimg binary: each one-package change
	// is also made with it, right after the first binary's and the plain
	// one (one-pip-other), so two builds of gpuimg compare in one run.
	other string
	// size is the framework wheels' installed size in GB; 0 is the small
	// fixture wheels (testenv.Env.TorchWheels).
	size float64
	// nochk also runs the cold and no-op builds with --no-checks.
	nochk bool
	// nocompile also runs the cold build with --torch-compile=false, so
	// the cost of torch.compile's compiler and headers (the OS packages
	// every default image carries) is measured by itself.
	nocompile bool
	// progress, when set, is a directory each build's progress is
	// written to (SCENARIO-RUN.log), every line with the seconds since
	// the build's command started.
	progress string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.runs, "runs", 5, "runs per scenario")
	flag.IntVar(&cfg.changes, "changes", 0, "one-package changes to measure (0: -runs)")
	flag.StringVar(&cfg.gpuimg, "gpuimg", "bin/gpuimg", "gpuimg binary")
	flag.StringVar(&cfg.other, "other", "", "a second gpuimg `binary`: each one-package change is also made with it (one-pip-other), to compare two builds of gpuimg in one run")
	flag.Float64Var(&cfg.size, "size", 0, "framework wheels' installed size in GB, in a torch CUDA stack's proportions (0.1, 1, 3); 0: the small fixture wheels")
	flag.BoolVar(&cfg.nochk, "nochk", true, "also build cold and no-op with --no-checks, to measure the proof")
	flag.BoolVar(&cfg.nocompile, "nocompile", true, "also build cold with --torch-compile=false, to measure torch.compile's compiler packages")
	flag.StringVar(&cfg.progress, "progress", "", "write each build's progress to `DIR`/SCENARIO-RUN.log, each line with the seconds since the build started (where its time went)")
	flag.Parse()
	if cfg.runs < 1 || cfg.changes < 0 || cfg.size < 0 || cfg.size > 10 {
		fmt.Fprintln(os.Stderr, "bench: -runs must be at least 1, -changes at least 0 and -size from 0 to 10 (GB): give -runs 3 -size 1")
		os.Exit(2)
	}
	if cfg.changes == 0 {
		cfg.changes = cfg.runs
	}
	if cfg.progress != "" {
		if err := os.MkdirAll(cfg.progress, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -progress:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench is one run of the benchmark: its environment and what it measured.
type bench struct {
	cfg     config
	env     *testenv.Env
	results map[string][]time.Duration
	// dominant is, per no-op scenario, the step that took longest in
	// each run (BuildKit's progress), as "name 1.2s".
	dominant map[string][]string
	// sizes are the pushed images' compressed sizes in bytes, by side.
	sizes map[string]int64
	// coldSteps are the longest steps of each side's last cold build
	// ("gpuimg", "plain") and last one-package change ("one-pip",
	// "plain-one-pip").
	coldSteps map[string][]step
	// stamped is the last build's progress with each line's time (-progress).
	stamped string
}

func run(ctx context.Context, cfg config) (err error) {
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
	b := &bench{cfg: cfg, env: env, results: map[string][]time.Duration{}, dominant: map[string][]string{}, sizes: map[string]int64{}, coldSteps: map[string][]step{}}
	if err := b.fixtures(ctx); err != nil {
		return err
	}
	load := loadAvg()
	if err := b.measure(ctx); err != nil {
		return err
	}
	b.report(load, loadAvg())
	return nil
}

// fixtures pushes the base and writes the wheels: the framework's, and
// one gpuimg-extra for each one-package change.
func (b *bench) fixtures(ctx context.Context) error {
	env := b.env
	if _, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04"); err != nil {
		return err
	}
	if b.cfg.size > 0 {
		if err := testenv.LayeredStackWheels(ctx, env.WheelDir, "2.3.1", "0.18.1", "2.3.1", "12.1", []string{"3.11"}, b.scale(), testenv.HalfCompressible); err != nil {
			return err
		}
	} else if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		return err
	}
	for i := range b.versions() {
		v := fmt.Sprintf("1.%d", i)
		if _, err := testenv.Wheel(env.WheelDir, "gpuimg-extra", v, "py3-none-any", map[string]string{"gpuimg_extra/__init__.py": "VERSION = '" + v + "'\n"}); err != nil {
			return err
		}
	}
	return nil
}

// versions is how many gpuimg-extra versions the scenarios use: 1.0 for
// the cold and no-op builds, one for each one-package change (two with
// -other).
func (b *bench) versions() int {
	if b.cfg.other != "" {
		return 2*b.cfg.changes + 1
	}
	return b.cfg.changes + 1
}

// scale is the twin wheels' size against the real ones (-size in GB
// over the real stack's).
func (b *bench) scale() float64 { return b.cfg.size * 1000 / testenv.StackMB() }

// gpuimgBuild builds the stack with gpuimg, with extra as the one --pip
// package, and pushes it as tag.
func (b *bench) gpuimgBuild(ctx context.Context, extra, tag string, more ...string) (time.Duration, string, error) {
	return b.gpuimgBuildWith(ctx, b.cfg.gpuimg, extra, tag, more...)
}

// gpuimgBuildWith is gpuimgBuild with the gpuimg binary bin.
func (b *bench) gpuimgBuildWith(ctx context.Context, bin, extra, tag string, more ...string) (time.Duration, string, error) {
	env := b.env
	args := []string{"build", "--cuda", "12.2", "--torch", "2.3", "--matrix-file", env.MatrixFile,
		"--registry-mirror", env.Mirror(), "--pip-index-url", env.Index.URL, "--builder", env.BuildKit.Address(),
		"--pip", "gpuimg-extra==" + extra, "-t", b.ref("gpuimg", tag), "--push", "--progress", "plain"}
	if b.cfg.size > 0 {
		// The large-wheel threshold scaled as the wheels are, so the
		// layers are the real stack's.
		args = append(args, "--large-wheel", fmt.Sprintf("%dB", max(int64(50e6*b.scale()), 1)))
	}
	return b.timed(exec.CommandContext(ctx, bin, append(args, more...)...))
}

// ref is the tag a side pushes for extra.
func (b *bench) ref(side, extra string) string {
	return b.env.Registry.Host + "/bench/" + side + ":" + extra
}

// timed runs cmd and returns its wall time and its stderr (the
// progress). With -progress, b.stamped is that stderr with each line's
// arrival, in seconds since the start.
func (b *bench) timed(cmd *exec.Cmd) (time.Duration, string, error) {
	start := time.Now()
	progress := &stampWriter{start: start, stamp: b.cfg.progress != ""}
	cmd.Stderr = progress
	err := cmd.Run()
	d := time.Since(start)
	b.stamped = progress.stamped.String()
	if err != nil {
		return d, progress.raw.String(), fmt.Errorf("%s: %w: %s", cmd.Args[0], err, lastLines(progress.raw.String(), 30))
	}
	return d, progress.raw.String(), nil
}

// stampWriter keeps what is written, and with stamp also each complete
// line prefixed with the seconds since start when its end arrived.
type stampWriter struct {
	start        time.Time
	stamp        bool
	raw, stamped strings.Builder
	line         []byte
}

func (w *stampWriter) Write(p []byte) (int, error) {
	w.raw.Write(p)
	if !w.stamp {
		return len(p), nil
	}
	for _, c := range p {
		w.line = append(w.line, c)
		if c == '\n' {
			fmt.Fprintf(&w.stamped, "%7.3f %s", time.Since(w.start).Seconds(), w.line)
			w.line = w.line[:0]
		}
	}
	return len(p), nil
}

func (b *bench) prune(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, b.env.Tools.Buildctl, "--addr", b.env.BuildKit.Address(), "prune", "--all").CombinedOutput()
	if err != nil {
		return fmt.Errorf("buildctl prune: %w: %s", err, out)
	}
	return nil
}

// scenario is one measured build: its name, and the build.
type scenario struct {
	name  string
	build func() (time.Duration, string, error)
	// cold prunes BuildKit's cache first.
	cold bool
}

// measure runs every scenario cfg.runs times (the one-package changes
// cfg.changes times): the cold builds (each from an empty cache), then
// the no-op rebuilds and the one-package changes,
// gpuimg's and the plain Dockerfile's alternately.
func (b *bench) measure(ctx context.Context) error {
	g := func(extra, tag string, more ...string) func() (time.Duration, string, error) {
		return func() (time.Duration, string, error) { return b.gpuimgBuild(ctx, extra, tag, more...) }
	}
	p := func(extra, comp string) func() (time.Duration, string, error) {
		return func() (time.Duration, string, error) { return b.plainBuild(ctx, extra, comp) }
	}
	for i := range b.cfg.runs {
		// Each cold build pushes a tag of its own: gpuimg builds nothing
		// for a tag that holds its inputs already.
		tag := fmt.Sprintf("1.0-cold-%d", i)
		// The default cold build comes last but for its --no-checks twin
		// (the same image steps): the no-op rebuilds below find its cache.
		cold := []scenario{{"plain-cold-gzip", p("1.0", "gzip"), true}}
		if b.cfg.nocompile {
			cold = append(cold, scenario{"cold-nocompile", g("1.0", tag+"-nocompile", "--torch-compile=false"), true})
		}
		cold = append(cold, scenario{"plain-cold", p("1.0", "zstd"), true}, scenario{"cold", g("1.0", tag), true})
		if b.cfg.nochk {
			cold = append(cold, scenario{"cold-nochk", g("1.0", tag+"-nochk", "--no-checks"), true})
		}
		if err := b.each(ctx, cold); err != nil {
			return err
		}
	}
	// The last cold build was gpuimg's; the plain Dockerfile's cache went
	// with the prune before it: build it again (not measured). Then
	// gpuimg's tag of the no-op rebuilds, every step cached: what a no-op
	// costs when the tag does not hold the image yet.
	if _, _, err := b.plainBuild(ctx, "1.0", "zstd"); err != nil {
		return err
	}
	if err := b.each(ctx, []scenario{{"noop-new-tag", g("1.0", "1.0"), false}}); err != nil {
		return err
	}
	noop := []scenario{{"noop", g("1.0", "1.0"), false}, {"plain-noop", p("1.0", "zstd"), false}}
	if b.cfg.nochk {
		noop = append(noop, scenario{"noop-nochk", g("1.0", "1.0", "--no-checks"), false})
	}
	for range b.cfg.runs {
		if err := b.each(ctx, noop); err != nil {
			return err
		}
	}
	for i := range b.cfg.changes {
		v := fmt.Sprintf("1.%d", i+1)
		if b.cfg.other != "" {
			v = fmt.Sprintf("1.%d", 2*i+1) // and 2*i+2 for -other's
		}
		scs := []scenario{{"one-pip", g(v, v), false}, {"plain-one-pip", p(v, "zstd"), false}}
		if b.cfg.other != "" {
			o := fmt.Sprintf("1.%d", 2*i+2)
			scs = append(scs, scenario{"one-pip-other", func() (time.Duration, string, error) { return b.gpuimgBuildWith(ctx, b.cfg.other, o, o) }, false})
		}
		if err := b.each(ctx, scs); err != nil {
			return err
		}
	}
	sides := map[string]string{"gpuimg": b.ref("gpuimg", "1.0"), "plain": b.ref("plain", "1.0")}
	if b.cfg.nocompile {
		sides["gpuimg-nocompile"] = b.ref("gpuimg", "1.0-cold-0-nocompile")
	}
	for side, ref := range sides {
		n, err := b.imageSize(ctx, ref)
		if err != nil {
			return err
		}
		b.sizes[side] = n
	}
	return nil
}

// each runs the scenarios once each, in order, and records their times.
func (b *bench) each(ctx context.Context, scs []scenario) error {
	for _, sc := range scs {
		if sc.cold {
			if err := b.prune(ctx); err != nil {
				return err
			}
		}
		d, progress, err := sc.build()
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		b.results[sc.name] = append(b.results[sc.name], d)
		if b.cfg.progress != "" {
			name := filepath.Join(b.cfg.progress, fmt.Sprintf("%s-%d.log", sc.name, len(b.results[sc.name])))
			if err := os.WriteFile(name, []byte(b.stamped), 0o644); err != nil {
				return fmt.Errorf("keep the progress: %w", err)
			}
		}
		steps := steps(progress)
		switch {
		case sc.name == "cold":
			if !strings.Contains(progress, "gpuimg check: import torch ok") {
				return fmt.Errorf("the cold build did not run the proof:\n%s", lastLines(progress, 40))
			}
			b.results["proof-steps"] = append(b.results["proof-steps"], proofSteps(progress))
			b.coldSteps["gpuimg"] = steps
		case sc.name == "plain-cold":
			b.coldSteps["plain"] = steps
		case sc.name == "one-pip" || sc.name == "plain-one-pip" || sc.name == "one-pip-other":
			b.coldSteps[sc.name] = steps
		case strings.Contains(sc.name, "noop"):
			if strings.Contains(progress, "already holds") {
				b.dominant[sc.name] = append(b.dominant[sc.name], "no solve (the tag holds these inputs)")
				continue
			}
			if strings.Count(progress, "CACHED") < 2 {
				return fmt.Errorf("%s ran steps:\n%s", sc.name, lastLines(progress, 40))
			}
			if len(steps) > 0 {
				b.dominant[sc.name] = append(b.dominant[sc.name], fmt.Sprintf("%q %.2fs", short(steps[0].name), steps[0].d.Seconds()))
			}
		}
	}
	return nil
}

// report prints the table: each scenario's median and range, gpuimg
// against the plain Dockerfile, the image sizes, what dominated each
// no-op, and the cold builds' longest steps.
func (b *bench) report(loadStart, loadEnd string) {
	fmt.Printf("gpuimg build --cuda 12.2 --torch 2.3 --push vs a plain Dockerfile, wheels %s, %d runs each (%d one-package changes), on %s; load average %s at the start, %s at the end\n",
		b.sizeName(), b.cfg.runs, b.cfg.changes, hostInfo(), loadStart, loadEnd)
	fmt.Printf("%-16s %10s %10s %10s\n", "scenario", "median", "min", "max")
	for _, name := range []string{"cold", "cold-nochk", "cold-nocompile", "proof-steps", "plain-cold", "plain-cold-gzip", "noop-new-tag", "noop", "noop-nochk", "plain-noop", "one-pip", "plain-one-pip", "one-pip-other"} {
		r := b.results[name]
		if len(r) == 0 {
			continue
		}
		fmt.Printf("%-16s %9.2fs %9.2fs %9.2fs\n", name, median(r).Seconds(), slices.Min(r).Seconds(), slices.Max(r).Seconds())
	}
	if b.cfg.nochk {
		// The proof's cost: the median of the paired differences (each
		// run's build with the proof minus the one without, run next to it).
		for _, p := range []struct{ with, without string }{{"cold", "cold-nochk"}, {"noop", "noop-nochk"}} {
			var diff []time.Duration
			for i := range b.results[p.with] {
				diff = append(diff, b.results[p.with][i]-b.results[p.without][i])
			}
			fmt.Printf("proof on %-5s %+8.2fs median of paired differences (%+.2fs to %+.2fs)\n", p.with, median(diff).Seconds(), slices.Min(diff).Seconds(), slices.Max(diff).Seconds())
		}
	}
	fmt.Printf("image size (compressed): gpuimg %.1f MB, plain (zstd) %.1f MB\n", float64(b.sizes["gpuimg"])/1e6, float64(b.sizes["plain"])/1e6)
	if b.cfg.nocompile {
		fmt.Printf("torch.compile's compiler packages: cold %+.2fs (cold minus cold-nocompile, medians), image %+.1f MB\n",
			(median(b.results["cold"]) - median(b.results["cold-nocompile"])).Seconds(), float64(b.sizes["gpuimg"]-b.sizes["gpuimg-nocompile"])/1e6)
	}
	for _, name := range []string{"noop-new-tag", "noop", "plain-noop"} {
		fmt.Printf("longest step of %s: %s\n", name, strings.Join(b.dominant[name], "; "))
	}
	for _, side := range []struct{ key, name string }{{"gpuimg", "gpuimg cold build"}, {"plain", "plain cold build"}, {"one-pip", "gpuimg one-package change"}, {"plain-one-pip", "plain one-package change"}, {"one-pip-other", "-other's one-package change"}} {
		if len(b.coldSteps[side.key]) == 0 {
			continue
		}
		fmt.Printf("longest steps of the last %s:\n", side.name)
		for _, s := range b.coldSteps[side.key][:min(8, len(b.coldSteps[side.key]))] {
			fmt.Printf("  %7.2fs %s\n", s.d.Seconds(), short(s.name))
		}
	}
	ratio := func(a, p string) float64 { return median(b.results[a]).Seconds() / median(b.results[p]).Seconds() }
	fmt.Printf("build %s: noop %.2fs (goal ≤ 0.5 s), one-pip %.2fx plain (goal ≤ 1.5), cold %.2fx plain zstd (goal ≤ 1.2), %.2fx plain gzip\n",
		b.sizeName(), median(b.results["noop"]).Seconds(), ratio("one-pip", "plain-one-pip"), ratio("cold", "plain-cold"), ratio("cold", "plain-cold-gzip"))
	if b.cfg.other != "" {
		fmt.Printf("one-pip with -other %s: %.2fx plain, %.2fx -gpuimg's (medians)\n", b.cfg.other, ratio("one-pip-other", "plain-one-pip"), ratio("one-pip-other", "one-pip"))
	}
}

// short is a step's name cut to 120 characters (a RUN's is its whole
// script).
func short(name string) string {
	if len(name) <= 120 {
		return name
	}
	return name[:117] + "..."
}

func (b *bench) sizeName() string {
	if b.cfg.size == 0 {
		return "small fixture"
	}
	return fmt.Sprintf("%g GB", b.cfg.size)
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

// loadAvg is the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

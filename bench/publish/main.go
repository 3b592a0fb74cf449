// Command publish measures gpuimg publish on a real buildkitd and registry
// (the test environment of internal/testenv), with the binary run as a
// user would run it:
//
//   - matrix: the demo's matrix (CUDA 12.1 and 12.2 × torch 2.2 and 2.3,
//     Python 3.11: 4 variants) published by one `gpuimg publish` on one
//     builder, against the same variants built one after the other by
//     `gpuimg build … -t TAG --push` with the same flags. Each side starts
//     from an empty BuildKit cache: a buildkitd of its own with a fresh
//     state directory, stopped after. publish is measured with --jobs 1
//     and --jobs 2 (a fresh daemon each). publish also validates every
//     variant before tagging it, which gpuimg build does not: a third side
//     runs gpuimg validate after each one-by-one build. A fourth builds
//     each variant on a buildkitd of its own, as CI matrix jobs on fresh
//     runners do (nothing shared). Each side pushes to a repository of its
//     own, so no side finds the other's blobs. Each side's time per
//     variant is printed, and publish's step times from its report.
//   - unchanged: a nightly run with nothing changed, 8 variants (the same
//     matrix × runtime and devel): publish once (it builds), then time the
//     same publish again with --since, which must report every variant
//     unchanged.
//
// Run it with `make bench-publish` (as root on Debian 12). Goals: publish
// at most 0.6 of the one-by-one time; the unchanged nightly under 5 s.
// The last line is machine-readable.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary (make build)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *gpuimg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// matrixSpec is the demo's matrix without the combinations the resolver
// refuses or the demo excludes by hand: every combination is a variant.
const matrixSpec = `repository: %s
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.1", "12.2"]
  torch: ["2.2", "2.3"]
  python: ["3.11"]
`

// nightlySpec has 8 variants (runtime and devel bases) and a validation,
// as a nightly publish file would.
const nightlySpec = `repository: %s
tag: "{torch}-cu{cuda_short}-py{python}-{flavor}"
matrix:
  cuda: ["12.1", "12.2"]
  torch: ["2.2", "2.3"]
  python: ["3.11"]
  flavor: [runtime, devel]
validate: {driver: 535.104.05, gpu: [h100]}
`

func run(ctx context.Context, gpuimg string) (err error) {
	load0 := loadavg()
	if _, err := os.Stat(gpuimg); err != nil {
		return fmt.Errorf("the gpuimg binary: %w (run make build)", err)
	}
	dir, err := os.MkdirTemp("/tmp", "gp-")
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
	// base: the resolver's flavor for the matrix (torch brings CUDA's
	// libraries as wheels); runtime and devel: the nightly's.
	for _, cuda := range []string{"12.1.1", "12.2.2"} {
		for _, flavor := range []string{"base", "runtime", "devel"} {
			if _, err := env.PushBase(ctx, "nvidia/cuda:"+cuda+"-"+flavor+"-ubuntu22.04"); err != nil {
				return err
			}
		}
	}
	if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		return err
	}
	if err := env.TorchWheels("2.2.2", "0.17.2", "2.2.2", "12.1"); err != nil {
		return err
	}
	common := []string{"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL, "--progress", "plain"}

	// fresh runs f against a buildkitd of its own with an empty state
	// directory, stopped and removed afterwards.
	fresh := func(name string, f func(addr string) error) (time.Duration, error) {
		bk, err := env.StartBuildKit(ctx, name)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		ferr := f(bk.Address())
		d := time.Since(start)
		serr := stopBuildKit(ctx, bk)
		if ferr != nil {
			return d, ferr
		}
		return d, serr
	}
	writeSpec := func(name, spec, repo string) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, []byte(fmt.Sprintf(spec, repo)), 0o644)
	}

	// The variants, as gpuimg matrix expand plans them.
	planFile, err := writeSpec("plan.yaml", matrixSpec, env.Registry.Host+"/bench/plan")
	if err != nil {
		return err
	}
	out, err := gpuimgOutput(ctx, gpuimg, "matrix", "expand", "-f", planFile, "--matrix-file", env.MatrixFile, "-o", "json")
	if err != nil {
		return err
	}
	var plan struct {
		Variants []struct {
			Name string            `json:"name"`
			Axes map[string]string `json:"axes"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		return fmt.Errorf("read the plan of gpuimg matrix expand: %w", err)
	}
	if len(plan.Variants) != 4 {
		return fmt.Errorf("the matrix has %d variants, want 4:\n%s", len(plan.Variants), out)
	}

	// oneByOne builds the variants one after the other; with validate,
	// each pushed image is also checked by gpuimg validate, the static
	// validation publish runs on every variant before writing its tag.
	var steps strings.Builder // each one-by-one command's time
	oneByOne := func(name string, validate bool) (time.Duration, error) {
		return fresh(name, func(addr string) error {
			for _, v := range plan.Variants {
				t0 := time.Now()
				ref := env.Registry.Host + "/bench/" + name + ":" + v.Name
				args := []string{"build", "--builder", addr, "-t", ref, "--push"}
				for _, axis := range []string{"cuda", "torch", "python"} {
					args = append(args, "--"+axis, v.Axes[axis])
				}
				if err := gpuimgRun(ctx, gpuimg, append(args, common...)...); err != nil {
					return err
				}
				fmt.Fprintf(&steps, "  %-8s %-22s gpuimg build %6.2fs", name, v.Name, time.Since(t0).Seconds())
				if validate {
					t1 := time.Now()
					if err := gpuimgRun(ctx, gpuimg, "validate", ref, "--matrix-file", env.MatrixFile, "-o", "json"); err != nil {
						return err
					}
					fmt.Fprintf(&steps, ", gpuimg validate %5.2fs", time.Since(t1).Seconds())
				}
				steps.WriteString("\n")
			}
			return nil
		})
	}
	one, err := oneByOne("one", false)
	if err != nil {
		return err
	}
	// Each variant on a buildkitd of its own, as CI matrix jobs on fresh
	// runners build them: nothing is shared, each builds its base's layers.
	var apart time.Duration
	for i, v := range plan.Variants {
		d, err := fresh(fmt.Sprintf("apart%d", i), func(addr string) error {
			args := []string{"build", "--builder", addr, "-t", env.Registry.Host + "/bench/apart:" + v.Name, "--push"}
			for _, axis := range []string{"cuda", "torch", "python"} {
				args = append(args, "--"+axis, v.Axes[axis])
			}
			return gpuimgRun(ctx, gpuimg, append(args, common...)...)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(&steps, "  %-8s %-22s gpuimg build %6.2fs (a buildkitd of its own)\n", "apart", v.Name, d.Seconds())
		apart += d
	}
	oneValidated, err := oneByOne("onev", true)
	if err != nil {
		return err
	}
	pub, pubBuild := map[int]time.Duration{}, map[int]time.Duration{}
	pubSteps := map[int]publish.StepTimes{}
	var profile strings.Builder
	for _, jobs := range []int{1, 2} {
		repo := fmt.Sprintf("%s/bench/pub-j%d", env.Registry.Host, jobs)
		file, err := writeSpec(fmt.Sprintf("publish-j%d.yaml", jobs), matrixSpec, repo)
		if err != nil {
			return err
		}
		reports := filepath.Join(dir, fmt.Sprintf("report-j%d", jobs))
		d, err := fresh(fmt.Sprintf("pj%d", jobs), func(addr string) error {
			return gpuimgRun(ctx, gpuimg, append([]string{"publish", "-f", file, "--builder", addr,
				"--jobs", fmt.Sprint(jobs), "--report-dir", reports}, common...)...)
		})
		if err != nil {
			return err
		}
		rep, err := allOutcome(reports, publish.Published, 4)
		if err != nil {
			return fmt.Errorf("publish --jobs %d: %w", jobs, err)
		}
		pub[jobs] = d
		t := pubSteps[jobs]
		for _, r := range rep.Results {
			pubBuild[jobs] += r.BuildTime
			t.Check += r.Times.Check
			t.Wait += r.Times.Wait
			t.Build += r.Times.Build
			t.Validate += r.Times.Validate
			t.Publish += r.Times.Publish
			fmt.Fprintf(&profile, "  --jobs %d %-22s check %5.2fs wait %6.2fs build %6.2fs (%d/%d steps cached) validate %5.2fs publish %5.2fs\n",
				jobs, r.Variant.Name, r.Times.Check.Seconds(), r.Times.Wait.Seconds(), r.Times.Build.Seconds(), r.CachedSteps, r.TotalSteps,
				r.Times.Validate.Seconds(), r.Times.Publish.Seconds())
		}
		pubSteps[jobs] = t
	}

	// The nightly: 8 variants on the Env's buildkitd, published once, then
	// again with nothing changed.
	nightly, err := writeSpec("nightly.yaml", nightlySpec, env.Registry.Host+"/bench/nightly")
	if err != nil {
		return err
	}
	first, again := filepath.Join(dir, "nightly1"), filepath.Join(dir, "nightly2")
	nightlyArgs := func(reports string, more ...string) []string {
		return append(append([]string{"publish", "-f", nightly, "--builder", env.BuildKit.Address(),
			"--report-dir", reports}, common...), more...)
	}
	t1 := time.Now()
	if err := gpuimgRun(ctx, gpuimg, nightlyArgs(first)...); err != nil {
		return err
	}
	build8 := time.Since(t1)
	if _, err := allOutcome(first, publish.Published, 8); err != nil {
		return fmt.Errorf("nightly first run: %w", err)
	}
	t2 := time.Now()
	if err := gpuimgRun(ctx, gpuimg, nightlyArgs(again, "--since", filepath.Join(first, publish.ReportJSON))...); err != nil {
		return err
	}
	unchanged := time.Since(t2)
	if _, err := allOutcome(again, publish.Unchanged, 8); err != nil {
		return fmt.Errorf("nightly rerun: %w", err)
	}

	b, _ := os.ReadFile("/proc/cpuinfo")
	fmt.Printf("gpuimg publish of 4 variants (CUDA 12.1, 12.2 × torch 2.2, 2.3, Python 3.11) on one fresh buildkitd, %d CPUs, load %s\n",
		strings.Count(string(b), "processor\t:"), loadavg())
	fmt.Printf("%-38s %9s %8s\n", "side", "wall", "ratio")
	fmt.Printf("%-38s %8.2fs %8.2f\n", "gpuimg build --push, one by one", one.Seconds(), 1.0)
	fmt.Printf("%-38s %8.2fs %8.2f\n", "the same, each then gpuimg validate", oneValidated.Seconds(), oneValidated.Seconds()/one.Seconds())
	fmt.Printf("%-38s %8.2fs %8.2f\n", "each on a fresh buildkitd (CI jobs)", apart.Seconds(), apart.Seconds()/one.Seconds())
	for _, jobs := range []int{1, 2} {
		t := pubSteps[jobs]
		fmt.Printf("%-38s %8.2fs %8.2f   (summed over variants: BuildKit solves %.2fs; steps: check %.2fs, wait %.2fs, build %.2fs, validate %.2fs, publish %.2fs)\n",
			fmt.Sprintf("gpuimg publish --jobs %d", jobs), pub[jobs].Seconds(), pub[jobs].Seconds()/one.Seconds(), pubBuild[jobs].Seconds(),
			t.Check.Seconds(), t.Wait.Seconds(), t.Build.Seconds(), t.Validate.Seconds(), t.Publish.Seconds())
	}
	fmt.Print(steps.String())
	fmt.Print(profile.String())
	fmt.Printf("nightly, 8 variants: first publish %.2fs, rerun with nothing changed %.2fs (all unchanged)\n", build8.Seconds(), unchanged.Seconds())
	best := min(pub[1], pub[2])
	fmt.Printf("publish (the faster of --jobs 1 and 2) / one-by-one gpuimg build on one buildkitd: %.2f (--jobs 1 %.2f, --jobs 2 %.2f); "+
		"/ one-by-one gpuimg build then gpuimg validate (the same work): %.2f; / each gpuimg build on a fresh buildkitd (CI jobs): %.2f; "+
		"unchanged nightly of 8 variants: %.1fs (goals: at most 0.6; under 5s; load %s at the start, %s at the end)\n",
		best.Seconds()/one.Seconds(), pub[1].Seconds()/one.Seconds(), pub[2].Seconds()/one.Seconds(), best.Seconds()/oneValidated.Seconds(),
		best.Seconds()/apart.Seconds(), unchanged.Seconds(), load0, loadavg())
	return nil
}

// stopBuildKit stops a buildkitd of StartBuildKit and removes its state.
func stopBuildKit(ctx context.Context, bk *builder.Local) error {
	if err := bk.Stop(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return os.RemoveAll(bk.StateDir)
}

// gpuimgRun runs gpuimg; its progress is shown only when it fails.
func gpuimgRun(ctx context.Context, bin string, args ...string) error {
	var progress bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &progress, &progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gpuimg %s: %w:\n%s", strings.Join(args, " "), err, progress.String())
	}
	return nil
}

func gpuimgOutput(ctx context.Context, bin string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gpuimg %s: %w:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// allOutcome checks that the report in dir has n variants, each with outcome want.
func allOutcome(dir string, want publish.Outcome, n int) (*publish.Report, error) {
	rep, err := publish.ReadReport(filepath.Join(dir, publish.ReportJSON))
	if err != nil {
		return nil, err
	}
	if len(rep.Results) != n {
		return nil, fmt.Errorf("the report has %d variants, want %d", len(rep.Results), n)
	}
	for _, r := range rep.Results {
		if r.Outcome != want {
			return nil, fmt.Errorf("%s is %s, want %s", r.Variant.Name, r.Outcome, want)
		}
	}
	return rep, nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

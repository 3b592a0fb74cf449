// Command demo-publish is `make demo` for gpuimg publish: on one machine
// it starts a local registry (standing in for Docker Hub), a PEP 503
// index and two buildkitds (a pool of builders), pushes fixture base
// images under NVIDIA's tags and fixture wheels under PyTorch's names,
// writes a small publish.yaml (3 variants, and combinations the resolver
// refuses), and runs
//
//	gpuimg publish -f publish.yaml --builder … --builder …
//
// twice through the mirror flags a team behind a slow link would use: the
// first run builds, validates, pushes, mirrors and promotes the variants;
// the second finds every variant unchanged and builds nothing. It prints
// where the reports are and stops everything it started.
//
// gpuimg itself is the binary `make build` writes (-gpuimg, bin/gpuimg by
// default), run as a user would run it.
//
// Run it with `make demo-publish` (as root on Debian 12). The first run on
// a fresh machine sets up what `make demo` does (about 10 minutes, each
// slow step says so); later runs take about a minute.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary (make build)")
	reports := flag.String("report-dir", filepath.Join(os.TempDir(), "gpuimg-demo-publish"), "where the two runs' reports are written (emptied first, kept after)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *gpuimg, *reports)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo-publish:", err)
		os.Exit(1)
	}
}

func step(msg string) { testenv.DemoStep(os.Stderr, msg) }

func gpuimgCmd(ctx context.Context, bin string, args ...string) error {
	return testenv.RunGpuimg(ctx, os.Stdout, os.Stderr, bin, args...)
}

func run(ctx context.Context, gpuimg, reports string) (err error) {
	if _, err := os.Stat(gpuimg); err != nil {
		return fmt.Errorf("the gpuimg binary: %w (run make build, or make demo-publish)", err)
	}
	if err := os.RemoveAll(reports); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "gpuimg-dp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	ctx = testenv.WithProgress(ctx, os.Stderr)
	step("setting up a registry, a pip index and 2 buildkitds on this machine (first run: about 10 minutes, later runs: seconds)")
	t0 := time.Now()
	if err := testenv.EnsurePackages(ctx, "runc", "debootstrap", "skopeo"); err != nil {
		return err
	}
	env, err := testenv.Start(ctx, dir)
	var second *builder.Local
	defer func() {
		step("stopping the buildkitds, the registry and the index")
		if second != nil {
			if serr := second.Stop(context.WithoutCancel(ctx)); serr != nil && err == nil {
				err = serr
			}
		}
		if serr := env.Stop(context.WithoutCancel(ctx)); serr != nil && err == nil {
			err = serr
		}
	}()
	if err != nil {
		return err
	}
	if second, err = env.StartBuildKit(ctx, "bk2"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "registry %s, buildkitds %s and %s, index %s (ready after %s)\n",
		env.Registry.Host, env.BuildKit.Address(), second.Address(), env.Index.URL, time.Since(t0).Round(100*time.Millisecond))

	step("pushing fixture bases as nvidia/cuda:12.1.1- and 12.2.2-base-ubuntu22.04, and wheels named as PyTorch 2.2 and 2.3's")
	for _, tag := range []string{"nvidia/cuda:12.1.1-base-ubuntu22.04", "nvidia/cuda:12.2.2-base-ubuntu22.04"} {
		if _, err := env.PushBase(ctx, tag); err != nil {
			return err
		}
	}
	if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		return err
	}
	if err := env.TorchWheels("2.2.2", "0.17.2", "2.2.2", "12.1"); err != nil {
		return err
	}

	repo := env.Registry.Host + "/ml/torch"
	file := filepath.Join(dir, "publish.yaml")
	spec := `repository: ` + repo + `
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.1", "12.2"]
  torch: ["2.2", "2.3"]
  python: ["3.7", "3.11"]    # torch 2.2 and 2.3 need Python 3.8 or later: the resolver refuses 3.7
exclude:
  - {cuda: "12.1", torch: "2.2"}
validate: {driver: 535.104.05, gpu: [h100, l4]}
mirrors: [` + env.Registry.Host + `/mirror/torch]
promote: {tags: ["{torch}-cu{cuda_short}", "latest"]}
`
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		return err
	}
	step("publish.yaml")
	fmt.Fprint(os.Stderr, spec)
	if err := gpuimgCmd(ctx, gpuimg, "matrix", "expand", "-f", file, "--matrix-file", env.MatrixFile); err != nil {
		return err
	}
	publishArgs := func(reportDir string, more ...string) []string {
		return append([]string{"publish", "-f", file,
			"--matrix-file", env.MatrixFile,
			"--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL,
			"--builder", env.BuildKit.Address(), "--builder", second.Address(),
			"--report-dir", reportDir, "--progress", "plain"}, more...)
	}
	first, again := filepath.Join(reports, "run1"), filepath.Join(reports, "run2")
	t1 := time.Now()
	if err := gpuimgCmd(ctx, gpuimg, publishArgs(first)...); err != nil {
		return err
	}
	d1 := time.Since(t1)
	step("the same publish again: nothing changed, so nothing is built")
	t2 := time.Now()
	if err := gpuimgCmd(ctx, gpuimg, publishArgs(again, "--since", filepath.Join(first, publish.ReportJSON))...); err != nil {
		return err
	}
	d2 := time.Since(t2)
	rep, err := publish.ReadReport(filepath.Join(again, publish.ReportJSON))
	if err != nil {
		return err
	}
	for _, r := range rep.Results {
		if r.Outcome != publish.Unchanged {
			return fmt.Errorf("second run: %s is %s, want unchanged", r.Variant.Name, r.Outcome)
		}
	}

	step("checking the published tags with skopeo (an independent client)")
	out, err := exec.CommandContext(ctx, "skopeo", "list-tags", "--tls-verify=false", "docker://"+repo).Output()
	if err != nil {
		return fmt.Errorf("skopeo list-tags %s: %w", repo, err)
	}
	fmt.Printf("%s", out)

	fmt.Printf("first run: %s; second run: %d variants unchanged in %s\n", d1.Round(100*time.Millisecond), len(rep.Results), d2.Round(100*time.Millisecond))
	for _, d := range []string{first, again} {
		fmt.Printf("report: %s (also %s, %s, %s)\n", filepath.Join(d, publish.ReportHTML), publish.ReportMarkdown, publish.ReportJSON, publish.ReportJUnit)
	}
	return nil
}

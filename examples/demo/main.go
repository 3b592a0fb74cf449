// Command demo is the README's main job, end to end on one machine: it
// starts a local registry (standing in for Docker Hub), a buildkitd and a
// PEP 503 index, pushes a fixture base image under NVIDIA's tag and
// fixture wheels under PyTorch's names, then runs
//
//	gpuimg build --cuda 12.2 --torch 2.3 … --push
//
// through the mirror flags a team behind a slow link would use, validates
// the pushed image (gpuimg validate), checks it with skopeo, prints its
// digest and stack, and stops everything it started.
//
// gpuimg itself is the binary `make build` writes (-gpuimg, bin/gpuimg by
// default), run as a user would run it.
//
// Run it with `make demo` (as root on Debian 12). A first run on a fresh
// machine takes about 10 minutes: it compiles buildkitd, buildctl, the
// registry and crane from tools/go.mod and makes a Debian root filesystem
// with debootstrap; each slow step says so as it starts. Later runs take
// about 30 seconds.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

func main() {
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary (make build)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *gpuimg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(msg string) { testenv.DemoStep(os.Stderr, msg) }

// gpuimgCmd runs the gpuimg binary with args, its output on ours.
func gpuimgCmd(ctx context.Context, bin string, args ...string) error {
	return testenv.RunGpuimg(ctx, os.Stdout, os.Stderr, bin, args...)
}

func run(ctx context.Context, gpuimg string) (err error) {
	if _, err := os.Stat(gpuimg); err != nil {
		return fmt.Errorf("the gpuimg binary: %w (run make build, or make demo)", err)
	}
	dir, err := os.MkdirTemp("", "gpuimg-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Slow steps (apt-get, compiling the tools, debootstrap) say what they
	// do as they start, and every 30 seconds that they still are.
	ctx = testenv.WithProgress(ctx, os.Stderr)
	step("setting up a registry, buildkitd and a pip index on this machine (first run: about 10 minutes, later runs: seconds)")
	t0 := time.Now()
	// Start needs runc and debootstrap; one apt-get run for all three.
	if err := testenv.EnsurePackages(ctx, "runc", "debootstrap", "skopeo"); err != nil {
		return err
	}
	env, err := testenv.Start(ctx, dir)
	defer func() {
		step("stopping the registry, buildkitd and the index")
		if serr := env.Stop(context.WithoutCancel(ctx)); serr != nil && err == nil {
			err = serr
		}
	}()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "registry %s, buildkitd %s, index %s (ready after %s)\n", env.Registry.Host, env.BuildKit.Address(), env.Index.URL, time.Since(t0).Round(100*time.Millisecond))

	step("pushing the fixture base image as nvidia/cuda:12.2.2-base-ubuntu22.04 and wheels named as PyTorch's")
	if _, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04"); err != nil {
		return err
	}
	if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		return err
	}

	ref := env.Registry.Host + "/gpuimg/demo:cu122-torch2.3"
	if err := gpuimgCmd(ctx, gpuimg, "build", "--cuda", "12.2", "--torch", "2.3",
		"--matrix-file", env.MatrixFile,
		"--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL,
		"--builder", env.BuildKit.Address(),
		"-t", ref, "--push", "--progress", "plain"); err != nil {
		return err
	}
	if err := gpuimgCmd(ctx, gpuimg, "validate", ref, "--driver", "535.104.05", "--gpu", "h100", "--bandwidth", "1Gbps"); err != nil {
		return err
	}

	step("checking the pushed image with skopeo (an independent client)")
	out, err := exec.CommandContext(ctx, "skopeo", "inspect", "--tls-verify=false", "docker://"+ref).Output()
	if err != nil {
		return fmt.Errorf("skopeo inspect %s: %w", ref, err)
	}
	var info struct {
		Digest string
		Labels map[string]string
		Env    []string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return fmt.Errorf("read skopeo inspect %s: %w", ref, err)
	}
	fmt.Printf("skopeo: %s has digest %s\n", ref, info.Digest)
	fmt.Printf("skopeo: base %s@%s\n", info.Labels["org.opencontainers.image.base.name"], info.Labels["org.opencontainers.image.base.digest"])
	for _, e := range info.Env {
		fmt.Printf("skopeo: env %s\n", e)
	}
	fmt.Printf("skopeo: label %s = %s\n", matrix.StackLabel, info.Labels[matrix.StackLabel])

	step("the image's SBOM (gpuimg sbom, CycloneDX 1.6; docs/sbom.md)")
	sbomFile := dir + "/demo.cdx.json"
	if err := gpuimgCmd(ctx, gpuimg, "sbom", ref, "-o", "cyclonedx-json", "--file", sbomFile); err != nil {
		return err
	}
	return printSBOM(sbomFile)
}

// printSBOM prints a few lines of a CycloneDX SBOM: how many components
// of each kind, then the frameworks and CUDA's pieces with their purls.
func printSBOM(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var bom struct {
		Components []struct {
			Type, Name, Version, Purl string
			Properties                []struct{ Name, Value string }
		}
	}
	if err := json.Unmarshal(b, &bom); err != nil {
		return fmt.Errorf("read the SBOM %s: %w", file, err)
	}
	kinds := map[string]int{}
	var shown []string
	for _, c := range bom.Components {
		kind, _, _ := strings.Cut(strings.TrimPrefix(c.Purl, "pkg:"), "/")
		kinds[cmp.Or(kind, c.Type)]++
		if !strings.HasPrefix(c.Purl, "pkg:pypi/torch@") && !strings.HasPrefix(c.Purl, "pkg:pypi/nvidia-cudnn") && !strings.HasPrefix(c.Purl, "pkg:generic/nvidia/") && !strings.HasPrefix(c.Purl, "pkg:oci/") {
			continue
		}
		var props []string
		for _, p := range c.Properties {
			if p.Name == "gpuimg:python:local" || p.Name == "gpuimg:cuda:archs" {
				props = append(props, strings.TrimPrefix(p.Name, "gpuimg:")+"="+p.Value)
			}
		}
		shown = append(shown, strings.TrimSpace(c.Purl+" "+strings.Join(props, " ")))
	}
	var counts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		counts = append(counts, fmt.Sprintf("%d %s", kinds[k], k))
	}
	fmt.Printf("sbom: %d components (%s)\n", len(bom.Components), strings.Join(counts, ", "))
	slices.Sort(shown)
	for _, s := range shown[:min(len(shown), 6)] {
		fmt.Printf("sbom: %s\n", s)
	}
	return nil
}

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
// Run it with `make demo` (as root on Debian 12).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Fprintf(os.Stderr, "\n==> "+format+"\n", args...) }

func run(ctx context.Context) (err error) {
	dir, err := os.MkdirTemp("", "gpuimg-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	step("installing what is missing (runc, debootstrap, skopeo) and starting registry, buildkitd and a pip index")
	if err := testenv.EnsurePackages(ctx, "skopeo"); err != nil {
		return err
	}
	t0 := time.Now()
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
	fmt.Fprintf(os.Stderr, "registry %s, buildkitd %s, index %s (%.1fs)\n", env.Registry.Host, env.BuildKit.Address(), env.Index.URL, time.Since(t0).Seconds())

	step("pushing the fixture base image as nvidia/cuda:12.2.2-runtime-ubuntu22.04 and wheels named as PyTorch's")
	if _, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-runtime-ubuntu22.04"); err != nil {
		return err
	}
	if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		return err
	}

	ref := env.Registry.Host + "/gpuimg/demo:cu122-torch2.3"
	args := []string{"build", "--cuda", "12.2", "--torch", "2.3",
		"--matrix-file", env.MatrixFile,
		"--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL,
		"--builder", env.BuildKit.Address(),
		"-t", ref, "--push", "--progress", "plain"}
	step("gpuimg %v", args)
	if code := cli.Main(ctx, args, os.Stdout, os.Stderr); code != 0 {
		return fmt.Errorf("gpuimg build exited %d", code)
	}

	step("gpuimg validate %s --driver 535.104.05 --gpu h100", ref)
	if code := cli.Main(ctx, []string{"validate", ref, "--driver", "535.104.05", "--gpu", "h100", "--bandwidth", "1Gbps"}, os.Stdout, os.Stderr); code != 0 {
		return fmt.Errorf("gpuimg validate exited %d", code)
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
		return err
	}
	fmt.Printf("skopeo: %s has digest %s\n", ref, info.Digest)
	fmt.Printf("skopeo: base %s@%s\n", info.Labels["org.opencontainers.image.base.name"], info.Labels["org.opencontainers.image.base.digest"])
	for _, e := range info.Env {
		fmt.Printf("skopeo: env %s\n", e)
	}
	fmt.Printf("skopeo: label dev.gpuimg.stack = %s\n", info.Labels["dev.gpuimg.stack"])
	return nil
}

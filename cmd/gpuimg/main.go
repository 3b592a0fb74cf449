// Command gpuimg builds, validates and publishes container images for GPU
// software stacks. See gpuimg --help.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuimg/gpuimg/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

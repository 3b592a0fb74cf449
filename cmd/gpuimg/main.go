// Command gpuimg builds, validates and publishes container images for GPU
// software stacks. See gpuimg --help.
package main

import (
	"context"
	"os"

	"github.com/gpuimg/gpuimg/internal/cli"
)

func main() {
	// SIGINT and SIGTERM cancel ctx; the command cleans up and Main
	// returns 130 or 143.
	ctx, stop := cli.SignalContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

package testenv

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// DemoStep writes a demo's step header ("==> what it does") to w.
func DemoStep(w io.Writer, msg string) {
	fmt.Fprintf(w, "\n==> %s\n", msg)
}

// RunGpuimg runs the gpuimg binary bin with args as a user would, its
// output on stdout and stderr, after a step header naming the command.
func RunGpuimg(ctx context.Context, stdout, stderr io.Writer, bin string, args ...string) error {
	DemoStep(stderr, "gpuimg "+strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gpuimg %s: %w", args[0], err)
	}
	return nil
}

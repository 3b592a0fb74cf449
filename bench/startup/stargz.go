package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// stargzCheck starts one snapshotter to see that it runs here (root,
// /dev/fuse, the tools build); the measurements start a fresh one each.
func stargzCheck(ctx context.Context, dir string) error {
	s, err := testenv.StartStargz(ctx, dir)
	if err != nil {
		return err
	}
	s.Stop()
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("stargz-snapshotter left %s behind", dir)
	}
	return nil
}

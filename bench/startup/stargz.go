package main

import (
	"context"
	"errors"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// stargz runs stargz-snapshotter nodes for the eStargz measurements.
type stargz struct{}

// stargzNode is one running containerd-stargz-grpc.
type stargzNode struct {
	Socket string
}

func (n *stargzNode) Stop() {}

func startStargz(ctx context.Context, dir string) (*stargz, error) {
	return nil, errors.New("stargz-snapshotter is not built here yet")
}

func (s *stargz) Stop() {}

func (s *stargz) fresh(ctx context.Context, dir string) (*stargzNode, error) {
	return nil, errors.New("no stargz-snapshotter")
}

func rpull(ctx context.Context, c *testenv.Containerd, ref string) error {
	return errors.New("no stargz-snapshotter")
}

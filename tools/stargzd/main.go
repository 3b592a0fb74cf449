// Command stargzd runs stargz-snapshotter (github.com/containerd/stargz-snapshotter,
// pinned in tools/go.mod) for gpuimg's startup benchmark, and pulls images
// lazily into it. Upstream's own command (cmd/containerd-stargz-grpc) is a
// separate module that the Go module proxy does not serve, so this is the
// smallest main over the same service package, with default settings.
//
//	stargzd serve -root DIR -address SOCK
//	stargzd rpull -address CONTAINERD_SOCK -namespace NS REF
//
// rpull does what ctr-remote image rpull does: it pulls REF with the
// labels that let the snapshotter mount each eStargz layer lazily from the
// registry (plain HTTP for loopback registries).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	snapshotsapi "github.com/containerd/containerd/api/services/snapshots/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/contrib/snapshotservice"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/stargz-snapshotter/fs/source"
	"github.com/containerd/stargz-snapshotter/service"
	"google.golang.org/grpc"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: stargzd serve|rpull [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "rpull":
		err = rpull(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: use serve or rpull", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stargzd:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	root := fs.String("root", "", "state directory")
	addr := fs.String("address", "", "gRPC socket")
	_ = fs.Parse(args)
	if *root == "" || *addr == "" {
		return fmt.Errorf("serve needs -root and -address")
	}
	sn, err := service.NewStargzSnapshotterService(ctx, *root, &service.Config{})
	if err != nil {
		return fmt.Errorf("start the stargz snapshotter: %w", err)
	}
	defer sn.Close()
	srv := grpc.NewServer()
	snapshotsapi.RegisterSnapshotsServer(srv, snapshotservice.FromSnapshotter(sn))
	_ = os.Remove(*addr)
	l, err := net.Listen("unix", *addr)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); srv.Stop() }()
	return srv.Serve(l)
}

func rpull(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rpull", flag.ExitOnError)
	addr := fs.String("address", "", "containerd's socket")
	ns := fs.String("namespace", "default", "containerd namespace")
	_ = fs.Parse(args)
	if *addr == "" || fs.NArg() != 1 {
		return fmt.Errorf("rpull needs -address and one image reference")
	}
	ref := fs.Arg(0)
	c, err := containerd.New(*addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx = namespaces.WithNamespace(ctx, *ns)
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(docker.MatchLocalhost))})
	_, err = c.Pull(ctx, ref, containerd.WithResolver(resolver), containerd.WithPullUnpack, containerd.WithPullSnapshotter("stargz"),
		containerd.WithImageHandlerWrapper(source.AppendDefaultLabelsHandlerWrapper(ref, 0)))
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	return nil
}

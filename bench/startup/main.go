// Command startup measures how fast a node is ready to work with a gpuimg
// image against the same stack built the way most Dockerfiles do it, on a
// real container runtime (containerd 2, built from tools/go.mod) pulling
// through a loopback proxy that models the network (see Link).
//
// Time to ready is the pull, the unpack and the start command (the user's
// code, which imports each framework) finishing. Scenarios: a cold node; a
// variant switch (the node has variant A, Python 3.13, and starts B, the
// same torch on Python 3.14); a code update (only the user's files
// changed). The fixture stack's wheels and bases have the sizes of what
// they stand for, divided by -scale (docs/startup.md says what stands for
// what).
//
// Run it with `make bench-startup` (as root on Debian 12). The last line
// is machine-readable:
//
//	startup: size 0.NN, cold 0.NN, switch 0.NN, update 0.NN (gpuimg/naive; lower is better)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.Float64Var(&o.scale, "scale", 12, "divide every real size (wheels, runtime libraries, the builder's large-wheel threshold) by this constant; 12 is the smallest the runtime flavor's stand-in (Debian's CUDA 11.8 libraries, 197 MB) can follow")
	flag.IntVar(&o.downloads, "max-concurrent-downloads", 3, "containerd's layers fetched at once per pull (its default is 3)")
	flag.IntVar(&o.unpacks, "max-concurrent-unpacks", 1, "containerd's layers unpacked at once per pull (its default is 1: each layer waits for the one below)")
	flag.IntVar(&o.runs, "runs", 3, "measure each start this many times and report the run with the median time to ready (containerd fetches layers in no fixed order, which moves one cold start by up to 0.2 of naive's)")
	flag.StringVar(&o.scenarios, "scenarios", "cold,switch,update", "the scenarios to measure, comma-separated (a smaller set builds only the variants it needs)")
	flag.BoolVar(&o.stargz, "stargz", true, "also measure eStargz on stargz-snapshotter, when it can run here")
	flag.StringVar(&o.keep, "keep", "", "keep the trace and the report in this directory")
	flag.BoolVar(&o.traceOnly, "trace-only", false, "build gpuimg variant A only, trace its start and stop")
	flag.BoolVar(&o.noCompile, "no-torch-compile", false, "build gpuimg's images with --torch-compile=false (without torch.compile's compiler and headers, 239 MB installed, not scaled), as the figures before 2026-12-07 were; the default is what users get")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	for sc := range strings.SplitSeq(o.scenarios, ",") {
		if !slices.Contains([]string{"cold", "switch", "update"}, sc) {
			fmt.Fprintf(os.Stderr, "bench-startup: -scenarios: unknown scenario %q: use cold, switch and update\n", sc)
			os.Exit(2)
		}
	}
	if o.runs < 1 {
		fmt.Fprintln(os.Stderr, "bench-startup: -runs must be at least 1")
		os.Exit(2)
	}
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-startup:", err)
		os.Exit(1)
	}
}

type options struct {
	scale     float64
	downloads int
	unpacks   int
	runs      int
	scenarios string
	stargz    bool
	keep      string
	traceOnly bool
	// noCompile builds gpuimg's images with --torch-compile=false, as
	// the figures before 2026-12-07 were (without torch.compile's
	// compiler and headers, which every default image carries).
	noCompile bool
}

// wants says whether scenario sc is to be measured.
func (o options) wants(sc string) bool {
	return slices.Contains(strings.Split(o.scenarios, ","), sc)
}

// links are the two networks measured: a cross-border pull and an
// in-region one.
var links = []Link{
	{Name: "100Mbit/s,150ms", Rate: 100e6 / 8, RTT: 150 * time.Millisecond},
	{Name: "1Gbit/s,2ms", Rate: 1e9 / 8, RTT: 2 * time.Millisecond},
}

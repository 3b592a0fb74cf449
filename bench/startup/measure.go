package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// scenario is what the node has (Have, pulled beforehand at full speed,
// not measured) and what it starts.
type scenario struct {
	Name  string
	Have  *variant
	Start variant
}

// result is one measured start.
type result struct {
	Link, Scenario, Kind string
	// Pull is the pull with its unpack (for eStargz: the lazy mount);
	// Run the start command; Took both: the time to ready.
	Pull, Run, Took time.Duration
	// Pulled is what went through the link, registry → node, until ready.
	Pulled int64
}

func execCommand(ctx context.Context, bin string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, bin, args...)
}

// measure starts a fresh node (containerd, and stargz-snapshotter for
// eStargz), gives it sc.Have at full speed, then measures sc.Start
// through the proxy: pull (with unpack) and the start command.
func measure(ctx context.Context, dir string, o options, host string, proxy *Proxy, k *kind, sc scenario) (res result, err error) {
	res = result{Scenario: sc.Name, Kind: k.Name}
	copts := testenv.ContainerdOptions{MaxConcurrentDownloads: o.downloads}
	var sg *testenv.Stargz
	if k.Snapshotter == "stargz" {
		if sg, err = testenv.StartStargz(ctx, filepath.Join(dir, "sg")); err != nil {
			return res, err
		}
		// Stopped after containerd (deferred first, runs last).
		defer sg.Stop()
		copts.ProxySnapshotters = map[string]string{"stargz": sg.Socket}
	}
	c, err := testenv.StartContainerd(ctx, filepath.Join(dir, "ctd"), copts)
	if err != nil {
		return res, err
	}
	defer c.Stop()
	if sc.Have != nil {
		if err := pull(ctx, c, sg, host+"/"+k.refs[sc.Have.Name], k); err != nil {
			return res, err
		}
	}
	ref := proxy.Addr() + "/" + k.refs[sc.Start.Name]
	b0 := proxy.Bytes()
	t0 := time.Now()
	if err := pull(ctx, c, sg, ref, k); err != nil {
		return res, err
	}
	res.Pull = time.Since(t0)
	t1 := time.Now()
	out, err := c.Run(ctx, append([]string{"run", "--rm", "--snapshotter", k.Snapshotter, ref, "start"}, startCommand...)...)
	if err != nil {
		return res, err
	}
	res.Run = time.Since(t1)
	res.Took = time.Since(t0)
	res.Pulled = proxy.Bytes() - b0
	if want := "ready " + torchVersion; !containsLine(string(out), want) {
		return res, fmt.Errorf("start command of %s printed %q, want a line starting %q", ref, out, want)
	}
	return res, nil
}

// pull pulls ref into c and unpacks it for k's snapshotter; eStargz is
// pulled lazily by the stargz helper.
func pull(ctx context.Context, c *testenv.Containerd, sg *testenv.Stargz, ref string, k *kind) error {
	if sg != nil {
		return sg.Pull(ctx, c, ref)
	}
	// Through the transfer service: its max_concurrent_downloads is in
	// containerd's configuration (o.downloads).
	_, err := c.Run(ctx, "images", "pull", "--plain-http", "--snapshotter", k.Snapshotter, ref)
	return err
}

func containsLine(out, prefix string) bool {
	for _, l := range splitLines(out) {
		if len(l) >= len(prefix) && l[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		lines = append(lines, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return lines
}

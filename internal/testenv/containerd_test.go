package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestContainerd pulls a fixture image from one real registry into
// containerds started by StartContainerd and runs containers from it:
// unpacked on overlayfs, and lazily through stargz-snapshotter (its layers
// become FUSE mounts, not unpacked copies).
func TestContainerd(t *testing.T) {
	Require(t, "runs containerd with runc and /dev/fuse, builds tools and a debootstrap rootfs once", Slow, Root)
	ctx := t.Context()
	tools, err := BuildTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rootfs, err := BaseRootfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/tmp", "ctdt-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	reg, err := StartRegistry(ctx, tools.Registry, filepath.Join(dir, "reg"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	ref := reg.Host + "/fixture/debian:bookworm"
	if _, err := PushImage(ctx, rootfs, ref, nil, nil); err != nil {
		t.Fatal(err)
	}

	t.Run("overlayfs", func(t *testing.T) {
		c, err := StartContainerd(ctx, filepath.Join(dir, "ctd"), ContainerdOptions{MaxConcurrentDownloads: 1, MaxConcurrentUnpacks: 2, LogLevel: "debug"})
		if err != nil {
			t.Fatal(err)
		}
		stopped := false
		defer func() {
			if !stopped {
				c.Stop()
			}
		}()
		cfg, err := os.ReadFile(filepath.Join(dir, "ctd", "config.toml"))
		if err != nil || !strings.Contains(string(cfg), "max_concurrent_downloads = 1\n  max_concurrent_unpacks = 2") {
			t.Fatalf("config %s: %v", cfg, err)
		}
		if _, err := c.Run(ctx, "images", "pull", "--plain-http", ref); err != nil {
			t.Fatal(err)
		}
		// At debug level containerd logs each layer it unpacked, with its
		// duration (what bench/startup reads).
		if log, err := os.ReadFile(c.LogPath()); err != nil || !strings.Contains(string(log), `msg="diff applied" d=`) {
			t.Errorf("containerd's debug log has no \"diff applied\" line (%v):\n%s", err, log)
		}
		out, err := c.Run(ctx, "run", "--rm", ref, "t1", "/bin/sh", "-c", "echo ready; cat /etc/debian_version")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(out), "ready\n12.") {
			t.Errorf("container printed %q, want ready and Debian 12's version", out)
		}
		c.Stop()
		stopped = true
		if _, err := os.Stat(filepath.Join(dir, "ctd")); !os.IsNotExist(err) {
			t.Errorf("Stop left %s: %v", filepath.Join(dir, "ctd"), err)
		}
	})

	t.Run("stargz", func(t *testing.T) {
		esRef := reg.Host + "/fixture/debian:estargz"
		if _, err := images.Convert(ctx, ref, esRef, matrix.CompressionEstargz, images.WithPrioritizedFiles("bin/sh")); err != nil {
			t.Fatal(err)
		}
		sg, err := StartStargz(ctx, filepath.Join(dir, "sg"))
		if err != nil {
			t.Fatal(err)
		}
		defer sg.Stop()
		c, err := StartContainerd(ctx, filepath.Join(dir, "ctd-sg"), ContainerdOptions{ProxySnapshotters: map[string]string{"stargz": sg.Socket}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		if err := sg.Pull(ctx, c, esRef); err != nil {
			t.Fatal(err)
		}
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		fuse := 0
		for line := range strings.SplitSeq(string(mi), "\n") {
			if strings.Contains(line, filepath.Join(dir, "sg")) && strings.Contains(line, "fuse") {
				fuse++
			}
		}
		if fuse == 0 {
			t.Errorf("no FUSE mount under %s after the lazy pull: the layer was not mounted lazily", filepath.Join(dir, "sg"))
		}
		out, err := c.Run(ctx, "run", "--rm", "--snapshotter", "stargz", esRef, "t1", "/bin/sh", "-c", "echo ready")
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != "ready\n" {
			t.Errorf("container printed %q, want ready", out)
		}
	})
}

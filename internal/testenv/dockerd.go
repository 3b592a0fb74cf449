package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"net"
)

// Dockerd is a Docker daemon started for tests: its own data root and
// socket, no bridge and no iptables rules, so it leaves nothing behind on
// the host once stopped.
type Dockerd struct {
	// Host is the DOCKER_HOST value (unix://…).
	Host string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartDockerd installs docker.io if needed and starts dockerd under dir
// (keep it short: the socket lives there).
func StartDockerd(ctx context.Context, dir string) (*Dockerd, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("dockerd needs root")
	}
	if err := EnsurePackages(ctx, "docker.io"); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "docker.sock")
	for _, d := range []string{filepath.Join(dir, "root"), filepath.Join(dir, "exec")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("dockerd", "--data-root", filepath.Join(dir, "root"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"), "-H", "unix://"+sock,
		"--bridge=none", "--iptables=false", "--ip6tables=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start dockerd: %w", err)
	}
	d := &Dockerd{Host: "unix://" + sock, dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(d.done) }()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}, Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := client.Get("http://docker/_ping"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d, nil
			}
		}
		select {
		case <-d.done:
			b, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			return nil, fmt.Errorf("dockerd exited at start: %s", tail(b, 1500))
		case <-ctx.Done():
			d.Stop()
			return nil, context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Stop()
			return nil, fmt.Errorf("dockerd did not answer within 60s")
		}
	}
}

// Stop stops dockerd (and the containerd it started) by PID and removes
// its state.
func (d *Dockerd) Stop() {
	if d == nil {
		return
	}
	stopByPID(d.cmd, d.done, 20*time.Second, true)
	_ = os.RemoveAll(d.dir)
}

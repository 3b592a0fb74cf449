package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Registry is a distribution registry on 127.0.0.1 with filesystem storage.
type Registry struct {
	// Host is host:port, e.g. 127.0.0.1:41234.
	Host string
	cmd  *exec.Cmd
	done chan struct{}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RegistryOptions add TLS and htpasswd authentication to a registry.
type RegistryOptions struct {
	// TLSCert and TLSKey serve HTTPS (for 127.0.0.1).
	TLSCert, TLSKey string
	// Htpasswd is an htpasswd file (bcrypt) that turns on basic auth.
	Htpasswd string
}

// StartRegistry starts the registry binary with its storage under dir.
func StartRegistry(ctx context.Context, bin, dir string, opts ...RegistryOptions) (*Registry, error) {
	var o RegistryOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "data"), host)
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", o.TLSCert, o.TLSKey)
	}
	if o.Htpasswd != "" {
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: gpuimg-test\n    path: %s\n", o.Htpasswd)
	}
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start registry: %w", err)
	}
	r := &Registry{Host: host, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(r.done) }()
	deadline := time.Now().Add(20 * time.Second)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // readiness probe only
	for {
		resp, err := client.Get(scheme + "://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return r, nil
			}
		}
		select {
		case <-r.done:
			b, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			return nil, fmt.Errorf("registry exited at start: %s", b)
		case <-ctx.Done():
			r.Stop()
			return nil, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("registry on %s did not answer within 20s", host)
		}
	}
}

// Stop kills the registry by PID and waits for it.
func (r *Registry) Stop() {
	if r == nil || r.cmd.Process == nil {
		return
	}
	stopByPID(r.cmd, r.done, 5*time.Second, false)
}

// stopByPID sends cmd's process SIGTERM and waits for done (closed when
// cmd.Wait returns); after grace it sends SIGKILL, to the process group
// when group is set (the daemon's children too), and waits again.
func stopByPID(cmd *exec.Cmd, done <-chan struct{}, grace time.Duration, group bool) {
	pid := cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		if group {
			pid = -pid
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-done
	}
}

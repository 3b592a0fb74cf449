package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Podman is Debian's podman configured for a test: its own storage under a
// directory of the test's, cgroupfs (no systemd needed), and ulimits a
// container may set inside a sandbox. Env holds the variables that point
// podman, and every gpuimg that runs it, at that configuration.
type Podman struct {
	Env     []string
	dir     string
	madeRun bool // /run/containers did not exist before
}

// StartPodman installs podman if needed and writes its configuration
// under dir. Nothing runs until a command does; Stop removes what podman
// stored.
func StartPodman(ctx context.Context, dir string) (*Podman, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("podman tests need root")
	}
	if err := EnsurePackages(ctx, "podman"); err != nil {
		return nil, err
	}
	storage := filepath.Join(dir, "storage.conf")
	conf := filepath.Join(dir, "containers.conf")
	files := map[string]string{
		storage: fmt.Sprintf("[storage]\ndriver = \"overlay\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "root"), filepath.Join(dir, "run")),
		// podman asks for nofile 1048576 by default, more than a sandbox's
		// hard limit may allow.
		// Every directory podman keeps state in lies under dir, so that
		// Stop's reset touches nothing of the host's own podman.
		conf: fmt.Sprintf("[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n\n"+
			"[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\nevents_logfile_path = %q\ntmp_dir = %q\nstatic_dir = %q\nvolume_path = %q\n\n"+
			"[network]\nnetwork_config_dir = %q\n",
			filepath.Join(dir, "events.log"), filepath.Join(dir, "tmp"), filepath.Join(dir, "static"), filepath.Join(dir, "volumes"), filepath.Join(dir, "networks")),
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			return nil, err
		}
	}
	_, err := os.Stat("/run/containers")
	return &Podman{Env: []string{"CONTAINERS_STORAGE_CONF=" + storage, "CONTAINERS_CONF=" + conf}, dir: dir, madeRun: os.IsNotExist(err)}, nil
}

// Command is podman with the test's configuration.
func (p *Podman) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env = append(os.Environ(), p.Env...)
	return cmd
}

// Stop removes every container, image and mount podman made, then its
// directory.
func (p *Podman) Stop() {
	_ = p.Command(context.Background(), "system", "reset", "--force").Run()
	_ = os.RemoveAll(p.dir)
	if p.madeRun {
		// netavark makes /run/containers/networks whatever the
		// configuration says; remove it if it is ours and empty.
		_ = os.Remove("/run/containers/networks")
		_ = os.Remove("/run/containers")
	}
}

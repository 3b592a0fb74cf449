package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
)

// Env is a running build environment: a registry standing in for Docker
// Hub (buildkitd and gpuimg reach it through --registry-mirror), a
// buildkitd started by builder.Local, a PEP 503 index of wheels, and an
// apt repository standing in for Debian's archive, which every base image
// it pushes names as its only apt source.
type Env struct {
	Dir      string
	Tools    Tools
	Registry *Registry
	BuildKit *builder.Local
	Index    *Index
	// AptRepo serves AptRepoDir on loopback; the bases the Env pushes
	// (PushBase, PushBasePythonless, …) have it as their only apt source.
	AptRepo *AptRepo
	// WheelDir is what Index serves; add wheels with Wheel.
	WheelDir string
	// MatrixFile adjusts the matrix to the fixtures: the Debian bookworm
	// rootfs standing in for ubuntu22.04 has Python 3.11.
	MatrixFile string
	rootfs     string
	// view is set on an Env made by View: Stop then stops only what the
	// view opened.
	view bool
}

// fixtureMatrix describes the fixture base images truthfully.
const fixtureMatrix = `# The test environment's base images are Debian bookworm root filesystems
# pushed under NVIDIA's tag names; this file tells the resolver what is
# really in them.
sources:
  - id: gpuimg-testenv
    title: gpuimg test environment (Debian bookworm rootfs standing in for nvidia/cuda ubuntu22.04 images)
    url: https://github.com/gpuimg/gpuimg/tree/main/internal/testenv
os:
  - name: ubuntu22.04
    family: ubuntu
    pythons: ["3.11"]
    source: gpuimg-testenv
# The index's torch twins are built for x86_64 and aarch64 (TorchWheels), so
# the multi-platform builds may use releases the real upstream serves for
# linux/amd64 only.
cuda_platforms:
  - framework: torch
    versions: "<2.5"
    platforms: [linux/amd64, linux/arm64]
    source: gpuimg-testenv
`

// Start starts a registry, a buildkitd, an index and an apt repository
// under dir (keep dir short: buildkitd's socket lives there). Call Stop
// when done, also on error.
func Start(ctx context.Context, dir string) (*Env, error) {
	e := &Env{Dir: dir}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the build environment needs root (buildkitd with runc)")
	}
	if err := EnsurePackages(ctx, "runc", "debootstrap"); err != nil {
		return nil, err
	}
	var err error
	if e.Tools, err = BuildTools(ctx); err != nil {
		return nil, err
	}
	if e.rootfs, err = BaseRootfs(ctx); err != nil {
		return nil, err
	}
	aptDir, err := AptRepoDir(ctx)
	if err != nil {
		return nil, err
	}
	if e.AptRepo, err = ServeAptRepo(aptDir); err != nil {
		return nil, err
	}
	done := startStep(ctx, "starting the registry", "distribution on 127.0.0.1, standing in for Docker Hub")
	e.Registry, err = StartRegistry(ctx, e.Tools.Registry, filepath.Join(dir, "registry"))
	done()
	if err != nil {
		return e, err
	}
	e.BuildKit = &builder.Local{
		StateDir:  filepath.Join(dir, "bk"),
		Buildkitd: e.Tools.Buildkitd,
		Mirrors:   images.Mirrors{"index.docker.io": e.Registry.Host},
	}
	done = startStep(ctx, "starting buildkitd", "through builder.Local, as gpuimg build would (a few seconds)")
	c, err := e.BuildKit.Ensure(ctx)
	done()
	if err != nil {
		return e, err
	}
	c.Close()
	e.WheelDir = filepath.Join(dir, "wheels")
	if err := os.MkdirAll(e.WheelDir, 0o755); err != nil {
		return e, err
	}
	if e.Index, err = ServeIndex(e.WheelDir); err != nil {
		return e, err
	}
	e.MatrixFile = filepath.Join(dir, "fixture-matrix.yaml")
	if err := os.WriteFile(e.MatrixFile, []byte(fixtureMatrix), 0o644); err != nil {
		return e, err
	}
	return e, nil
}

// View is e for one test among several that share it: the same
// registry, apt repository, buildkitd and tools, with its own directory
// dir (where StartBuildKit puts the test's extra daemons, so their
// names never meet another test's) and its own wheel directory and index
// under it, so the wheels one test writes are not another's to resolve.
// Stop on the view closes its index and unmounts below dir; the shared
// daemons keep running until e.Stop.
func (e *Env) View(dir string) (*Env, error) {
	v := *e
	v.view = true
	v.Dir = dir
	v.WheelDir = filepath.Join(dir, "wheels")
	if err := os.MkdirAll(v.WheelDir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if v.Index, err = ServeIndex(v.WheelDir); err != nil {
		return nil, err
	}
	return &v, nil
}

// StartBuildKit starts one more buildkitd through builder.Local, with its
// own state directory (and socket) e.Dir/name and the Env's mirror, for a
// pool of builders; each of opts changes the Local before it starts (a
// Path with emulators). The caller stops it (Stop, by PID); Env.Stop does
// not.
func (e *Env) StartBuildKit(ctx context.Context, name string, opts ...func(*builder.Local)) (*builder.Local, error) {
	l := &builder.Local{
		StateDir:  filepath.Join(e.Dir, name),
		Buildkitd: e.Tools.Buildkitd,
		Mirrors:   images.Mirrors{"index.docker.io": e.Registry.Host},
	}
	for _, o := range opts {
		o(l)
	}
	done := startStep(ctx, "starting buildkitd "+name, "through builder.Local, a builder of its own (a few seconds)")
	c, err := l.Ensure(ctx)
	done()
	if err != nil {
		_ = l.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start buildkitd %s: %w", name, err)
	}
	c.Close()
	return l, nil
}

// PushBaseLabeled pushes the fixture rootfs as tag, as PushBase does, with
// labels in its config: the same tag then names an image of another
// digest, as when an upstream base image moves.
func (e *Env) PushBaseLabeled(ctx context.Context, tag string, labels map[string]string) (string, error) {
	repo, version, _ := strings.Cut(tag, ":")
	return pushImage(ctx, e.rootfs, e.Registry.Host+"/"+repo+":"+version, baseEnv(version), labels, e.AptRepo)
}

// Mirror is the --registry-mirror value that reaches the fixture registry.
func (e *Env) Mirror() string { return "docker.io=" + e.Registry.Host }

// PushBase pushes the fixture rootfs as tag (nvidia/cuda:12.2.2-base-ubuntu22.04)
// to the registry standing in for Docker Hub, with NVIDIA's environment
// and the Env's apt repository as its apt source.
func (e *Env) PushBase(ctx context.Context, tag string) (string, error) {
	repo, version, _ := strings.Cut(tag, ":")
	return pushImage(ctx, e.rootfs, e.Registry.Host+"/"+repo+":"+version, baseEnv(version), nil, e.AptRepo)
}

// PushBasePythonless pushes a base without Python (PythonlessRootfs), as
// NVIDIA's Ubuntu bases are, as tag, with NVIDIA's environment like
// PushBase: gpuimg's build then installs Python (and torch.compile's
// compiler) with apt, from the Env's apt repository.
func (e *Env) PushBasePythonless(ctx context.Context, tag string) (string, error) {
	rootfs, err := PythonlessRootfs(ctx)
	if err != nil {
		return "", err
	}
	repo, version, _ := strings.Cut(tag, ":")
	return pushImage(ctx, rootfs, e.Registry.Host+"/"+repo+":"+version, baseEnv(version), nil, e.AptRepo)
}

// TorchWheels writes wheels for torch, torchvision and torchaudio as the
// CUDA variant cuda (12.1) would ship them, for CPython 3.11 on Linux:
// real names, real version labels (+cu121), and torch/version.py with its
// cuda line, which is what gpuimg's install check reads. machine is the
// wheels' platform (x86_64, the default, or aarch64).
func (e *Env) TorchWheels(torch, vision, audio, cuda string, machine ...string) error {
	local := "+cu" + strings.ReplaceAll(cuda, ".", "")
	tag := "cp311-cp311-linux_x86_64"
	if len(machine) > 0 {
		tag = "cp311-cp311-linux_" + machine[0]
	}
	if _, err := Wheel(e.WheelDir, "torch", torch+local, tag, map[string]string{
		"torch/__init__.py": "from .version import __version__\n",
		"torch/version.py":  fmt.Sprintf("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n__version__ = '%s%s'\ndebug = False\ncuda: Optional[str] = '%s'\ngit_version = 'gpuimg-testenv'\nhip: Optional[str] = None\n", torch, local, cuda),
	}); err != nil {
		return err
	}
	if _, err := Wheel(e.WheelDir, "torchvision", vision+local, tag, map[string]string{"torchvision/__init__.py": fmt.Sprintf("__version__ = '%s%s'\n", vision, local)}); err != nil {
		return err
	}
	_, err := Wheel(e.WheelDir, "torchaudio", audio+local, tag, map[string]string{"torchaudio/__init__.py": fmt.Sprintf("__version__ = '%s%s'\n", audio, local)})
	return err
}

// Stop stops everything Start started (on a View: what View opened), by PID, unmounts what is still
// mounted below e.Dir, and removes the daemon's state (buildkitd is
// stopped first). Stop the buildkitds of StartBuildKit before.
func (e *Env) Stop(ctx context.Context) error {
	if e == nil {
		return nil
	}
	var firstErr error
	if e.Index != nil {
		_ = e.Index.Close()
	}
	if e.view {
		unmountUnder(e.Dir)
		return nil
	}
	_ = e.AptRepo.Close()
	if e.BuildKit != nil {
		if err := e.BuildKit.Stop(ctx); err != nil {
			firstErr = err
		}
	}
	e.Registry.Stop()
	// A buildkitd killed mid-build (the faults test does it on purpose)
	// leaves its build container's root filesystem mounted, which its
	// restart does not unmount: without this, each run left one overlay
	// mount, and its directory, behind.
	unmountUnder(e.Dir)
	if firstErr == nil && e.BuildKit != nil {
		if err := os.RemoveAll(e.BuildKit.StateDir); err != nil {
			firstErr = err
		}
	}
	return firstErr
}

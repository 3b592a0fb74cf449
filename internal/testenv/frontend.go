package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/builder"
)

// frontendPkg is BuildKit's Dockerfile frontend as a gateway program,
// what the docker/dockerfile images run.
const frontendPkg = "github.com/moby/buildkit/frontend/dockerfile/cmd/dockerfile-frontend"

// frontendLabels are the labels the docker/dockerfile images carry
// (frontend/dockerfile/cmd/dockerfile-frontend/Dockerfile of BuildKit):
// the frontend needs no network, and the capabilities clients (buildx)
// check before they pass named contexts and inputs.
var frontendLabels = map[string]string{
	"moby.buildkit.frontend.network.none": "true",
	"moby.buildkit.frontend.caps":         "moby.buildkit.frontend.inputs,moby.buildkit.frontend.subrequests,moby.buildkit.frontend.contexts,moby.buildkit.frontend.gitquerystring,moby.buildkit.frontend.contexts.zstd",
}

// PushDockerfileFrontend builds BuildKit's Dockerfile frontend (of the
// BuildKit pinned in tools/go.mod, static) and pushes it as the image the
// generated Dockerfiles' "# syntax=" line names (builder.DockerfileSyntax,
// docker/dockerfile:1.17) to the registry standing in for Docker Hub, laid
// out as the published image is (/bin/dockerfile-frontend, its entrypoint
// and labels). A build that forwards to the line's frontend, as docker
// buildx does, then runs offline. The binary is kept in CacheDir (the
// first build compiles BuildKit's Dockerfile frontend: minutes).
func (e *Env) PushDockerfileFrontend(ctx context.Context) error {
	bin, err := frontendBinary(ctx)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "bin/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/dockerfile-frontend", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Config.Entrypoint = []string{"/bin/dockerfile-frontend"}
	cfg.Config.Labels = frontendLabels
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	ref := e.Registry.Host + "/" + strings.TrimPrefix(builder.DockerfileSyntax, "docker.io/")
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("push the Dockerfile frontend as %s: %w", ref, err)
	}
	return nil
}

// frontendBinary builds the Dockerfile frontend from tools/go.mod into
// CacheDir, unless it is there, and returns its path.
func frontendBinary(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	mod, err := os.ReadFile(filepath.Join(root, "tools", "go.sum"))
	if err != nil {
		return "", err
	}
	// Named after tools/go.sum's digest: a new pin builds a new binary.
	sum := sha256.Sum256(mod)
	bin := filepath.Join(CacheDir(), fmt.Sprintf("dockerfile-frontend-%x", sum[:6]))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	done := startStep(ctx, "compiling BuildKit's Dockerfile frontend", "from tools/go.mod into "+CacheDir()+", once (minutes on two cores)")
	defer done()
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, frontendPkg)
	cmd.Dir = filepath.Join(root, "tools")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the Dockerfile frontend from tools/go.mod: %w\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin)
}

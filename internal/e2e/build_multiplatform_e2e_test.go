package e2e

import (
	"archive/tar"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// ELF machine numbers (e_machine).
const (
	elfX86_64  = 62
	elfAArch64 = 183
)

// TestBuildMultiPlatform builds one stack for linux/amd64 and linux/arm64
// with the real CLI on a real buildkitd and checks the pushed index: both
// platforms, each config's architecture, and arm64 machine code in the
// arm64 image. The arm64 build steps really run, under QEMU user-mode
// emulation that BuildKit starts itself (buildkit-qemu-aarch64 on
// buildkitd's PATH, built by testenv.Emulator): no binfmt_misc
// registration, nothing global on the host. The base is a manifest list of
// an amd64 and an arm64 Debian rootfs, which gpuimg must pin by the list's
// digest.
func TestBuildMultiPlatform(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its buildkitd finds the emulator through builder.Local's
	// Path, not the process's PATH, and its environment is its own.
	t.Parallel()
	ctx := t.Context()
	start := time.Now()
	if err := testenv.EnsurePackages(ctx, "skopeo"); err != nil {
		t.Fatal(err)
	}
	emu, err := testenv.Emulator(ctx)
	if errors.Is(err, testenv.ErrEmulatorDeps) {
		t.Skipf("this machine cannot emulate arm64: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	arm64Rootfs, err := testenv.ForeignRootfs(ctx, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fixtures (emulator, arm64 rootfs) ready in %s", time.Since(start).Round(time.Second))

	env := ownEnv(t, "gm-")
	// A buildkitd started by builder.Local, as gpuimg starts it, with the
	// emulator's directory before its PATH (Local.Path).
	bk, err := env.StartBuildKit(ctx, "emu", func(l *builder.Local) { l.Path = []string{emu} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bk.Stop(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("stop buildkitd: %v", err)
		}
	})
	const baseTag = "nvidia/cuda:12.2.2-base-ubuntu22.04"
	baseIndex, err := env.PushBaseIndex(ctx, baseTag, map[string]string{"arm64": arm64Rootfs})
	if err != nil {
		t.Fatal(err)
	}
	for _, machine := range []string{"x86_64", "aarch64"} {
		if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1", machine); err != nil {
			t.Fatal(err)
		}
	}

	ref := env.Registry.Host + "/gpuimg/multi:cu122-torch2.3"
	buildStart := time.Now()
	// --torch-compile=false: the fixture bases have no gcc or Python
	// headers, the Env's apt repository holds amd64 packages only, and
	// the arm64 base's packages are unpacked, never configured, so apt
	// could not install torch.compile's there (its packages are checked
	// on the rendered steps, builder's TestDockerfileTorchCompile, and
	// installed on amd64 by TestBuildPythonlessReproducible).
	out, errOut, code := run(t, "build", "--cuda", "12.2", "--torch", "2.3", "--torch-compile=false",
		"--platform", "linux/amd64,linux/arm64",
		"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
		"--pip-index-url", env.Index.URL, "--builder", bk.Address(),
		"-t", ref, "--push", "--progress", "plain", "-o", "json")
	if code != 0 {
		t.Fatalf("gpuimg build --platform linux/amd64,linux/arm64 exited %d:\n%s", code, lastLines(errOut, 40))
	}
	t.Logf("multi-platform build took %s (total so far %s)", time.Since(buildStart).Round(time.Second), time.Since(start).Round(time.Second))
	var res struct{ Digest string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
		t.Fatalf("result %q: %v", out, err)
	}
	if !strings.Contains(errOut, "[linux/arm64") {
		t.Errorf("the progress shows no linux/arm64 steps:\n%s", lastLines(errOut, 40))
	}

	t.Run("the tag is an index of both platforms", func(t *testing.T) {
		raw, err := exec.CommandContext(ctx, "skopeo", "inspect", "--raw", "--tls-verify=false", "docker://"+ref).Output()
		if err != nil {
			t.Fatalf("skopeo inspect --raw: %v", err)
		}
		var idx v1.IndexManifest
		must(t, json.Unmarshal(raw, &idx))
		if !idx.MediaType.IsIndex() {
			t.Fatalf("media type %s, want an index:\n%s", idx.MediaType, raw)
		}
		digest, err := exec.CommandContext(ctx, env.Tools.Crane, "--insecure", "digest", ref).Output()
		must(t, err)
		if got := strings.TrimSpace(string(digest)); got != res.Digest {
			t.Errorf("the tag's digest is %s, gpuimg said %s", got, res.Digest)
		}
		var platforms []string
		for _, m := range idx.Manifests {
			if m.Platform != nil && m.Platform.OS != "unknown" {
				platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
			}
		}
		if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
			t.Errorf("index platforms %v, want linux/amd64 and linux/arm64", platforms)
		}
	})

	for _, tc := range []struct {
		platform, arch string
		machine        uint16
		wheel          string
	}{
		{"linux/amd64", "amd64", elfX86_64, "cp311-cp311-linux_x86_64"},
		{"linux/arm64", "arm64", elfAArch64, "cp311-cp311-linux_aarch64"},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			cfgJSON, err := exec.CommandContext(ctx, env.Tools.Crane, "--insecure", "config", "--platform", tc.platform, ref).Output()
			if err != nil {
				t.Fatalf("crane config --platform %s: %v", tc.platform, err)
			}
			var cfg v1.ConfigFile
			must(t, json.Unmarshal(cfgJSON, &cfg))
			if cfg.Architecture != tc.arch || cfg.OS != "linux" {
				t.Errorf("config says %s/%s", cfg.OS, cfg.Architecture)
			}
			if got := cfg.Config.Labels["org.opencontainers.image.base.digest"]; got != baseIndex {
				t.Errorf("base.digest label %q, want the base index %s", got, baseIndex)
			}

			r, err := name.ParseReference(ref, name.Insecure)
			must(t, err)
			pl, err := v1.ParsePlatform(tc.platform)
			must(t, err)
			img, err := remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(*pl))
			must(t, err)
			fs := readFS(t, img)
			for _, p := range []string{"/opt/venv/bin/python3", "/usr/bin/python3"} {
				target, head := fs.resolve(t, p)
				if len(head) < 20 || string(head[:4]) != "\x7fELF" {
					t.Errorf("%s → %s is not an ELF file", p, target)
					continue
				}
				if m := binary.LittleEndian.Uint16(head[18:20]); m != tc.machine {
					t.Errorf("%s → %s has ELF machine %d, want %d (%s)", p, target, m, tc.machine, tc.arch)
				}
			}
			wheel, ok := fs.text["/opt/venv/lib/python3.11/site-packages/torch-2.3.1+cu121.dist-info/WHEEL"]
			if !ok || !strings.Contains(wheel, "Tag: "+tc.wheel) {
				t.Errorf("torch's WHEEL %q, want Tag: %s", wheel, tc.wheel)
			}
		})
	}

	t.Run("dockerfile-only pins the base by its index digest", func(t *testing.T) {
		out, errOut, code := run(t, "build", "--cuda", "12.2", "--torch", "2.3", "--platform", "linux/amd64,linux/arm64",
			"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(), "--dockerfile-only")
		if code != 0 {
			t.Fatal(errOut)
		}
		if !strings.Contains(out, "FROM "+env.Registry.Host+"/"+baseTag+"@"+baseIndex) {
			t.Errorf("FROM is not pinned to the index %s:\n%s", baseIndex, out)
		}
	})
	t.Logf("TestBuildMultiPlatform took %s", time.Since(start).Round(time.Second))
}

// layerFS is what an image's layers leave at each path: symlink targets and
// the first bytes of regular files (all of small text files).
type layerFS struct {
	link map[string]string
	head map[string][]byte
	text map[string]string
}

func readFS(t *testing.T, img v1.Image) *layerFS {
	t.Helper()
	fs := &layerFS{link: map[string]string{}, head: map[string][]byte{}, text: map[string]string{}}
	eachEntry(t, img, func(_ int, h *tar.Header, r io.Reader) {
		p := path.Clean("/" + h.Name)
		delete(fs.link, p)
		delete(fs.head, p)
		delete(fs.text, p)
		switch h.Typeflag {
		case tar.TypeSymlink:
			fs.link[p] = h.Linkname
		case tar.TypeLink:
			fs.link[p] = "/" + path.Clean(h.Linkname)
		case tar.TypeReg:
			b := make([]byte, 64)
			n, _ := io.ReadFull(r, b)
			fs.head[p] = b[:n]
			if strings.HasSuffix(p, ".dist-info/WHEEL") {
				rest, err := io.ReadAll(r)
				must(t, err)
				fs.text[p] = string(b[:n]) + string(rest)
			}
		}
	})
	return fs
}

// resolve follows symlinks, in every component, to a regular file and
// returns its path and first bytes.
func (fs *layerFS) resolve(t *testing.T, p string) (string, []byte) {
	t.Helper()
	for range 40 {
		parts := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
		cur, moved := "/", false
		for i, part := range parts {
			cur = path.Join(cur, part)
			target, ok := fs.link[cur]
			if !ok {
				continue
			}
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(cur), target)
			}
			p, moved = path.Join(append([]string{target}, parts[i+1:]...)...), true
			break
		}
		if !moved {
			head, ok := fs.head[p]
			if !ok {
				t.Fatalf("%s is not in the image", p)
			}
			return p, head
		}
	}
	t.Fatalf("%s: too many symlinks", p)
	return "", nil
}

package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// TestBuildEndToEnd builds CUDA 12.2 + PyTorch 2.3 on a real buildkitd,
// through the mirror flags, pushes it to a real registry, and checks the
// result with skopeo and by reading every layer. It needs root (buildkitd
// runs containers with runc) and Debian's package mirror (debootstrap
// makes the fixture base image once; it is cached).
func TestBuildEndToEnd(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its environment (registry, buildkitd, index, files) is its
	// own; the process environment it sets is named below.
	t.Parallel()
	ctx := t.Context()
	if err := testenv.EnsurePackages(ctx, "skopeo"); err != nil {
		t.Fatal(err)
	}
	env := ownEnv(t, "gi-")
	baseDigest, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Wheel(env.WheelDir, "gpuimg-req", "2.0", "py3-none-any", map[string]string{"gpuimg_req/__init__.py": "VERSION = '2.0'\n"}); err != nil {
		t.Fatal(err)
	}
	// NCCL as the CUDA torch wheels bring it (nvidia-nccl-cu12, the pin
	// of torch 2.3.1+cu121): --fabric infiniband's checks read its
	// version from the dist-info.
	if _, err := testenv.Wheel(env.WheelDir, "nvidia-nccl-cu12", "2.20.5", "py3-none-any", map[string]string{"nvidia/nccl/__init__.py": ""}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0", "1.1"} {
		if _, err := testenv.Wheel(env.WheelDir, "gpuimg-extra", v, "py3-none-any", map[string]string{"gpuimg_extra/__init__.py": "VERSION = '" + v + "'\n"}); err != nil {
			t.Fatal(err)
		}
	}

	// The user's project: a file to copy, secrets that must not leak.
	proj := t.TempDir()
	must(t, os.WriteFile(filepath.Join(proj, "app.py"), []byte("print('hello from gpuimg')\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte("gpuimg-req==2.0\n"), 0o644))
	const netrcSecret, indexSecret = "S3CRET-NETRC-7f3a", "S3CRET-INDEX-91bc"
	netrc := filepath.Join(t.TempDir(), "netrc")
	must(t, os.WriteFile(netrc, []byte("machine 127.0.0.1 login ci password "+netrcSecret+"\n"), 0o600))
	index := strings.Replace(env.Index.URL, "http://", "http://ci:"+indexSecret+"@", 1)
	// Every --secret kind: a file and an environment variable, in token
	// formats the secrets check knows.
	const hfSecret, envSecret = "hf_S3cretHuggingFaceToken0123456789ab", "ghp_S3cretGitHubToken0123456789abcdefgh"
	hfFile := filepath.Join(t.TempDir(), "hf_token")
	must(t, os.WriteFile(hfFile, []byte(hfSecret), 0o600))
	// os.Setenv, not t.Setenv: the test runs in parallel, and no other test
	// reads this variable.
	os.Setenv("GPUIMG_E2E_GH_TOKEN", envSecret) //nolint:usetesting // t.Setenv panics in a parallel test
	t.Cleanup(func() { os.Unsetenv("GPUIMG_E2E_GH_TOKEN") })
	allSecrets := []string{netrcSecret, indexSecret, hfSecret, envSecret}

	ref := env.Registry.Host + "/gpuimg/e2e:cu122-torch2.3"
	// --torch-compile=false: torch.compile's gcc and headers add about 14 s
	// to a cold build and 2 s to a cached one on 2 cores (apt in the plan
	// stage and in the image, a 239 MB larger layer to export and
	// rewrite), on each of this test's builds;
	// TestBuildPythonlessReproducible installs them end to end.
	buildArgs := func(extra string, more ...string) []string {
		args := []string{"build", "--cuda", "12.2", "--torch", "2.3", "--torch-compile=false",
			"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
			"--pip-index-url", index, "--builder", env.BuildKit.Address(),
			"--fabric", "infiniband",
			"--context", proj, "--copy", "app.py:/app/app.py", "--pip", "gpuimg-extra==" + extra, "--pip", "nvidia-nccl-cu12==2.20.5", "--requirements", "requirements.txt",
			"--env", "HF_HOME=/cache/hf", "--workdir", "/app", "--entrypoint", `["python","/app/app.py"]`,
			"--secret", "id=netrc,src=" + netrc, "--secret", "id=hf,src=" + hfFile, "--secret", "id=gh,env=GPUIMG_E2E_GH_TOKEN",
			"--progress", "plain", "-o", "json"}
		return append(args, more...)
	}
	build := func(t *testing.T, args ...string) (digest, progress string) {
		t.Helper()
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("gpuimg build exited %d:\n%s", code, lastLines(errOut, 30))
		}
		var res struct{ Digest string }
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
			t.Fatalf("result %q: %v", out, err)
		}
		return res.Digest, errOut
	}

	digest, firstProgress := build(t, buildArgs("1.0", "-t", ref, "--push")...)
	for _, s := range allSecrets {
		if strings.Contains(firstProgress, s) {
			t.Errorf("secret %s is in gpuimg build's output", s)
		}
	}

	t.Run("skopeo sees labels, env and the digest-pinned base", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, "skopeo", "inspect", "--tls-verify=false", "docker://"+ref).Output()
		if err != nil {
			t.Fatalf("skopeo inspect: %v", err)
		}
		var info struct {
			Digest string
			Labels map[string]string
			Env    []string
		}
		must(t, json.Unmarshal(out, &info))
		if info.Digest != digest {
			t.Errorf("skopeo digest %s, gpuimg said %s", info.Digest, digest)
		}
		if got := info.Labels["org.opencontainers.image.base.digest"]; got != baseDigest {
			t.Errorf("base.digest label %q, pushed base is %s", got, baseDigest)
		}
		if got := info.Labels["org.opencontainers.image.base.name"]; got != "docker.io/nvidia/cuda:12.2.2-base-ubuntu22.04" {
			t.Errorf("base.name label %q", got)
		}
		for _, k := range []string{"org.opencontainers.image.created", "org.opencontainers.image.version"} {
			if info.Labels[k] == "" {
				t.Errorf("label %s missing", k)
			}
		}
		var stack matrix.Stack
		if err := json.Unmarshal([]byte(info.Labels["dev.gpuimg.stack"]), &stack); err != nil {
			t.Fatalf("dev.gpuimg.stack: %v", err)
		}
		if stack.CUDA != "12.2.2" || stack.Frameworks["torch"].Version != "2.3.1" || stack.Frameworks["torch"].CUDA != "12.1" || stack.RequireCUDA != "cuda>=12.2" {
			t.Errorf("stack label = %+v", stack)
		}
		envs := strings.Join(info.Env, "\n")
		for _, want := range []string{"CUDA_VERSION=12.2.2", "NVIDIA_REQUIRE_CUDA=cuda>=12.2", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "HF_HOME=/cache/hf", "PATH=/opt/venv/bin:"} {
			if !strings.Contains(envs, want) {
				t.Errorf("env lacks %s:\n%s", want, envs)
			}
		}
	})

	t.Run("unpacked image has the pinned wheels and no secrets", func(t *testing.T) {
		r, err := name.ParseReference(ref, name.Insecure)
		must(t, err)
		img, err := remote.Image(r, remote.WithContext(ctx))
		must(t, err)
		cfg, err := img.RawConfigFile()
		must(t, err)
		mf, err := img.RawManifest()
		must(t, err)
		for _, s := range allSecrets {
			if bytes.Contains(cfg, []byte(s)) || bytes.Contains(mf, []byte(s)) {
				t.Errorf("secret %s is in the image config, history or manifest", s)
			}
		}
		files := map[string]string{}
		eachEntry(t, img, func(i int, h *tar.Header, r io.Reader) {
			b, err := io.ReadAll(r)
			must(t, err)
			for _, s := range allSecrets {
				if bytes.Contains(b, []byte(s)) || strings.Contains(h.Name, s) {
					t.Errorf("secret %s is in layer %d, file %s", s, i, h.Name)
				}
			}
			if strings.HasSuffix(h.Name, "torch/version.py") || h.Name == "app/app.py" || strings.HasSuffix(h.Name, "/__init__.py") {
				files[h.Name] = string(b)
			}
		})
		found := func(suffix, content string) {
			for n, b := range files {
				if strings.HasSuffix(n, suffix) && strings.Contains(b, content) {
					return
				}
			}
			t.Errorf("no %s containing %q in the image (found %v)", suffix, content, keys(files))
		}
		found("site-packages/torch/version.py", "cuda: Optional[str] = '12.1'")
		found("site-packages/torch/version.py", "__version__ = '2.3.1+cu121'")
		found("app/app.py", "hello from gpuimg")
		found("gpuimg_extra/__init__.py", "VERSION = '1.0'")
		found("gpuimg_req/__init__.py", "VERSION = '2.0'")
	})

	t.Run("gpuimg validate agrees with what was built", func(t *testing.T) {
		out, errOut, code := run(t, "validate", ref, "--driver", "535.104.05", "-o", "json")
		if code != 0 {
			t.Fatalf("validate exit %d: %s\n%s", code, errOut, out)
		}
		var rep struct {
			Digest, Verdict string
			Found           struct {
				Python   string
				Packages map[string]string
				Torch    struct{ Version, CUDA string }
			}
			Checks []struct{ Name, Status, Message string }
		}
		must(t, json.Unmarshal([]byte(out), &rep))
		st := map[string]string{}
		for _, c := range rep.Checks {
			st[c.Name] = c.Status
		}
		if rep.Digest != digest || rep.Verdict != "pass" || st["stack-label"] != "pass" || st["require-cuda"] != "pass" || st["secrets"] != "pass" {
			t.Errorf("validate: digest %s verdict %s checks %+v", rep.Digest, rep.Verdict, rep.Checks)
		}
		if rep.Found.Torch.CUDA != "12.1" || rep.Found.Python != "3.11" || rep.Found.Packages["gpuimg-extra"] != "1.0" {
			t.Errorf("found %+v", rep.Found)
		}
		// --fabric infiniband: the label names it, so validate checks
		// rdma-core's libibverbs and mlx5 provider the build installed.
		// libs warns: GDRCopy and librdmacm are optional and not there.
		for c, want := range map[string]string{"stack-label/fabric": "pass", "fabric:infiniband:libs": "warn", "fabric:infiniband:verbs": "pass", "fabric:infiniband:closure": "pass", "fabric:infiniband:nccl": "pass"} {
			if st[c] != want {
				t.Errorf("%s: %q, want %s (checks %+v)", c, st[c], want, rep.Checks)
			}
		}
	})

	t.Run("a rebuild of the same inputs is a no-op with the same digest", func(t *testing.T) {
		// The tag holds the image of these inputs: nothing is solved.
		again, progress := build(t, buildArgs("1.0", "-t", ref, "--push")...)
		if again != digest {
			t.Errorf("rebuild digest %s, first %s", again, digest)
		}
		if !strings.Contains(progress, "already holds "+digest) || strings.Contains(progress, "CACHED") {
			t.Errorf("a rebuild into a tag that holds its inputs solved:\n%s", lastLines(progress, 40))
		}
		// Another tag: every step is answered from BuildKit's cache.
		again, progress = build(t, buildArgs("1.0", "-t", env.Registry.Host+"/gpuimg/e2e:again", "--push")...)
		if again != digest {
			t.Errorf("rebuild digest %s, first %s", again, digest)
		}
		if n := strings.Count(progress, "CACHED"); n < 4 {
			t.Errorf("only %d steps were CACHED on a no-op rebuild:\n%s", n, lastLines(progress, 40))
		}
	})

	t.Run("changing one pip package rebuilds only the user layers", func(t *testing.T) {
		other, progress := build(t, buildArgs("1.1", "-t", env.Registry.Host+"/gpuimg/e2e:extra-1.1", "--push")...)
		if other == digest {
			t.Error("a different --pip gave the same digest")
		}
		for line := range strings.SplitSeq(progress, "\n") {
			// (verify.py's options, --no-torch-compile here, come before
			// the framework's name.)
			if strings.Contains(line, "gpuimg-verify.py") && strings.Contains(line, " torch 2.3.1 ") && strings.Contains(line, "] RUN ") {
				step := strings.Fields(line)[0]
				if !strings.Contains(progress, step+" CACHED") {
					t.Errorf("the framework step %s was rebuilt:\n%s", step, lastLines(progress, 40))
				}
			}
		}
	})

	t.Run("reproducible: the same digest from an empty cache", func(t *testing.T) {
		prune := exec.CommandContext(ctx, env.Tools.Buildctl, "--addr", env.BuildKit.Address(), "prune", "--all")
		if out, err := prune.CombinedOutput(); err != nil {
			t.Fatalf("buildctl prune: %v\n%s", err, out)
		}
		fresh, progress := build(t, buildArgs("1.0", "-t", env.Registry.Host+"/gpuimg/e2e:fresh", "--push")...)
		if fresh != digest {
			t.Errorf("build from an empty cache gave %s, first build %s", fresh, digest)
		}
		// The build solves the plan stage, then the layered image (which
		// finds the plan's steps cached): the torch step must have run.
		ran := false
		for line := range strings.SplitSeq(progress, "\n") {
			// (verify.py's options, --no-torch-compile here, come before
			// the framework's name.)
			if strings.Contains(line, "gpuimg-verify.py") && strings.Contains(line, " torch 2.3.1 ") && strings.Contains(line, "] RUN ") {
				ran = ran || strings.Contains(progress, "\n"+strings.Fields(line)[0]+" DONE")
			}
		}
		if !ran {
			t.Errorf("the torch step did not run: the cache was not emptied; the test proves nothing:\n%s", lastLines(progress, 40))
		}
	})

	t.Run("a local cache export is imported after the daemon's cache is gone", func(t *testing.T) {
		cacheDir := t.TempDir()
		build(t, buildArgs("1.0", "-t", env.Registry.Host+"/gpuimg/e2e:cache-src", "--push", "--cache-to", "type=local,dest="+cacheDir+",mode=max")...)
		prune := exec.CommandContext(ctx, env.Tools.Buildctl, "--addr", env.BuildKit.Address(), "prune", "--all")
		if out, err := prune.CombinedOutput(); err != nil {
			t.Fatalf("buildctl prune: %v\n%s", err, out)
		}
		got, progress := build(t, buildArgs("1.0", "-t", env.Registry.Host+"/gpuimg/e2e:from-cache", "--push", "--cache-from", "type=local,src="+cacheDir)...)
		if got != digest {
			t.Errorf("build from imported cache gave %s, want %s", got, digest)
		}
		if n := strings.Count(progress, "CACHED"); n < 4 {
			t.Errorf("only %d steps came from the imported cache:\n%s", n, lastLines(progress, 40))
		}
	})

	t.Run("an OCI archive output", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "image.tar")
		build(t, buildArgs("1.0", "--output", "type=oci,dest="+dest)...)
		f, err := os.Open(dest)
		must(t, err)
		defer f.Close()
		tr := tar.NewReader(f)
		seen := map[string]bool{}
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			must(t, err)
			seen[h.Name] = true
		}
		if !seen["index.json"] || !seen["oci-layout"] {
			t.Errorf("not an OCI layout archive: %v", keys(seen))
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*")); len(left) > 0 {
			t.Errorf("temporary files left beside the output: %v", left)
		}
	})

	t.Run("a wrong wheel variant fails the build and pushes no tag", func(t *testing.T) {
		wrong := t.TempDir()
		bad := *env
		bad.WheelDir = wrong
		must(t, bad.TorchWheels("2.3.1", "0.18.1", "2.3.1", "11.8"))
		idx, err := testenv.ServeIndex(wrong)
		must(t, err)
		defer idx.Close()
		badRef := env.Registry.Host + "/gpuimg/e2e:wrong-variant"
		partial := filepath.Join(t.TempDir(), "image.tar")
		args := buildArgs("1.0", "-t", badRef, "--push", "--no-cache", "--output", "type=oci,dest="+partial)
		for i, a := range args {
			if a == index {
				args[i] = idx.URL
			}
		}
		_, errOut, code := run(t, args...)
		if code != cli.ExitFailed || !strings.Contains(errOut, "is built for CUDA 11.8, the stack needs CUDA 12.1") {
			t.Fatalf("exit %d, want 1 with the variant mismatch:\n%s", code, lastLines(errOut, 15))
		}
		r, _ := name.ParseReference(badRef, name.Insecure)
		if _, err := remote.Head(r, remote.WithContext(ctx)); err == nil {
			t.Error("the tag of a failed build exists")
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(partial), "*")); len(left) > 0 {
			t.Errorf("a failed build left files: %v", left)
		}
	})

	t.Run("dockerfile-only prints the pinned FROM", func(t *testing.T) {
		out, errOut, code := run(t, "build", "--cuda", "12.2", "--torch", "2.3", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(), "--dockerfile-only")
		if code != 0 {
			t.Fatal(errOut)
		}
		if !strings.Contains(out, "FROM "+env.Registry.Host+"/nvidia/cuda:12.2.2-base-ubuntu22.04@"+baseDigest) {
			t.Errorf("FROM is not pinned to %s:\n%s", baseDigest, out)
		}
	})

	t.Run("without --builder gpuimg starts, reuses and stops its own buildkitd", func(t *testing.T) {
		state, err := os.MkdirTemp("/tmp", "gs-")
		must(t, err)
		defer os.RemoveAll(state)
		var args []string
		all := buildArgs("1.0", "-t", env.Registry.Host+"/gpuimg/e2e:local-daemon", "--push", "--state-dir", state)
		for i := 0; i < len(all); i++ {
			if all[i] == "--builder" {
				i++ // the same build, on gpuimg's own daemon
				continue
			}
			args = append(args, all[i])
		}
		// buildkitd is found on PATH: put bin/ on it (os.Setenv, as the test
		// runs in parallel; bin/ holds only the pinned tools, which the other
		// tests run by their paths).
		oldPath := os.Getenv("PATH")
		os.Setenv("PATH", filepath.Dir(env.Tools.Buildkitd)+":"+oldPath) //nolint:usetesting // t.Setenv panics in a parallel test
		defer os.Setenv("PATH", oldPath)                                 //nolint:usetesting // as above
		out, errOut, code := run(t, args...)
		defer func() {
			if _, errOut, code := run(t, "builder", "stop", "--state-dir", state); code != 0 {
				t.Errorf("builder stop: %s", errOut)
			}
			out, _, _ := run(t, "builder", "status", "--state-dir", state)
			if !strings.Contains(out, "not running") {
				t.Errorf("after stop: %s", out)
			}
		}()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, lastLines(errOut, 20))
		}
		var res struct{ Digest string }
		must(t, json.Unmarshal([]byte(out), &res))
		if res.Digest != digest {
			t.Errorf("the same inputs on another daemon gave %s, want %s", res.Digest, digest)
		}
		status, _, _ := run(t, "builder", "status", "--state-dir", state)
		if !strings.Contains(status, "running: pid") {
			t.Errorf("builder status: %s", status)
		}
	})

	t.Run("faults", func(t *testing.T) { testBuildFaults(t, env, buildArgs) })

	t.Run("proof", func(t *testing.T) { testBuildProof(t, env, buildArgs, digest, firstProgress) })

	t.Run("bad daemon and registry addresses fail in one line", func(t *testing.T) {
		tests := []struct {
			args []string
			want string
		}{
			{[]string{"--builder", "unix:///tmp/gi-nonexistent.sock"}, "buildkitd at unix:///tmp/gi-nonexistent.sock does not answer"},
			{[]string{"--registry-mirror", "docker.io=127.0.0.1:1"}, "resolve base image docker.io/nvidia/cuda:12.2.2-base-ubuntu22.04"},
			{[]string{"-t", "x/y:z"}, "--tag without --push keeps nothing"},
		}
		for _, tt := range tests {
			args := append([]string{"build", "--cuda", "12.2", "--torch", "2.3", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(), "--builder", env.BuildKit.Address(), "--progress", "quiet"}, tt.args...)
			_, errOut, code := run(t, args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, errOut, tt.want)
			}
			if n := errorLines(errOut); n != 1 {
				t.Errorf("%v: %d error lines: %q", tt.args, n, errOut)
			}
		}
	})
}

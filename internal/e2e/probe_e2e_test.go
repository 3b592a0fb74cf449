package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/validate/gpurun"
)

// TestValidateRunWithoutGPU runs the probe inside an image on a real
// dockerd on this machine, which has no NVIDIA driver: docker cannot give
// the container a GPU, gpuimg probes without one, and the verdict is
// "no-gpu" with exit status 3, not a crash.
func TestValidateRunWithoutGPU(t *testing.T) {
	testenv.Require(t, "runs the probe in a container on dockerd", testenv.Slow, testenv.Root)
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	ctx := t.Context()
	probe := gpuimgBinary(t)
	rootfs, err := testenv.BaseRootfs(ctx)
	must(t, err)
	dir, err := os.MkdirTemp("/tmp", "gp-")
	must(t, err)
	d, err := testenv.StartDockerd(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	t.Setenv("DOCKER_HOST", d.Host)
	layer, err := tarball.LayerFromFile(rootfs)
	must(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	must(t, err)
	cfg, _ := img.ConfigFile()
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Config.Env = []string{"PATH=/usr/bin:/bin", "NVIDIA_REQUIRE_CUDA=cuda>=12.2"}
	cfg.Config.Labels = map[string]string{"dev.gpuimg.stack": stackLabel}
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	tag, _ := name.NewTag("example.com/gpuimg/probe:test")
	archive := filepath.Join(t.TempDir(), "img.tar")
	must(t, tarball.WriteToFile(archive, tag, img))
	if out, err := exec.Command("docker", "-H", d.Host, "load", "-i", archive).CombinedOutput(); err != nil {
		t.Fatalf("docker load: %v\n%s", err, out)
	}

	out, errOut, code := run(t, "validate", "docker-daemon:example.com/gpuimg/probe:test", "--run", "docker", "--probe-binary", probe, "-o", "json")
	if code != cli.ExitNoGPU {
		t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, cli.ExitNoGPU, out, errOut)
	}
	if !strings.Contains(errOut, "cannot give the container a GPU") {
		t.Errorf("stderr does not say why: %q", errOut)
	}
	// With a GPU, the driver is judged against the label's floor: the
	// labels as the real engine reports them.
	if got := gpurun.ImageLabels(ctx, "docker", "example.com/gpuimg/probe:test"); got["dev.gpuimg.stack"] != stackLabel {
		t.Errorf("docker image labels %v", got)
	}
	var rep struct {
		Kind, Verdict string
		Probe         struct {
			NoGPU  string `json:"no_gpu"`
			Checks []struct{ Name, Status, Message string }
		}
	}
	must(t, json.Unmarshal([]byte(out), &rep))
	if rep.Kind != "gpu" || rep.Verdict != "no-gpu" || !strings.Contains(rep.Probe.NoGPU, "libnvidia-ml.so.1 not found") {
		t.Errorf("report %+v", rep)
	}
	// The host checks ran inside the container: validate --run gives it
	// --shm-size 1g (gpurun), which passes; every host check is judged.
	judgedHost(t, "validate --run", rep.Probe.Checks, "pass")
	// The same probe in a container with Docker's default /dev/shm (64 MB):
	// judged too small, with the fix.
	small, err := exec.Command("docker", "-H", d.Host, "run", "--rm", "--network", "none", "-v", probe+":/gpuimg-probe:ro",
		"--entrypoint", "/gpuimg-probe", "example.com/gpuimg/probe:test", "probe", "-o", "json").Output()
	if len(small) == 0 {
		t.Fatalf("probe in a container with a small /dev/shm: %v", err)
	}
	var res struct {
		Checks []struct{ Name, Status, Message string }
	}
	must(t, json.Unmarshal(small, &res))
	judgedHost(t, "docker run (64 MB /dev/shm)", res.Checks, "warn")

	// The probe on this host says the same, in words and with exit 3.
	out, _, code = run(t, "probe")
	if code != cli.ExitNoGPU || !strings.Contains(out, "verdict: no-gpu") || !strings.Contains(out, "no NVIDIA driver") {
		t.Errorf("probe: exit %d\n%s", code, out)
	}

	// A Job manifest for Kubernetes requests a GPU and runs the same probe.
	out, errOut, code = run(t, "validate", "registry.example.com/ml/torch:2.3", "--run", "kubernetes", "--probe-image", "registry.example.com/tools/gpuimg:1")
	if code != 0 {
		t.Fatalf("kubernetes: exit %d %s", code, errOut)
	}
	var job struct {
		Kind string
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Image     string
						Args      []string
						Resources struct {
							Limits map[string]int
						}
					}
				}
			}
		}
	}
	must(t, yaml.Unmarshal([]byte(out), &job))
	c := job.Spec.Template.Spec.Containers
	if job.Kind != "Job" || len(c) != 1 || c[0].Image != "registry.example.com/ml/torch:2.3" || c[0].Resources.Limits["nvidia.com/gpu"] != 1 || c[0].Args[0] != "probe" {
		t.Errorf("job %+v", job)
	}
	if _, errOut, code := run(t, "probe", "--min-efficiency", "gemm=2"); code != 2 || !strings.Contains(errOut, "--min-efficiency") {
		t.Errorf("bad --min-efficiency: exit %d %q", code, errOut)
	}
}

// TestValidateRunPodmanWithoutGPU runs the probe inside an image with
// Debian's podman, pulled from a real registry on loopback (plain HTTP,
// which gpuimg tells podman): podman has no CDI spec for nvidia.com/gpu
// here, gpuimg says so and probes without a GPU, and the report names the
// image's digest with the no-gpu verdict and exit status 3.
func TestValidateRunPodmanWithoutGPU(t *testing.T) {
	testenv.Require(t, "runs the probe in a container with podman", testenv.Slow, testenv.Root)
	if _, err := os.Stat("/proc/driver/nvidia/version"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	ctx := t.Context()
	tools, err := testenv.BuildTools(ctx)
	must(t, err)
	reg, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
	must(t, err)
	defer reg.Stop()
	rootfs, err := testenv.BaseRootfs(ctx)
	must(t, err)
	ref := reg.Host + "/gpuimg/probe:podman"
	digest, err := testenv.PushImage(ctx, rootfs, ref, []string{"PATH=/usr/bin:/bin", "NVIDIA_REQUIRE_CUDA=cuda>=12.2"}, map[string]string{"dev.gpuimg.stack": stackLabel})
	must(t, err)
	dir, err := os.MkdirTemp("/tmp", "gp-")
	must(t, err)
	pm, err := testenv.StartPodman(ctx, dir)
	must(t, err)
	defer pm.Stop()
	for _, kv := range pm.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	probe := gpuimgBinary(t)

	// A matrix file and a budget reach the probe inside the container (a
	// file it could not read would make it exit 2).
	root, err := testenv.RepoRoot()
	must(t, err)
	rows := filepath.Join(root, "examples", "matrix-internal.yaml")
	out, errOut, code := run(t, "validate", ref, "--run", "podman", "--probe-binary", probe, "--matrix-file", rows, "--budget", "45s", "-o", "json")
	if code != cli.ExitNoGPU {
		t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, cli.ExitNoGPU, out, errOut)
	}
	if !strings.Contains(errOut, "podman cannot give the container a GPU") || !strings.Contains(errOut, "unresolvable CDI devices nvidia.com/gpu=all") {
		t.Errorf("stderr does not say why: %q", errOut)
	}
	var rep struct {
		Kind, Verdict, Digest string
		Probe                 struct {
			NoGPU string `json:"no_gpu"`
		}
	}
	must(t, json.Unmarshal([]byte(out), &rep))
	if rep.Kind != "gpu" || rep.Verdict != "no-gpu" || rep.Digest != digest || !strings.Contains(rep.Probe.NoGPU, "libnvidia-ml.so.1 not found") {
		t.Errorf("report %+v, want digest %s", rep, digest)
	}
	// The image really ran under podman: it is in podman's store now, with
	// its labels for the driver-floor judgement.
	if b, err := pm.Command(ctx, "image", "exists", ref).CombinedOutput(); err != nil {
		t.Errorf("podman image exists %s: %v %s", ref, err, b)
	}
	if got := gpurun.ImageLabels(ctx, "podman", ref); got["dev.gpuimg.stack"] != stackLabel {
		t.Errorf("podman image labels %v", got)
	}
}

// stackLabel is a dev.gpuimg.stack label as gpuimg build writes it, cut to
// what the driver judgement reads.
const stackLabel = `{"cuda":"12.2.2","min_driver":"535.104.05","min_driver_compat":"525.60.13"}`

// judgedHost checks that every host check is judged (pass or warn) and
// that host/shm has shm (with the --shm-size hint when warn).
func judgedHost(t *testing.T, where string, checks []struct{ Name, Status, Message string }, shm string) {
	t.Helper()
	host := map[string]string{}
	for _, c := range checks {
		if !strings.HasPrefix(c.Name, "host/") {
			continue
		}
		host[c.Name] = c.Status
		if c.Name == "host/shm" && (c.Status != shm || shm == "warn" && !strings.Contains(c.Message, "--shm-size")) {
			t.Errorf("%s: host/shm %s %q, want %s", where, c.Status, c.Message, shm)
		}
	}
	for _, n := range []string{"host/shm", "host/cpu-steal", "host/smt", "host/data-dir", "host/memory"} {
		if st := host[n]; st != "pass" && st != "warn" {
			t.Errorf("%s: %s is %q (host checks: %v)", where, n, st, host)
		}
	}
}

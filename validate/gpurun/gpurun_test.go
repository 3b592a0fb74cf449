package gpurun

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

func ref(t *testing.T, s string) images.Ref {
	t.Helper()
	r, err := images.ParseRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEngineArgs: the argument lists docker and podman get, with and
// without GPUs, plain HTTP for podman on loopback or when insecure, matrix
// files mounted by absolute path, and the probe's flags passed on.
func TestEngineArgs(t *testing.T) {
	wd, _ := os.Getwd()
	const bin = "/opt/gpuimg"
	base := []string{"run", "--rm", "--network", "none", "--shm-size", "1g"}
	mount := []string{"-v", bin + ":/usr/local/bin/gpuimg-probe:ro"}
	probe := func(image string, more ...string) []string {
		return append([]string{"--entrypoint", "/usr/local/bin/gpuimg-probe", image, "probe", "-o", "json"}, more...)
	}
	cat := slices.Concat[[]string]
	tests := []struct {
		name string
		opt  Options
		gpus bool
		want []string
	}{
		{"docker with GPUs", Options{Mode: Docker, Image: ref(t, "docker-daemon:example.com/ml/torch:1")}, true,
			cat(base, []string{"--gpus", "all"}, mount, probe("example.com/ml/torch:1"))},
		{"docker without", Options{Mode: Docker, Image: ref(t, "docker-daemon:example.com/ml/torch:1")}, false,
			cat(base, mount, probe("example.com/ml/torch:1"))},
		{"podman takes the CDI device", Options{Mode: Podman, Image: ref(t, "registry.example.com/ml/torch:1")}, true,
			cat(base, []string{"--device", "nvidia.com/gpu=all"}, mount, probe("registry.example.com/ml/torch:1"))},
		{"podman on loopback pulls over HTTP", Options{Mode: Podman, Image: ref(t, "127.0.0.1:5000/ml/torch:1"), PlainHTTP: true}, false,
			cat(base, []string{"--tls-verify=false"}, mount, probe("127.0.0.1:5000/ml/torch:1"))},
		{"podman insecure", Options{Mode: Podman, Image: ref(t, "registry.example.com/ml/torch:1"), PlainHTTP: true}, true,
			cat(base, []string{"--device", "nvidia.com/gpu=all", "--tls-verify=false"}, mount, probe("registry.example.com/ml/torch:1"))},
		{"docker ignores insecure", Options{Mode: Docker, Image: ref(t, "127.0.0.1:5000/ml/torch:1"), PlainHTTP: true}, true,
			cat(base, []string{"--gpus", "all"}, mount, probe("127.0.0.1:5000/ml/torch:1"))},
		{"everything passed on", Options{Mode: Docker, Image: ref(t, "registry.example.com/ml/torch:1"), MatrixFiles: []string{"rows.yaml", "/etc/more.yaml"},
			Bench: true, Budget: 45 * time.Second, MinEfficiency: map[string]float64{"h2d": 0.25, "gemm_bf16": 0.7}}, true,
			cat(base, []string{"--gpus", "all"}, mount,
				[]string{"-v", filepath.Join(wd, "rows.yaml") + ":/run/gpuimg-matrix/0.yaml:ro", "-v", "/etc/more.yaml:/run/gpuimg-matrix/1.yaml:ro"},
				probe("registry.example.com/ml/torch:1", "--matrix-file", "/run/gpuimg-matrix/0.yaml", "--matrix-file", "/run/gpuimg-matrix/1.yaml",
					"--bench", "--budget", "45s", "--min-efficiency", "gemm_bf16=0.7", "--min-efficiency", "h2d=0.25"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opt.ProbeBinary = bin
			image, err := tt.opt.check()
			if err != nil {
				t.Fatal(err)
			}
			if got := engineArgs(tt.opt, image, tt.gpus); !slices.Equal(got, tt.want) {
				t.Errorf("args\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestHostOptions: on the host the probe gets the same settings the
// container's probe gets as flags, the environment's NVIDIA_REQUIRE_CUDA
// as given, and progress lines on Stderr.
func TestHostOptions(t *testing.T) {
	db := &matrix.DB{}
	var b strings.Builder
	opt := Options{Mode: Host, Bench: true, Budget: time.Minute, MinEfficiency: map[string]float64{"h2d": 0.3}, DB: db, RequireCUDA: "cuda>=12.2", Stderr: &b}
	p := hostOptions(opt)
	if !p.Bench || p.Budget != time.Minute || p.MinEfficiency["h2d"] != 0.3 || p.DB != db || p.RequireCUDA != "cuda>=12.2" || p.Python != "" {
		t.Errorf("probe options %+v", p)
	}
	p.Progress("bench/gemm", 9400*time.Millisecond)
	if b.String() != "gpuimg: probe: bench/gemm done after 9s\n" {
		t.Errorf("progress %q", b.String())
	}
}

// TestCheck: which image each mode can run, and the errors that say how
// to get there.
func TestCheck(t *testing.T) {
	tests := []struct {
		mode            Mode
		image           string
		probeImage      string
		budget          time.Duration
		wantImage, fail string
	}{
		{Docker, "docker-daemon:example.com/ml/torch:1", "", 0, "example.com/ml/torch:1", ""},
		{Docker, "registry.example.com/ml/torch:1", "", 0, "registry.example.com/ml/torch:1", ""},
		{Podman, "registry.example.com/ml/torch:1", "", 0, "registry.example.com/ml/torch:1", ""},
		{Podman, "docker-daemon:example.com/ml/torch:1", "", 0, "", "podman cannot use an image in docker's daemon (docker-daemon:example.com/ml/torch:1): push it to a registry"},
		{Kubernetes, "docker-daemon:example.com/ml/torch:1", "r/gpuimg:1", 0, "", "kubernetes cannot use an image in docker's daemon"},
		{Kubernetes, "registry.example.com/ml/torch:1", "", 0, "", "needs a probe image"},
		{Kubernetes, "registry.example.com/ml/torch:1", "r/gpuimg:1", 0, "registry.example.com/ml/torch:1", ""},
		{Docker, "oci-archive:torch.tar", "", 0, "", "docker needs a registry or docker-daemon image, not oci-archive: push or load the image first"},
		{Host, "oci-archive:torch.tar", "", 0, "", ""},
		{Host, "registry.example.com/ml/torch:1", "", -time.Second, "", "budget -1s is negative"},
		{"singularity", "registry.example.com/ml/torch:1", "", 0, "", `run mode "singularity": use docker, podman, host or kubernetes`},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+" "+tt.image, func(t *testing.T) {
			image, err := Options{Mode: tt.mode, Image: ref(t, tt.image), ProbeImage: tt.probeImage, Budget: tt.budget}.check()
			if tt.fail == "" && (err != nil || image != tt.wantImage) {
				t.Errorf("check = %q, %v; want %q", image, err, tt.wantImage)
			}
			if tt.fail != "" && (err == nil || !strings.Contains(err.Error(), tt.fail)) {
				t.Errorf("err = %v, want %q", err, tt.fail)
			}
		})
	}
}

// Engine errors as the engines print them.
const (
	// docker without the NVIDIA container toolkit.
	dockerNoToolkit = `docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].`
	// docker with the toolkit on a host without a driver.
	dockerNoDriver = "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown."
	// podman without a CDI spec (nvidia-ctk cdi generate).
	podmanNoCDI = "Trying to pull 127.0.0.1:5000/gpuimg/probe:podman...\nGetting image source signatures\nError: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all"
	// a podman that has no --gpus flag.
	podmanNoGPUsFlag = "Error: unknown flag: --gpus\nSee 'podman run --help'"
	// the NVIDIA container runtime refusing an image newer than the driver.
	runtimeRefused = "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container: unknown."
	// an image that is not there: the run failed, GPUs or not.
	// docker without a daemon: the reason, then a pointer to the help
	// (docker/cli's "See 'docker run --help'.", as users quote it in
	// sourcegraph/sourcegraph-public-snapshot#29857).
	dockerNoDaemon = "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?.\nSee 'docker run --help'."
	dockerNoImage  = "Unable to find image 'example.com/ml/torch:gone' locally\ndocker: Error response from daemon: pull access denied for example.com/ml/torch, repository does not exist or may require 'docker login'."
)

// TestReadEngineError: the engines' own words tell "no GPU here" (probe
// again without one) from "the driver is too old for the image" (the
// answer) and from a run that failed.
func TestReadEngineError(t *testing.T) {
	for _, tt := range []struct {
		name, stderr   string
		noGPU, refused bool
	}{
		{"docker without the toolkit", dockerNoToolkit, true, false},
		{"docker without a driver", dockerNoDriver, true, false},
		{"podman without a CDI spec", podmanNoCDI, true, false},
		{"podman without --gpus", podmanNoGPUsFlag, true, false},
		{"driver older than the image", runtimeRefused, false, true},
		{"a brand clause that does not hold", strings.Replace(runtimeRefused, "cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container", "brand=tesla,driver>=470,driver<471", 1), false, true},
		{"an invalid expression", strings.Replace(runtimeRefused, "unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container", "invalid expression", 1), false, true},
		{"no such image", dockerNoImage, false, false},
		{"nothing said", "", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := readEngineError(tt.stderr)
			if a.noGPU != tt.noGPU || (a.refused != nil) != tt.refused {
				t.Errorf("noGPU %v refused %v, want %v %v", a.noGPU, a.refused != nil, tt.noGPU, tt.refused)
			}
			want := "cuda>=12.8 is not met"
			switch {
			case strings.Contains(tt.stderr, "brand=tesla"):
				want = "requirement brand=tesla,driver>=470,driver<471 is not met"
			case strings.Contains(tt.stderr, "invalid expression"):
				want = "that it cannot read (invalid expression)"
			}
			if tt.refused && (a.refused.Verdict != matrix.Fail || !strings.Contains(a.refused.Checks[0].Message, want)) {
				t.Errorf("refusal %+v", a.refused)
			}
		})
	}
	if got := lastLine(podmanNoCDI + "\n\n"); got != "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all" {
		t.Errorf("lastLine = %q", got)
	}
	for in, want := range map[string]string{
		dockerNoDaemon: "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?.",
		"docker: Error response from daemon: x\n\nRun 'docker run --help' for more information\n": "docker: Error response from daemon: x",
		"": "",
	} {
		if got := lastLine(in); got != want {
			t.Errorf("lastLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseLabels: image inspect's {{json .Config.Labels}} as docker and
// podman print it, with labels and without.
func TestParseLabels(t *testing.T) {
	for in, want := range map[string]map[string]string{
		`{"dev.gpuimg.stack":"{\"cuda\":\"12.2.2\"}","org.opencontainers.image.version":"1"}` + "\n": {"dev.gpuimg.stack": `{"cuda":"12.2.2"}`, "org.opencontainers.image.version": "1"},
		"null\n":                 nil,
		"Error: no such image\n": nil,
	} {
		got := parseLabels([]byte(in))
		if len(got) != len(want) {
			t.Errorf("%q: %v", in, got)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q", in, k, got[k], v)
			}
		}
	}
}

// TestWriteJob: the Job parses back as Kubernetes reads it: one GPU, the
// probe copied in by an init container from the probe image, the probe's
// arguments.
func TestWriteJob(t *testing.T) {
	for _, bench := range []bool{false, true} {
		var b strings.Builder
		if err := WriteJob(&b, Job{Image: "registry.example.com/ml/torch:2.3", ProbeImage: "registry.example.com/tools/gpuimg:1", Bench: bench}); err != nil {
			t.Fatal(err)
		}
		type container struct {
			Name, Image  string
			Command      []string
			Args         []string
			Resources    struct{ Limits map[string]int }
			VolumeMounts []struct {
				Name      string
				MountPath string `yaml:"mountPath"`
			} `yaml:"volumeMounts"`
		}
		var job struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string
			Spec       struct {
				BackoffLimit int `yaml:"backoffLimit"`
				Template     struct {
					Spec struct {
						RestartPolicy  string      `yaml:"restartPolicy"`
						InitContainers []container `yaml:"initContainers"`
						Containers     []container
					}
				}
			}
		}
		if err := yaml.Unmarshal([]byte(b.String()), &job); err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		s := job.Spec.Template.Spec
		wantArgs := []string{"probe", "-o", "json"}
		if bench {
			wantArgs = append(wantArgs, "--bench")
		}
		if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Spec.BackoffLimit != 0 || s.RestartPolicy != "Never" || len(s.InitContainers) != 1 || len(s.Containers) != 1 {
			t.Fatalf("job %+v", job)
		}
		ic, c := s.InitContainers[0], s.Containers[0]
		if ic.Image != "registry.example.com/tools/gpuimg:1" || !slices.Equal(ic.Command, []string{"cp", "/gpuimg", "/probe/gpuimg"}) || ic.VolumeMounts[0].MountPath != "/probe" {
			t.Errorf("init container %+v", ic)
		}
		if c.Image != "registry.example.com/ml/torch:2.3" || !slices.Equal(c.Command, []string{"/probe/gpuimg"}) || !slices.Equal(c.Args, wantArgs) ||
			c.Resources.Limits["nvidia.com/gpu"] != 1 || c.VolumeMounts[0].Name != "probe" {
			t.Errorf("container %+v", c)
		}
	}
}

// TestProgressLines: Run passes the probe's progress lines through from
// the container's stderr as they arrive, whole, and keeps everything for
// the error message.
func TestProgressLines(t *testing.T) {
	var keep, to strings.Builder
	p := &progressLines{keep: &keep, to: &to}
	for _, chunk := range []string{"Unable to find image locally\ngpuimg: pro", "be: torch/cuda done after 2s\ngpuimg: probe: bench/gemm done after 9s\n", "docker: Error\n"} {
		if n, err := p.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d %v", n, err)
		}
	}
	if to.String() != "gpuimg: probe: torch/cuda done after 2s\ngpuimg: probe: bench/gemm done after 9s\n" {
		t.Errorf("passed through %q", to.String())
	}
	if !strings.HasPrefix(keep.String(), "Unable to find image locally") || !strings.HasSuffix(keep.String(), "docker: Error\n") {
		t.Errorf("kept %q", keep.String())
	}
}

// standIn puts an engine named mode on PATH: a script that fails with
// stderr when run with GPUs (its arguments contain gpusArg) and otherwise
// prints the probe's JSON, with progress lines on stderr. This machine has
// no GPU; the real engines' no-GPU runs are internal/cli's tests.
func standIn(t *testing.T, mode Mode, gpusArg, stderr, probe string) {
	dir := t.TempDir()
	script := "#!/bin/sh\ncase \"$*\" in\n*'" + gpusArg + "'*) cat >&2 <<'EOF'\n" + stderr + "\nEOF\nexit 125;;\n" +
		"image\\ inspect*) echo null;;\n" +
		"*) echo 'gpuimg: probe: torch/cuda done after 1s' >&2; echo 'not progress' >&2; echo '" + probe + "';;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, string(mode)), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
}

// TestRunWithoutGPU: when the engine cannot give the container a GPU, Run
// says so (with the engine's words) and probes again without one; the
// report is the probe's, named after the image, with the digest Digest
// gives for a registry image.
func TestRunWithoutGPU(t *testing.T) {
	probe := `{"gpus":[],"no_gpu":"libnvidia-ml.so.1 not found","checks":[{"name":"nvidia-driver","status":"fail","message":"libnvidia-ml.so.1 not found"}],"verdict":"no-gpu","created":"2026-11-30T00:00:00Z"}`
	for _, tt := range []struct {
		mode            Mode
		gpusArg, stderr string
	}{
		{Podman, "nvidia.com/gpu=all", podmanNoCDI},
		{Docker, "--gpus all", dockerNoToolkit},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			standIn(t, tt.mode, tt.gpusArg, tt.stderr, probe)
			var stderr strings.Builder
			rep, err := Run(t.Context(), Options{Mode: tt.mode, Image: ref(t, "127.0.0.1:5000/gpuimg/probe:1"), ProbeBinary: "/opt/gpuimg", Stderr: &stderr,
				Digest: func(context.Context) string { return "sha256:abc" }})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Kind != "gpu" || rep.Verdict != gpuprobe.NoGPU || rep.Image != "127.0.0.1:5000/gpuimg/probe:1" || rep.Digest != "sha256:abc" || rep.Probe.NoGPU == "" {
				t.Errorf("report %+v", rep)
			}
			want := "gpuimg: " + string(tt.mode) + " cannot give the container a GPU (" + lastLine(tt.stderr) + "); probing without one\ngpuimg: probe: torch/cuda done after 1s\n"
			if stderr.String() != want {
				t.Errorf("stderr\n got %q\nwant %q", stderr.String(), want)
			}
		})
	}
	// A run that failed for another reason is an error naming it.
	standIn(t, Docker, "probe", dockerNoImage, probe)
	_, err := Run(t.Context(), Options{Mode: Docker, Image: ref(t, "docker-daemon:example.com/ml/torch:gone"), ProbeBinary: "/opt/gpuimg"})
	if err == nil || !strings.Contains(err.Error(), "docker run example.com/ml/torch:gone: exit status 125: docker: Error response from daemon: pull access denied") {
		t.Errorf("err = %v", err)
	}
	// docker's own reason, not its pointer to --help (issue 43).
	standIn(t, Docker, "probe", dockerNoDaemon, probe)
	_, err = Run(t.Context(), Options{Mode: Docker, Image: ref(t, "docker-daemon:example.com/ml/torch:2.3"), ProbeBinary: "/opt/gpuimg"})
	if err == nil || !strings.Contains(err.Error(), "docker run example.com/ml/torch:2.3: exit status 125: docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?") {
		t.Errorf("err = %v", err)
	}
}

// TestRunAccept: with Accept the run's result is judged (gpuprobe.Accept)
// before the report is made: the report carries the acceptance, and its
// checks and verdict are the judged result's (a machine without a GPU is
// rejected); without it, none.
func TestRunAccept(t *testing.T) {
	probe := `{"gpus":[],"no_gpu":"libnvidia-ml.so.1 not found","checks":[{"name":"nvidia-driver","status":"fail","message":"libnvidia-ml.so.1 not found"}],"verdict":"no-gpu","created":"2026-11-30T00:00:00Z"}`
	standIn(t, Docker, "--gpus all", dockerNoToolkit, probe)
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, accept := range []*gpuprobe.AcceptOptions{nil, {Reference: true, DB: db, MaxLoss: 0.1}} {
		rep, err := Run(t.Context(), Options{Mode: Docker, Image: ref(t, "127.0.0.1:5000/gpuimg/probe:1"), ProbeBinary: "/opt/gpuimg", Accept: accept})
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Probe.Acceptance != nil; got != (accept != nil) {
			t.Errorf("accept %v: acceptance %+v", accept, rep.Probe.Acceptance)
		}
		if accept != nil && (rep.Probe.Acceptance.MaxLoss != 0.1 || rep.Probe.Acceptance.Verdict != "reject") {
			t.Errorf("acceptance %+v, want a machine without a GPU rejected, allowing 10%%", rep.Probe.Acceptance)
		}
		if rep.Verdict != rep.Probe.Verdict || len(rep.Checks) != len(rep.Probe.Checks) {
			t.Errorf("report verdict %s with %d checks, the judged result's %s with %d", rep.Verdict, len(rep.Checks), rep.Probe.Verdict, len(rep.Probe.Checks))
		}
	}
}

// TestRunKubernetes writes the Job and returns no report.
func TestRunKubernetes(t *testing.T) {
	var b strings.Builder
	rep, err := Run(t.Context(), Options{Mode: Kubernetes, Image: ref(t, "registry.example.com/ml/torch:2.3"), ProbeImage: "registry.example.com/tools/gpuimg:1", Manifest: &b})
	if err != nil || rep != nil || !strings.Contains(b.String(), `image: "registry.example.com/ml/torch:2.3"`) {
		t.Errorf("Run = %v, %v\n%s", rep, err, b.String())
	}
}

// TestRunKubernetesOptions: the Job's probe gets the same benchmarks,
// budget and thresholds as an engine's; matrix files, which a Job cannot
// mount, are refused rather than dropped.
func TestRunKubernetesOptions(t *testing.T) {
	var b strings.Builder
	opt := Options{Mode: Kubernetes, Image: ref(t, "registry.example.com/ml/torch:2.3"), ProbeImage: "registry.example.com/tools/gpuimg:1", Manifest: &b,
		Bench: true, Budget: 45 * time.Second, MinEfficiency: map[string]float64{"h2d": 0.25}}
	if _, err := Run(t.Context(), opt); err != nil {
		t.Fatal(err)
	}
	want := `["probe","-o","json","--bench","--budget","45s","--min-efficiency","h2d=0.25"]`
	if !strings.Contains(b.String(), "args: "+want) {
		t.Errorf("Job lacks args %s:\n%s", want, b.String())
	}
	opt.MatrixFiles = []string{"rows.yaml"}
	if _, err := Run(t.Context(), opt); err == nil || !strings.Contains(err.Error(), "cannot mount the matrix files rows.yaml") {
		t.Errorf("matrix files with a Job: %v", err)
	}
}

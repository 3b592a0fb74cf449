package gpurun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// probeInContainer is where the probe binary is mounted in the container.
const probeInContainer = "/usr/local/bin/gpuimg-probe"

// engineArgs are the arguments of docker or podman that run the probe in
// image; gpus gives the container every GPU.
func engineArgs(opt Options, image string, gpus bool) []string {
	// The probe needs no network.
	// NCCL between GPUs in one container may go through /dev/shm,
	// which engines make 64 MB by default.
	a := []string{"run", "--rm", "--network", "none", "--shm-size", "1g"}
	if gpus {
		// Docker's --gpus goes through the NVIDIA container toolkit's
		// hook; podman takes the GPUs as CDI devices (nvidia-ctk cdi
		// generate), as NVIDIA documents for it.
		if opt.Mode == Podman {
			a = append(a, "--device", "nvidia.com/gpu=all")
		} else {
			a = append(a, "--gpus", "all")
		}
	}
	if opt.Mode == Podman && opt.PlainHTTP {
		a = append(a, "--tls-verify=false")
	}
	a = append(a, "-v", opt.ProbeBinary+":"+probeInContainer+":ro")
	var probeArgs []string
	for i, f := range opt.MatrixFiles {
		in := fmt.Sprintf("/run/gpuimg-matrix/%d.yaml", i)
		if abs, err := filepath.Abs(f); err == nil {
			f = abs
		}
		a = append(a, "-v", f+":"+in+":ro")
		probeArgs = append(probeArgs, "--matrix-file", in)
	}
	a = append(a, "--entrypoint", probeInContainer, image)
	return append(a, probeCommand(opt, probeArgs...)...)
}

// probeCommand is the probe's command line inside the image: probe -o json
// with extra (matrix files), then the options' benchmarks, budget and
// thresholds. The engines and the Kubernetes Job run the same one.
func probeCommand(opt Options, extra ...string) []string {
	a := append([]string{"probe", "-o", "json"}, extra...)
	if opt.Bench {
		a = append(a, "--bench")
	}
	if opt.Budget > 0 {
		a = append(a, "--budget", opt.Budget.String())
	}
	for _, k := range slices.Sorted(maps.Keys(opt.MinEfficiency)) {
		a = append(a, "--min-efficiency", fmt.Sprintf("%s=%g", k, opt.MinEfficiency[k]))
	}
	return a
}

// engineAnswer is what an engine's stderr says when it ran no probe.
type engineAnswer struct {
	// refused is the result when the NVIDIA container runtime refused to
	// start the image: the host's driver is older than its
	// NVIDIA_REQUIRE_CUDA.
	refused *gpuprobe.Result
	// noGPU: the engine cannot give a container a GPU here (no NVIDIA
	// container toolkit, no CDI spec, no driver), rather than the image
	// or the run failing.
	noGPU bool
}

// noGPUSigns are the words of docker, podman and the NVIDIA container
// toolkit when they cannot give a container a GPU.
var noGPUSigns = []string{"could not select device driver", "nvidia-container", "unknown flag: --gpus", "unresolvable CDI devices"}

// readEngineError reads an engine's stderr after a run that printed nothing.
func readEngineError(stderr string) engineAnswer {
	if res, ok := gpuprobe.RuntimeRefused(stderr); ok {
		return engineAnswer{refused: res}
	}
	for _, s := range noGPUSigns {
		if strings.Contains(stderr, s) {
			return engineAnswer{noGPU: true}
		}
	}
	return engineAnswer{}
}

// lastLine is the engine's reason in its stderr: the last line that is
// not a pointer to its help. docker ends an error with "See 'docker run
// --help'." (newer releases: "Run 'docker run --help' for more
// information") after the line that says what went wrong ("docker: Cannot
// connect to the Docker daemon at unix:///var/run/docker.sock. Is the
// docker daemon running?").
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range slices.Backward(lines) {
		l = strings.TrimSpace(l)
		if l == "" || (strings.HasPrefix(l, "See '") || strings.HasPrefix(l, "Run '")) && strings.Contains(l, "--help") {
			continue
		}
		return l
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// ImageLabels are an image's labels as docker or podman (engine: its name
// or path) reports them with image inspect; nil when the engine cannot
// say (it lacks the image, or has no labels).
func ImageLabels(ctx context.Context, engine, image string) map[string]string {
	out, err := exec.CommandContext(ctx, engine, "image", "inspect", "--format", "{{json .Config.Labels}}", image).Output()
	if err != nil {
		return nil
	}
	return parseLabels(out)
}

// parseLabels reads image inspect's {{json .Config.Labels}}: an object, or
// null for an image without labels.
func parseLabels(out []byte) map[string]string {
	var labels map[string]string
	if json.Unmarshal(bytes.TrimSpace(out), &labels) != nil {
		return nil
	}
	return labels
}

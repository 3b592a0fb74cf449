package gpurun

import (
	"encoding/json"
	"fmt"
	"io"
)

// Job is a Kubernetes Job that runs the probe in Image on one GPU.
type Job struct {
	// Image is the image to probe (a registry reference).
	Image string
	// ProbeImage holds the gpuimg binary at /gpuimg; an init container
	// copies it into a volume the probed container runs it from.
	ProbeImage string
	// Bench also runs the benchmarks.
	Bench bool
	// Args is the probe's command line (probeCommand); nil means probe -o
	// json, plus --bench when Bench is set.
	Args []string
}

// WriteJob writes j as a manifest for kubectl apply -f; the probe's JSON
// is the Job's log.
func WriteJob(w io.Writer, j Job) error {
	cmd := j.Args
	if cmd == nil {
		cmd = probeCommand(Options{Bench: j.Bench})
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	args := string(b)
	_, err = fmt.Fprintf(w, `# gpuimg validate --run kubernetes: kubectl apply -f this, then
# kubectl logs job/gpuimg-probe > probe.json
apiVersion: batch/v1
kind: Job
metadata:
  name: gpuimg-probe
  labels: {app.kubernetes.io/name: gpuimg-probe}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: 1800
  template:
    spec:
      restartPolicy: Never
      volumes:
        - name: probe
          emptyDir: {}
      initContainers:
        - name: gpuimg
          image: %q
          command: ["cp", "/gpuimg", "/probe/gpuimg"]
          volumeMounts: [{name: probe, mountPath: /probe}]
      containers:
        - name: probe
          image: %q
          command: ["/probe/gpuimg"]
          args: %s
          resources:
            limits:
              nvidia.com/gpu: 1
          volumeMounts: [{name: probe, mountPath: /probe}]
`, j.ProbeImage, j.Image, args)
	return err
}

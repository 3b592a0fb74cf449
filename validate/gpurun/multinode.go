package gpurun

import (
	_ "embed"
	"fmt"
	"io"
	"strings"
)

//go:embed allreduce.py
var allReducePy string

// MultiNodeJob is the multi-node all-reduce: an Indexed Job of Nodes
// pods started together, a headless Service that gives pod 0 a DNS name
// for torchrun's c10d rendezvous, and a ConfigMap with allreduce.py. Each
// pod runs torchrun over GPUsPerNode GPUs with NCCL_DEBUG=INFO; rank 0's
// log holds NCCL's log and one JSON line with the bandwidth, which
// validate.JudgeAllReduceLog judges.
type MultiNodeJob struct {
	// Image is the image to run (a registry reference); it needs torch
	// and torchrun.
	Image string
	// Nodes is the number of pods, one per node (at least 2).
	Nodes int
	// GPUsPerNode is each pod's nvidia.com/gpu; the default is 8.
	GPUsPerNode int
	// Fabric names the fabric the run should use, for the manifest's
	// comments (its devices are the cluster's to give); "" for none.
	Fabric string
}

// jobName is the Job's, the Service's and the ConfigMap's name.
const jobName = "gpuimg-allreduce"

// WriteMultiNodeJob writes j as a manifest for kubectl apply -f.
func WriteMultiNodeJob(w io.Writer, j MultiNodeJob) error {
	if j.Nodes < 2 {
		return fmt.Errorf("a multi-node all-reduce needs at least 2 nodes, got %d", j.Nodes)
	}
	if j.Image == "" {
		return fmt.Errorf("a multi-node all-reduce needs an image")
	}
	gpus := j.GPUsPerNode
	if gpus == 0 {
		gpus = 8
	}
	fabric := "the fabric"
	if j.Fabric != "" {
		fabric = "the " + j.Fabric + " fabric"
	}
	var script strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(allReducePy, "\n"), "\n") {
		script.WriteString("    " + line + "\n")
	}
	_, err := fmt.Fprintf(w, `# gpuimg validate --run kubernetes --nodes %[1]d: an all-reduce across %[1]d pods,
# one per node (torchrun, c10d rendezvous on pod 0). kubectl apply -f this, then
# kubectl logs %[2]s-0-<suffix> > allreduce.log (the pod of completion index 0)
# and judge the log (validate.JudgeAllReduceLog: the transport NCCL used and
# the bus bandwidth). Add to the pod template what gives the pods %[3]s's
# devices on your cluster (its device plugin's resource, host networking);
# nothing here requests them.
apiVersion: v1
kind: ConfigMap
metadata:
  name: %[2]s
  labels: {app.kubernetes.io/name: %[2]s}
data:
  allreduce.py: |
%[4]s---
apiVersion: v1
kind: Service
metadata:
  name: %[2]s
  labels: {app.kubernetes.io/name: %[2]s}
spec:
  clusterIP: None
  selector: {job-name: %[2]s}
  ports: [{name: rendezvous, port: 29500}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: %[2]s
  labels: {app.kubernetes.io/name: %[2]s}
spec:
  completionMode: Indexed
  completions: %[1]d
  parallelism: %[1]d
  backoffLimit: 0
  activeDeadlineSeconds: 1800
  template:
    metadata:
      labels: {app.kubernetes.io/name: %[2]s}
    spec:
      subdomain: %[2]s
      restartPolicy: Never
      volumes:
        - name: script
          configMap: {name: %[2]s}
      containers:
        - name: allreduce
          image: %[5]q
          command: ["torchrun"]
          args: ["--nnodes=%[1]d", "--nproc-per-node=%[6]d", "--rdzv-backend=c10d", "--rdzv-endpoint=%[2]s-0.%[2]s:29500", "--rdzv-id=%[2]s", "/gpuimg/allreduce.py"]
          env:
            - {name: NCCL_DEBUG, value: INFO}
            - {name: NCCL_DEBUG_SUBSYS, value: "INIT,NET"}
          ports: [{containerPort: 29500, name: rendezvous}]
          resources:
            limits:
              nvidia.com/gpu: %[6]d
          volumeMounts: [{name: script, mountPath: /gpuimg}]
`, j.Nodes, jobName, fabric, script.String(), j.Image, gpus)
	return err
}

package gpurun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestWriteMultiNodeJob: the manifest parses back, document by document,
// as Kubernetes reads it: an Indexed Job of N pods started together whose
// hostnames (job-completion-index) resolve through the headless Service
// named as the pods' subdomain, torchrun's c10d rendezvous on pod 0's
// name, the script from the ConfigMap, NCCL's INFO log on.
func TestWriteMultiNodeJob(t *testing.T) {
	var b strings.Builder
	if err := WriteMultiNodeJob(&b, MultiNodeJob{Image: "registry.example.com/ml/train:efa", Nodes: 4, Fabric: "efa"}); err != nil {
		t.Fatal(err)
	}
	type obj struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string
		Metadata   struct{ Name string }
		Data       map[string]string
		Spec       struct {
			ClusterIP      string `yaml:"clusterIP"`
			Selector       map[string]string
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Parallelism    int
			BackoffLimit   int `yaml:"backoffLimit"`
			Template       struct {
				Spec struct {
					Subdomain     string
					RestartPolicy string `yaml:"restartPolicy"`
					Volumes       []struct {
						Name      string
						ConfigMap struct{ Name string } `yaml:"configMap"`
					}
					Containers []struct {
						Img          string   `yaml:"image"`
						Cmd          []string `yaml:"command"`
						Args         []string
						Env          []struct{ Name, Value string }
						Resources    struct{ Limits map[string]int }
						VolumeMounts []struct {
							Name      string
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					}
				}
			}
		}
	}
	dec := yaml.NewDecoder(strings.NewReader(b.String()))
	byKind := map[string]obj{}
	for {
		var o obj
		if err := dec.Decode(&o); err != nil {
			break
		}
		byKind[o.Kind] = o
	}
	cm, svc, job := byKind["ConfigMap"], byKind["Service"], byKind["Job"]
	if len(byKind) != 3 || cm.Metadata.Name != jobName || svc.Metadata.Name != jobName || job.Metadata.Name != jobName {
		t.Fatalf("documents %v\n%s", byKind, b.String())
	}
	if cm.Data["allreduce.py"] != allReducePy {
		t.Errorf("the ConfigMap's script differs from allreduce.py:\n%s", cm.Data["allreduce.py"])
	}
	if svc.Spec.ClusterIP != "None" || svc.Spec.Selector["job-name"] != jobName {
		t.Errorf("service %+v: want headless, selecting job-name=%s", svc.Spec, jobName)
	}
	s := job.Spec
	if s.CompletionMode != "Indexed" || s.Completions != 4 || s.Parallelism != 4 || s.BackoffLimit != 0 {
		t.Errorf("job spec %+v: want Indexed, 4 completions all in parallel, no retries", s)
	}
	ps := s.Template.Spec
	if ps.Subdomain != jobName || ps.RestartPolicy != "Never" || len(ps.Containers) != 1 {
		t.Fatalf("pod spec %+v", ps)
	}
	c := ps.Containers[0]
	want := []string{"--nnodes=4", "--nproc-per-node=8", "--rdzv-backend=c10d", "--rdzv-endpoint=gpuimg-allreduce-0.gpuimg-allreduce:29500", "--rdzv-id=gpuimg-allreduce", "/gpuimg/allreduce.py"}
	if c.Img != "registry.example.com/ml/train:efa" || strings.Join(c.Cmd, " ") != "torchrun" || strings.Join(c.Args, " ") != strings.Join(want, " ") {
		t.Errorf("container %q %v %v, want torchrun %v", c.Img, c.Cmd, c.Args, want)
	}
	if c.Resources.Limits["nvidia.com/gpu"] != 8 || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/gpuimg" || ps.Volumes[0].ConfigMap.Name != jobName {
		t.Errorf("resources %v, mounts %v, volumes %v", c.Resources, c.VolumeMounts, ps.Volumes)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["NCCL_DEBUG"] != "INFO" {
		t.Errorf("env %v: want NCCL_DEBUG=INFO", env)
	}
	if !strings.Contains(b.String(), "the efa fabric's") {
		t.Errorf("the manifest does not say the fabric's devices are the cluster's to give")
	}
	for _, bad := range []MultiNodeJob{{Image: "x", Nodes: 1}, {Nodes: 2}} {
		if err := WriteMultiNodeJob(&b, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	// The script is Python that compiles (it needs torch and GPUs to run).
	if py, err := exec.LookPath("python3"); err == nil {
		p := filepath.Join(t.TempDir(), "allreduce.py")
		if err := os.WriteFile(p, []byte(allReducePy), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(py, "-m", "py_compile", p).CombinedOutput(); err != nil {
			t.Errorf("allreduce.py does not compile: %v\n%s", err, out)
		}
	}
}

// TestRunMultiNode: Run with Nodes writes the multi-node Job (no probe
// image needed) and refuses Nodes for an engine on one machine.
func TestRunMultiNode(t *testing.T) {
	var b strings.Builder
	img := ref(t, "registry.example.com/ml/train:efa")
	if rep, err := Run(t.Context(), Options{Mode: Kubernetes, Image: img, Nodes: 2, Fabric: "efa", Manifest: &b}); err != nil || rep != nil {
		t.Fatalf("Run: %v, %v", rep, err)
	}
	if !strings.Contains(b.String(), "kind: Job") || !strings.Contains(b.String(), "--nnodes=2") {
		t.Errorf("manifest:\n%s", b.String())
	}
	if _, err := Run(t.Context(), Options{Mode: Docker, Image: img, Nodes: 2}); err == nil || !strings.Contains(err.Error(), "--run kubernetes") {
		t.Errorf("docker with 2 nodes: %v", err)
	}
}

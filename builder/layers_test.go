package builder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/buildkit/client"

	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/matrix"
)

// torchPlan is what torch 2.3.1+cu121's pip install leaves (sizes in
// bytes, about the real installed sizes).
var torchPlan = []PlannedDist{
	{Name: "filelock", Version: "3.15.4", Step: 1, Size: 40_000, Shared: true},
	{Name: "MarkupSafe", Version: "2.1.5", Step: 1, Size: 60_000},
	{Name: "nvidia-cublas-cu12", Version: "12.1.3.1", Step: 1, Size: 730_000_000, Shared: true},
	{Name: "nvidia-cudnn-cu12", Version: "8.9.2.26", Step: 1, Size: 880_000_000, Shared: true},
	{Name: "nvidia-nvtx-cu12", Version: "12.1.105", Step: 1, Size: 300_000, Shared: true},
	{Name: "sympy", Version: "1.13.0", Step: 1, Size: 30_000_000},
	{Name: "torch", Version: "2.3.1+cu121", Step: 1, Size: 2_300_000_000},
	{Name: "torchvision", Version: "0.18.1+cu121", Step: 1, Size: 15_000_000},
	{Name: "triton", Version: "2.3.1", Step: 1, Size: 450_000_000},
}

func TestLayerPlan(t *testing.T) {
	got := LayerPlan(torchPlan, 0)
	want := []string{
		"shared nvidia-cublas-cu12==12.1.3.1",
		"shared nvidia-cudnn-cu12==8.9.2.26",
		"shared filelock==3.15.4 nvidia-nvtx-cu12==12.1.105",
		"venv torch==2.3.1+cu121",
		"venv triton==2.3.1",
		"venv MarkupSafe==2.1.5 sympy==1.13.0 torchvision==0.18.1+cu121",
	}
	if len(got) != len(want) {
		t.Fatalf("%d layers, want %d: %+v", len(got), len(want), got)
	}
	for i, l := range got {
		where := "venv"
		if l.Shared {
			where = "shared"
		}
		if s := where + " " + strings.Join(l.Dists, " "); s != want[i] {
			t.Errorf("layer %d: %s, want %s", i+1, s, want[i])
		}
	}
	if n := len(LayerPlan(torchPlan, 1)); n != len(torchPlan) {
		t.Errorf("a 1-byte threshold gives %d layers, want one per distribution (%d)", n, len(torchPlan))
	}
}

func TestLayeredDockerfile(t *testing.T) {
	def := Definition{
		Stack:  resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}),
		Base:   "docker.io/nvidia/cuda:12.2.2-base-ubuntu22.04@sha256:0000000000000000000000000000000000000000000000000000000000000000",
		Extras: Extras{Pip: []string{"numpy==1.26.4"}, Copy: []string{"app:/app"}},
	}
	got, err := LayeredDockerfile(def, torchPlan, 0)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "torch-layered.Dockerfile")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./builder -args -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("layered Dockerfile differs from %s (go test ./builder -args -update after checking):\n%s", golden, got)
	}
	// Order: shared COPY --link layers, the venv (with the .pth file and
	// the links to the shared top-level directories), torch, the rest of torch's step, the user's.
	final := got[strings.Index(got, " AS "+StageImage+"\n"):strings.Index(got, " AS "+StageCheck+"\n")]
	order := []string{"COPY --link --from=gpuimg-layer-1 /gpuimg/layer/ /", "COPY --link --from=gpuimg-layer-3", "cp -a /tmp/gpuimg-venv/. /opt/venv/", "gpuimg-shared.pth", "gpuimg-plan.py link /opt/venv/lib/gpuimg-shared/site-packages /tmp/gpuimg-plan.json",
		"COPY --link --from=gpuimg-layer-4", "COPY --link --from=gpuimg-layer-5", "copy /tmp/gpuimg-venv / MarkupSafe==2.1.5 sympy==1.13.0 torchvision==0.18.1+cu121", "numpy==1.26.4", `COPY --link --from=user "app"`}
	last := -1
	for _, s := range order {
		i := strings.Index(final, s)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in the image stage:\n%s", s, final)
		}
		last = i
	}
	for _, s := range []string{"FROM gpuimg-frameworks AS gpuimg-layer-2\n", "copy --shared /opt/venv /gpuimg/layer/opt/venv/lib/gpuimg-shared/site-packages nvidia-cudnn-cu12==8.9.2.26 \\\n && " + fixTimes(layerRoot) + "\n",
		"copy /opt/venv /gpuimg/layer torch==2.3.1+cu121 \\\n && " + fixTimes(layerRoot) + "\n", "--mount=type=bind,from=gpuimg-python,source=/opt/venv,target=/tmp/gpuimg-venv"} {
		if !strings.Contains(got, s) {
			t.Errorf("layered Dockerfile lacks %q", s)
		}
	}
	if _, err := LayeredDockerfile(def, []PlannedDist{{Name: "x", Version: "1", Step: 2}}, 0); err == nil {
		t.Error("a plan step the stack lacks was accepted")
	}
}

// TestPlanDists reads the plan stage's file as the layered build's
// first pass exports it: a plan, bad JSON named, and a plan over
// maxPlanBytes refused without being read (a sparse file).
func TestPlanDists(t *testing.T) {
	read := func(write func(path string) error) ([]PlannedDist, error) {
		return planDists(client.SolveOpt{FrontendAttrs: map[string]string{}}, func(opt client.SolveOpt) (*client.SolveResponse, error) {
			return nil, write(filepath.Join(opt.Exports[0].OutputDir, PlanFile))
		})
	}
	dists, err := read(func(p string) error {
		return os.WriteFile(p, []byte(`[{"name":"torch","version":"2.3.1","step":1,"size":2300000000}]`), 0o644)
	})
	if err != nil || len(dists) != 1 || dists[0].Name != "torch" || dists[0].Step != 1 {
		t.Fatalf("planDists = %+v, %v; want torch from step 1", dists, err)
	}
	if _, err := read(func(p string) error { return os.WriteFile(p, []byte(`{"name":`), 0o644) }); err == nil || !strings.Contains(err.Error(), PlanFile) {
		t.Errorf("bad JSON: err = %v, want one naming %s", err, PlanFile)
	}
	_, err = read(func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(maxPlanBytes + 1)
	})
	if !errors.Is(err, bound.ErrBound) {
		t.Errorf("a plan of %d bytes: err = %v, want refused as larger than the bound", maxPlanBytes+1, err)
	}
}

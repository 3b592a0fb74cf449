package builder

import (
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestProofStages: both Dockerfiles prove the frameworks' environment
// (the plan stage builds on that check, so a layered build starts from a
// proven environment) and the image (a stage on StageImage that nothing
// depends on), and end with the image itself, unchanged; NoChecks leaves
// the checks out and the image stage as it is.
func TestProofStages(t *testing.T) {
	stack := resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")})
	plan := []PlannedDist{{Name: "torch", Version: "2.3.1+cu121", Step: 1, Size: 800e6}, {Name: "nvidia-cublas-cu12", Version: "12.1.3.1", Step: 1, Size: 400e6, Shared: true, Top: []string{"nvidia"}}}
	render := map[string]func(Definition) (string, error){
		"plain":   Dockerfile,
		"layered": func(d Definition) (string, error) { return LayeredDockerfile(d, plan, 0) },
	}
	for name, r := range render {
		t.Run(name, func(t *testing.T) {
			d := Definition{Stack: stack, Base: pinned, Extras: Extras{Pip: []string{"numpy==1.26.4"}}}
			checked, err := r(d)
			if err != nil {
				t.Fatal(err)
			}
			d.NoChecks = true
			unchecked, err := r(d)
			if err != nil {
				t.Fatal(err)
			}
			run := "/opt/venv/bin/python -B /tmp/gpuimg-proof.py /tmp/gpuimg-hostlibs.json /opt/venv torch\n"
			for _, want := range []string{
				"FROM gpuimg-frameworks AS gpuimg-check-env\nRUN --mount=type=bind,source=gpuimg/proof.py,target=/tmp/gpuimg-proof.py --mount=type=bind,source=gpuimg/hostlibs.json,target=/tmp/gpuimg-hostlibs.json \\\n    " + run,
				"FROM gpuimg-check-env AS gpuimg-plan-files\n",
				"FROM gpuimg-image AS gpuimg-check\n",
			} {
				if !strings.Contains(checked, want) {
					t.Errorf("checked Dockerfile lacks %q:\n%s", want, checked)
				}
			}
			if strings.Count(checked, run) != 2 {
				t.Errorf("want the proof twice (environment, image):\n%s", checked)
			}
			if !strings.HasSuffix(checked, "\nFROM gpuimg-image\n") {
				t.Errorf("the last (default) stage is not the image itself:\n%s", checked[strings.LastIndex(checked, "\nFROM "):])
			}
			if strings.Contains(unchecked, "proof.py") || strings.Contains(unchecked, "gpuimg-check") {
				t.Errorf("NoChecks Dockerfile has a check:\n%s", unchecked)
			}
			// The image stage is the same with or without the proof.
			image := func(df string) string {
				i := strings.Index(df, " AS "+StageImage+"\n")
				if i < 0 {
					t.Fatalf("no %s stage:\n%s", StageImage, df)
				}
				rest := df[i:]
				if j := strings.Index(rest, "\nFROM "); j >= 0 {
					rest = rest[:j]
				}
				return strings.TrimSuffix(strings.TrimRight(rest, "\n"), "\n\n# The proof, on the image as built: libraries resolve, frameworks import.")
			}
			if a, b := image(checked), image(unchecked); a != b {
				t.Errorf("the image stage differs with the proof:\n%s\n---\n%s", a, b)
			}
		})
	}
}

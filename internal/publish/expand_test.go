package publish

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

func builtin(t *testing.T) *matrix.DB {
	t.Helper()
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func expand(t *testing.T, src string, opts ExpandOptions) *Plan {
	t.Helper()
	f, err := parse(t, src)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Expand(t.Context(), builtin(t), f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func names(p *Plan) []string {
	var out []string
	for _, v := range p.Variants {
		out = append(out, v.Name)
	}
	return out
}

func skipped(p *Plan) []string {
	var out []string
	for _, s := range p.Skipped {
		out = append(out, axesKey(s.Axes)+": "+tmpDir.ReplaceAllString(s.Reason, "("))
	}
	return out
}

// tmpDir matches the temporary directory of parse's publish.yaml.
var tmpDir = regexp.MustCompile(`\(/\S*/`)

func axesKey(axes map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(axes)) {
		parts = append(parts, k+"="+axes[k])
	}
	return strings.Join(parts, " ")
}

func TestExpand(t *testing.T) {
	db := builtin(t)
	tc := matrix.MustConstraint("2.7")
	_, err := db.Resolve(matrix.Constraints{CUDA: matrix.MustConstraint("12.4"), Torch: &tc, Python: matrix.MustConstraint("3.11")})
	var ce *matrix.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("the test expects CUDA 12.4 with torch 2.7 refused, got %v", err)
	}
	refused := ce.Reason

	tests := []struct {
		name    string
		src     string
		names   []string
		skipped []string
	}{{
		name: "product in the order written, the last axis fastest",
		src: `repository: r.example.com/t
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.8", "12.6"]
  python: ["3.12", "3.11"]
  torch: ["2.7"]
`,
		names: []string{"2.7.1-cu128-py3.12", "2.7.1-cu128-py3.11", "2.7.1-cu126-py3.12", "2.7.1-cu126-py3.11"},
	}, {
		name: "exclude drops matching combinations, include adds, refused ones are skipped with the resolver's reason",
		src: `repository: r.example.com/t
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.4", "12.8"]
  torch: ["2.6", "2.7"]
  python: ["3.11"]
exclude:
  - {cuda: "12.8", torch: "2.6"}
include:
  - {cuda: "13.0", torch: "2.9", python: "3.12"}
  - {cuda: "12.8", torch: "2.6", python: "3.11"}
  - {cuda: "12.4", torch: "2.7", python: "3.11"}
`,
		// An include is never excluded: 2.6.0-cu128 comes from the include
		// that matches the exclude entry.
		names: []string{"2.6.0-cu124-py3.11", "2.7.1-cu128-py3.11", "2.9.1-cu130-py3.12", "2.6.0-cu128-py3.11"},
		skipped: []string{
			"cuda=12.4 python=3.11 torch=2.7: " + refused,
			"cuda=12.8 python=3.11 torch=2.6: excluded (publish.yaml:8)",
			"cuda=12.4 python=3.11 torch=2.7: " + refused,
		},
	}, {
		name: "two combinations resolving to the same stack give one variant",
		src: `repository: r.example.com/t
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.6", "12.6.3", "12"]
  torch: ["2.7"]
  python: ["3.12"]
`,
		names: []string{"2.7.1-cu126-py3.12", "2.7.1-cu129-py3.12"},
		skipped: []string{
			"cuda=12.6.3 python=3.12 torch=2.7: same stack as 2.7.1-cu126-py3.12",
		},
	}, {
		name: "axes that are not resolved keep their value; flavor and os are the resolved ones",
		src: `repository: r.example.com/t
tag: "{torch}-{flavor}-{os}-drv{driver}"
matrix:
  torch: ["2.7"]
  flavor: [runtime, devel]
  driver: ["570.124.06"]
`,
		names: []string{"2.7.1-runtime-ubuntu24.04-drv570.124.06", "2.7.1-devel-ubuntu24.04-drv570.124.06"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := expand(t, tt.src, ExpandOptions{})
			if got := names(p); !slices.Equal(got, tt.names) {
				t.Errorf("variants\n  %q\nwant\n  %q", got, tt.names)
			}
			if got := skipped(p); !slices.Equal(got, tt.skipped) {
				t.Errorf("skipped\n  %q\nwant\n  %q", got, tt.skipped)
			}
			for _, v := range p.Variants {
				if v.Tag != "r.example.com/t:"+v.Name || !strings.HasPrefix(v.Inputs, "sha256:") || len(v.Inputs) != 71 || v.Stack.CUDA == "" {
					t.Errorf("variant %+v", v)
				}
			}
			// Deterministic: the same file expands the same way again.
			again := expand(t, tt.src, ExpandOptions{})
			if !slices.Equal(names(again), names(p)) || !slices.Equal(skipped(again), skipped(p)) {
				t.Errorf("second expansion differs: %q %q", names(again), skipped(again))
			}
			for i := range p.Variants {
				if again.Variants[i].Inputs != p.Variants[i].Inputs {
					t.Errorf("%s: inputs %s then %s", p.Variants[i].Name, p.Variants[i].Inputs, again.Variants[i].Inputs)
				}
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	long := strings.Repeat("x", 120)
	tests := []struct{ name, src, want string }{
		{"two stacks, one tag", `repository: r.example.com/t
tag: "{torch}"
matrix:
  torch: ["2.7"]
  python: ["3.11", "3.12"]
`, `publish.yaml:2: tag "2.7.1" is rendered for two different stacks (the second from torch 2.7, python 3.12); add the field that tells them apart`},
		{"field the stack lacks", `repository: r.example.com/t
tag: "{tensorflow}-py{python}"
matrix:
  torch: ["2.7"]
`, `publish.yaml:2: torch 2.7: tag template "{tensorflow}-py{python}": {tensorflow} has no value for this stack`},
		{"rendered tag too long", `repository: r.example.com/t
tag: "` + long + `-{os}"
matrix:
  torch: ["2.7"]
`, `publish.yaml:2: torch 2.7: tag template "` + long + `-{os}" renders "` + long + `-ubuntu24.04" is not a valid image tag`},
		{"unknown GPU", `repository: r.example.com/t
tag: "{torch}"
matrix:
  torch: ["2.7"]
  gpu: [nosuchgpu]
`, `resolve torch 2.7, gpu nosuchgpu:`},
		{"unknown GPU in validate:", `repository: r.example.com/t
tag: "{torch}"
matrix:
  torch: ["2.7"]
validate: {driver: 580.95.05, gpu: [h100, h1000]}
`, `validate.gpu[1]: unknown GPU "h1000"`},
		{"a target gpu outside the fleet", `repository: r.example.com/t
tag: "{torch}"
matrix:
  torch: ["2.7"]
targets:
  - {target: sagemaker/p5, repository: r.example.com/p5, gpu: [l4]}
`, `targets: target sagemaker/p5: gpu: GPU L4 is not among target sagemaker/p5's GPUs (H100-SXM)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parse(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Expand(t.Context(), builtin(t), f, ExpandOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %v\nwant\n  %s", err, tt.want)
			}
		})
	}
}

const inputsBase = `repository: r.example.com/t
tag: "{torch}-py{python}"
matrix:
  torch: ["2.7"]
  python: ["3.12"]
platforms: [linux/amd64, linux/arm64]
build:
  pip: ["numpy==2.1.3"]
  copy: ["app:/app"]
  env: {A: "1", B: "2"}
`

func inputsOf(t *testing.T, src string, opts ExpandOptions) string {
	t.Helper()
	p := expand(t, src, opts)
	if len(p.Variants) != 1 {
		t.Fatalf("variants %q", names(p))
	}
	return p.Variants[0].Inputs
}

func TestInputs(t *testing.T) {
	base := inputsOf(t, inputsBase, ExpandOptions{})
	stack := expand(t, inputsBase, ExpandOptions{}).Variants[0].Stack
	pinned := images.Base{Name: "docker.io/" + stack.BaseImage, Digest: "sha256:" + strings.Repeat("a", 64), From: "docker.io/" + stack.BaseImage + "@sha256:" + strings.Repeat("a", 64), Created: time.Unix(1700000000, 0)}
	tests := []struct {
		name string
		src  string
		opts ExpandOptions
		same bool
	}{
		{"same file", inputsBase, ExpandOptions{}, true},
		{"env keys reordered", strings.Replace(inputsBase, `{A: "1", B: "2"}`, `{B: "2", A: "1"}`, 1), ExpandOptions{}, true},
		{"platforms reordered", strings.Replace(inputsBase, "[linux/amd64, linux/arm64]", "[linux/arm64, linux/amd64]", 1), ExpandOptions{}, true},
		{"comments and tag template", strings.Replace(inputsBase, `tag: "{torch}-py{python}"`, "# nightly\ntag: \"v{torch}\"", 1), ExpandOptions{}, true},
		{"a file that is not copied", inputsBase, ExpandOptions{Files: map[string]string{"other": "sha256:1"}}, true},
		{"pip extra changed", strings.Replace(inputsBase, "numpy==2.1.3", "numpy==2.1.2", 1), ExpandOptions{}, false},
		{"env value changed", strings.Replace(inputsBase, `A: "1"`, `A: "0"`, 1), ExpandOptions{}, false},
		{"a platform dropped", strings.Replace(inputsBase, "[linux/amd64, linux/arm64]", "[linux/amd64]", 1), ExpandOptions{}, false},
		{"the stack changed", strings.Replace(inputsBase, `python: ["3.12"]`, `python: ["3.11"]`, 1), ExpandOptions{}, false},
		{"base pinned", inputsBase, ExpandOptions{Bases: map[string]images.Base{stack.BaseImage: pinned}}, false},
		{"copied file's digest", inputsBase, ExpandOptions{Files: map[string]string{"app": "sha256:1"}}, false},
		{"source date epoch", inputsBase, ExpandOptions{SourceDateEpoch: 1700000000}, false},
		{"torch.compile left out", inputsBase, ExpandOptions{NoTorchCompile: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inputsOf(t, tt.src, tt.opts)
			if (got == base) != tt.same {
				t.Errorf("inputs %s, base file %s; want same=%v", got, base, tt.same)
			}
		})
	}
	// The pinned base's digest decides Inputs, and the Dockerfile is FROM it.
	other := pinned
	other.Digest = "sha256:" + strings.Repeat("b", 64)
	other.From = strings.Replace(pinned.From, pinned.Digest, other.Digest, 1)
	a := inputsOf(t, inputsBase, ExpandOptions{Bases: map[string]images.Base{stack.BaseImage: pinned}})
	b := inputsOf(t, inputsBase, ExpandOptions{Bases: map[string]images.Base{stack.BaseImage: other}})
	if a == b {
		t.Errorf("a base moving to a new digest kept inputs %s", a)
	}
	f, err := parse(t, inputsBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opts ExpandOptions
		from string
	}{
		{ExpandOptions{}, "\nFROM " + stack.BaseImage + " AS gpuimg-python\n"},
		{ExpandOptions{Bases: map[string]images.Base{stack.BaseImage: pinned}}, "\nFROM " + pinned.From + " AS gpuimg-python\n"},
	} {
		df, err := Dockerfile(stack, f.Build, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(df, c.from) || strings.Contains(df, unpinned) || !strings.Contains(df, "numpy==2.1.3") {
			t.Errorf("Dockerfile lacks %q or has the placeholder:\n%s", c.from, df)
		}
	}
}

// TestExpandJudgesValidation: the plan marks a variant whose stack
// cannot pass the file's validate: or a target fleet (issue 43 item 8)
// with the reason validation would give. Facts: cuda.yaml (driver
// 535.104.05 reports CUDA 12.2; CUDA 12.6.3's floor is 560.35.05);
// targets.yaml (sagemaker/p5: driver 535.54.03, H100-SXM).
func TestExpandJudgesValidation(t *testing.T) {
	for _, tt := range []struct {
		name   string
		extra  string
		marked int // variants marked as failing validation
		reason string
	}{
		{"validate: passes", "validate: {driver: 580.95.05, gpu: [h100, l4]}\n", 0, ""},
		{"validate: driver too old for CUDA 12.6", "validate: {driver: 535.104.05}\n", 1, "torch 2.7.1 cu126 py3.12 would fail validate (driver 535.104.05): require_cuda: driver 535.104.05 reports CUDA 12.2"},
		{"a target fleet's driver", "targets:\n  - {target: sagemaker/p5, repository: r.example.com/p5}\n", 1, "would fail target sagemaker/p5 (driver 535.54.03, GPUs H100-SXM)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := `repository: r.example.com/t
tag: "{torch}-cu{cuda_short}"
matrix:
  torch: ["2.7"]
  cuda: ["11.8", "12.6"]
` + tt.extra
			p := expand(t, src, ExpandOptions{})
			if len(p.Variants) != 2 {
				t.Fatalf("variants %q, want 2 (marked, not dropped)", names(p))
			}
			var reasons []string
			for _, v := range p.Variants {
				if v.Validation != "" {
					reasons = append(reasons, v.Validation)
				}
			}
			if len(reasons) != tt.marked {
				t.Errorf("marked %q, want %d", reasons, tt.marked)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(reasons, "\n"), tt.reason) {
				t.Errorf("marked %q, want one saying %q", reasons, tt.reason)
			}
		})
	}
}

// TestWheelCUDAField: {torch_cuda_short} is the wheels' CUDA, {cuda_short}
// the image's (issue 43 item 9). Facts: torch.yaml (torch 2.6.0 has cu118,
// cu124 and cu126 wheels, none for 12.8), so on a CUDA 12.8 image it
// installs cu126 wheels.
func TestWheelCUDAField(t *testing.T) {
	p := expand(t, `repository: r.example.com/t
tag: "{torch}-cu{torch_cuda_short}-image{cuda_short}"
matrix:
  torch: ["2.6"]
  cuda: ["12.8"]
`, ExpandOptions{})
	if got := names(p); len(got) != 1 || got[0] != "2.6.0-cu126-image128" {
		t.Errorf("variants %q, want 2.6.0-cu126-image128", got)
	}
	f := Fields(p.Variants[0].Stack, nil)
	if f["torch_cuda_short"] != "126" || f["cuda_short"] != "128" || f["jax_cuda_short"] != "" {
		t.Errorf("fields %v", f)
	}
}

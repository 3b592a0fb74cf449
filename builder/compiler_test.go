package builder

import (
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestDockerfileTorchCompile: a stack whose torch brings triton gets
// torch.compile's compiler and the headers of its Python in the step that
// installs the stack's Python (the OS stage's one install), in the plain
// and the layered Dockerfile; on apt the layered image has the files of
// the packages any Python shares (the compiler's) in a layer of its own; a stack without triton, or a build that opts out,
// gets none, and verify.py is told of the opt-out.
func TestDockerfileTorchCompile(t *testing.T) {
	const rocky9 = "docker.io/nvidia/cuda:12.2.2-runtime-rockylinux9@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const rocky8 = "docker.io/nvidia/cuda:12.1.1-runtime-rockylinux8@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	torch := resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")})
	tests := []struct {
		name string
		def  Definition
		// want are the packages the Python step installs, in order.
		want []string
		// check is the shell test of the step (empty: the Python's alone).
		check bool
	}{
		{"torch on ubuntu", Definition{Stack: torch, Base: pinned},
			[]string{"python3.10", "python3.10-venv", "gcc", "libc6-dev", "python3.10-dev"}, true},
		{"torch on rocky 9, its python3.9", Definition{Stack: resolve(t, matrix.Constraints{Torch: cons("2.3"), Python: matrix.MustConstraint("3.9"), OS: "rockylinux9"}), Base: rocky9},
			[]string{"python3", "gcc", "python3-devel"}, true},
		{"torch on rocky 9, python3.11", Definition{Stack: resolve(t, matrix.Constraints{Torch: cons("2.3"), Python: matrix.MustConstraint("3.11"), OS: "rockylinux9"}), Base: rocky9},
			[]string{"python3.11", "gcc", "python3.11-devel"}, true},
		{"torch on rocky 8, python39", Definition{Stack: resolve(t, matrix.Constraints{Torch: cons("2.3"), Python: matrix.MustConstraint("3.9"), OS: "rockylinux8"}), Base: rocky8},
			[]string{"python39", "gcc", "python39-devel"}, true},
		{"tensorflow alone: no triton", Definition{Stack: resolve(t, matrix.Constraints{TensorFlow: cons("2.15"), OS: "rockylinux9"}), Base: rocky9},
			[]string{"python3"}, false},
		{"torch 1.13: no triton", Definition{Stack: resolve(t, matrix.Constraints{Torch: cons("1.13")}), Base: pinned},
			nil, false},
		{"torch on a standalone CPython: its own Python.h, the compiler from the OS", Definition{Stack: standaloneStack(t, matrix.Constraints{Torch: cons("2.7"), Python: matrix.MustConstraint("3.13")}), Base: pinned},
			[]string{"gcc", "libc6-dev"}, true},
		{"opted out", Definition{Stack: torch, Base: pinned, NoTorchCompile: true},
			[]string{"python3.10", "python3.10-venv"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			py := tt.def.Stack.Python
			if tt.want == nil {
				tt.want = []string{"python" + py, "python" + py + "-venv"}
			}
			plain, err := Dockerfile(tt.def)
			if err != nil {
				t.Fatal(err)
			}
			plan := []PlannedDist{{Name: "torch", Version: tt.def.Stack.Frameworks[tt.def.Stack.FrameworkList()[0].Name].Version, Step: 1, Size: 1 << 30}}
			layered, err := LayeredDockerfile(tt.def, plan, 0)
			if err != nil {
				t.Fatal(err)
			}
			for name, df := range map[string]string{"plain": plain, "layered": layered} {
				steps := pythonSteps(df)
				if len(steps) != 1 {
					t.Fatalf("%s: %d steps install the Python, want one (the OS stage's, whose files the venv steps copy):\n%s", name, len(steps), df)
				}
				if n, want := strings.Count(df, "--mount=type=bind,from="+stageOS+",source="+layerRoot+","), strings.Count(df, " AS "+stagePython+"\n")+strings.Count(df, "\nFROM "+tt.def.Base+" AS "+StageImage+"\n"); n != want {
					t.Errorf("%s: %d steps copy the OS stage's files, want %d (the python stage's, and the layered image's)", name, n, want)
				}
				// On apt, what any Python shares goes to a layer of its own
				// in the layered image, and to the python stage by a copy.
				split := !strings.Contains(tt.def.Stack.OS, "rocky")
				wantShared := map[bool]int{true: 1, false: 0}[split]
				if n := strings.Count(df, "--mount=type=bind,from="+stageOS+",source="+osSharedRoot+","); n != wantShared {
					t.Errorf("%s: %d steps copy the OS stage's shared files, want %d (the python stage's)", name, n, wantShared)
				}
				wantLayer := 0
				if name == "layered" && split {
					wantLayer = 1
				}
				if n := strings.Count(df, "COPY --link --from="+stageOS+" "+osSharedRoot+"/ /\n"); n != wantLayer {
					t.Errorf("%s: %d layers of the OS stage's shared files, want %d", name, n, wantLayer)
				}
				for _, step := range steps {
					if got := installed(step); strings.Join(got, " ") != strings.Join(tt.want, " ") {
						t.Errorf("%s: the Python step installs %q, want %q", name, got, tt.want)
					}
					if has := strings.Contains(step, "Python.h"); has != tt.check {
						t.Errorf("%s: the Python step tests for Python.h: %v, want %v:\n%s", name, has, tt.check, step)
					}
				}
				if n := strings.Count(df, "apt-get install") + strings.Count(df, "dnf install"); n != len(steps) {
					t.Errorf("%s: %d OS package installs, want only the Python steps' %d", name, n, len(steps))
				}
			}
			opt := strings.Contains(plain, "gpuimg-verify.py --no-torch-compile ")
			if opt != tt.def.NoTorchCompile {
				t.Errorf("verify.py --no-torch-compile: %v, want %v", opt, tt.def.NoTorchCompile)
			}
			// Opting out changes the OS packages only: the same steps
			// outside the stage that installs them (a standalone CPython
			// opting out needs no OS packages, so no such stage), so the
			// same layers.
			other := tt.def
			other.NoTorchCompile = !other.NoTorchCompile
			df, err := Dockerfile(other)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := strings.Count(withoutStage(plain, stageOS), "\nRUN "), strings.Count(withoutStage(df, stageOS), "\nRUN "); a != b {
				t.Errorf("%d RUN steps, %d with NoTorchCompile %v", a, b, other.NoTorchCompile)
			}
		})
	}
}

// withoutStage is df without the stage named name (from its FROM line to
// the next FROM).
func withoutStage(df, name string) string {
	i := strings.Index(df, " AS "+name+"\n")
	if i < 0 {
		return df
	}
	i = strings.LastIndex(df[:i], "\nFROM ")
	j := strings.Index(df[i+1:], "\nFROM ")
	if j < 0 {
		return df[:i]
	}
	return df[:i] + df[i+1+j:]
}

// pythonSteps are the RUN steps of df that make the venv (python -m venv
// or the copy of the python stage's).
func pythonSteps(df string) []string {
	var out []string
	for _, step := range strings.Split(df, "\nRUN ")[1:] {
		step, _, _ = strings.Cut(step, "\nENV ")
		if strings.Contains(step, "import ensurepip, venv") {
			out = append(out, step)
		}
	}
	return out
}

// installed are the packages a step's apt-get or dnf install names.
func installed(step string) []string {
	for _, cmd := range []string{"apt-get install -y --no-install-recommends ", "dnf install -y --setopt=install_weak_deps=False "} {
		if _, rest, ok := strings.Cut(step, cmd); ok {
			rest, _, _ = strings.Cut(rest, " && ")
			rest, _, _ = strings.Cut(rest, " -o ") // apt's options after the names
			return strings.Fields(rest)
		}
	}
	return nil
}

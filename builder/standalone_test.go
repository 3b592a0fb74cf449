package builder

import (
	"bytes"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/gpuimg/gpuimg/matrix"
)

// standaloneStack is torch 2.7 on Python 3.13, which no Ubuntu LTS with
// torch 2.7's CUDA images packages: a standalone CPython.
func standaloneStack(t *testing.T, c matrix.Constraints) matrix.Stack {
	t.Helper()
	s := resolve(t, c)
	if s.PythonSource == nil || s.PythonSource.Kind != matrix.PythonStandalone {
		t.Fatalf("%+v: Python %s from %+v, want a standalone CPython", c, s.Python, s.PythonSource)
	}
	return s
}

// TestStandaloneDockerfile: a stack with a standalone CPython fetches the
// archive of the target's architecture by URL (the mirror's prefix when
// one is set, the asset's name kept) checked against its sha256, unpacks
// it, and adds it to the Python stage (and, layered, to the image) as a
// layer of its own from a stage that does not depend on the variant; the
// venv is made from it and no OS package installs Python. A stack with
// the OS's Python has none of it.
func TestStandaloneDockerfile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      matrix.Constraints
		mirror string
	}{
		{"torch 2.7 on Python 3.13", matrix.Constraints{Torch: cons("2.7"), Python: matrix.MustConstraint("3.13")}, ""},
		{"CUDA 12.1 on Python 3.12 on Ubuntu, through a mirror", matrix.Constraints{CUDA: matrix.MustConstraint("12.1"), Torch: cons("2.3"), Python: matrix.MustConstraint("3.12"), OS: "ubuntu"}, "http://127.0.0.1:8080/pbs/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := standaloneStack(t, tc.c)
			ps := s.PythonSource
			d := Definition{Stack: s, Base: pinned, PythonMirror: tc.mirror}
			plain, err := Dockerfile(d)
			must(t, err)
			layered, err := LayeredDockerfile(d, []PlannedDist{{Name: "torch", Version: "2.7.1", Step: 1, Size: 1e9}, {Name: "nvidia-cublas-cu12", Version: "12.6.4.1", Step: 1, Size: 1e9, Shared: true}}, 0)
			must(t, err)
			base := matrix.StandalonePythonURL
			if tc.mirror != "" {
				base = tc.mirror
			}
			for name, df := range map[string]string{"Dockerfile": plain, "LayeredDockerfile": layered} {
				if _, err := parser.Parse(bytes.NewReader([]byte(df))); err != nil {
					t.Fatalf("%s does not parse: %v", name, err)
				}
				for _, a := range ps.Archives {
					arch := a.Platform[strings.LastIndex(a.Platform, "/")+1:]
					want := "FROM scratch AS gpuimg-cpython-" + arch + "\nADD --checksum=sha256:" + a.SHA256 + " --unpack=true " + a.URL(base, ps.Release) + " /\n"
					if !strings.Contains(df, want) {
						t.Errorf("%s lacks\n%s", name, want)
					}
					if tc.mirror != "" && strings.Contains(df, matrix.StandalonePythonURL) {
						t.Errorf("%s still fetches from %s with a mirror", name, matrix.StandalonePythonURL)
					}
				}
				for _, want := range []string{
					"FROM gpuimg-cpython-${TARGETARCH} AS gpuimg-cpython-archive\n",
					"FROM " + pinned + " AS gpuimg-cpython\n",
					"mkdir -p /gpuimg/cpython/opt/gpuimg && cp -a /tmp/gpuimg-cpython /gpuimg/cpython/opt/gpuimg/python",
					"/gpuimg/cpython/opt/gpuimg/python \\\n && find /gpuimg/cpython -exec touch -h -d @0 {} +\n",
				} {
					if !strings.Contains(df, want) {
						t.Errorf("%s lacks %q", name, want)
					}
				}
				// The OS stage, the Python stage (and the layered image) add
				// it as its own layer, and python3.X finds it on PATH, so the
				// OS stage never installs a Python.
				copyLine := "COPY --link --from=gpuimg-cpython /gpuimg/cpython/ /\nENV PATH=/opt/gpuimg/python/bin:$PATH\n"
				wantCopies := 2
				if name == "LayeredDockerfile" {
					wantCopies = 3
				}
				if n := strings.Count(df, copyLine); n != wantCopies {
					t.Errorf("%s adds the CPython layer %d times, want %d", name, n, wantCopies)
				}
				at := strings.Index(df, "AS "+stagePython+"\n")
				if at < 0 {
					t.Fatalf("%s has no %s stage", name, stagePython)
				}
				pyStage := df[at:]
				if i := strings.Index(pyStage, copyLine); i < 0 || i > strings.Index(pyStage, "RUN") {
					t.Errorf("%s: the python stage does not add the CPython before its first step", name)
				}
			}
		})
	}
	// The OS's own Python: no standalone stages.
	df, err := Dockerfile(Definition{Stack: resolve(t, matrix.Constraints{Torch: cons("2.7"), Python: matrix.MustConstraint("3.12")}), Base: pinned})
	must(t, err)
	if strings.Contains(df, "gpuimg-cpython") || strings.Contains(df, "ADD ") {
		t.Errorf("an OS Python's Dockerfile fetches a CPython:\n%s", df)
	}
}

// TestStandaloneLayerSameForVariants: two variants with the same
// standalone Python (other CUDA, other base, other frameworks) render
// the stages that make the CPython layer identically but for the base
// the times are fixed on, so the layer's files, and so its digest, are
// the same.
func TestStandaloneLayerSameForVariants(t *testing.T) {
	a := standaloneStack(t, matrix.Constraints{Torch: cons("2.7"), Python: matrix.MustConstraint("3.13")})
	b := standaloneStack(t, matrix.Constraints{Torch: cons("2.6"), Python: matrix.MustConstraint("3.13"), OS: "ubuntu22.04"})
	stages := func(s matrix.Stack, base string) string {
		df, err := Dockerfile(Definition{Stack: s, Base: base})
		must(t, err)
		i, j := strings.Index(df, "FROM scratch AS gpuimg-cpython-"), strings.Index(df, "\n# The OS packages")
		if i < 0 || j < i {
			t.Fatalf("no CPython stages in\n%s", df)
		}
		return strings.ReplaceAll(df[i:j], base, "BASE")
	}
	other := "docker.io/nvidia/cuda:12.6.3-base-ubuntu22.04@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	if sa, sb := stages(a, pinned), stages(b, other); sa != sb {
		t.Errorf("the CPython stages differ between variants:\n%s\n---\n%s", sa, sb)
	}
}

func TestCheckPythonMirror(t *testing.T) {
	for u, want := range map[string]string{
		"":                                 "",
		"https://mirror.example.com/pbs":   "",
		"http://127.0.0.1:8080/":           "",
		"file:///srv/pbs":                  "is not an http or https URL",
		"mirror.example.com/pbs":           "is not an http or https URL",
		"https://u:secret@mirror.example/": "holds credentials",
	} {
		err := CheckPythonMirror(u)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckPythonMirror(%q) = %v, want %q", u, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func TestCheckStandalonePlatform(t *testing.T) {
	s := standaloneStack(t, matrix.Constraints{Torch: cons("2.7"), Python: matrix.MustConstraint("3.13")})
	for p, want := range map[string]string{"": "", "linux/amd64": "", "linux/arm64/v8": "", "linux/ppc64le": "has no archive for linux/ppc64le (only linux/amd64, linux/arm64)"} {
		err := checkStandalonePlatform(s, p)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
}

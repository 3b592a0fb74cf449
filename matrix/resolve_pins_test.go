package matrix

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func builtin(t *testing.T) *DB {
	t.Helper()
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestResolvePublicFacts resolves on the built-in data, whose rows carry
// the sources named here: what pip and NVIDIA's images really do.
func TestResolvePublicFacts(t *testing.T) {
	db := builtin(t)
	tests := []struct {
		name, source string
		c            Constraints
		// stack checks; conflict is a substring of the conflict's reason
		baseImage, cudnn, python, pkg string
		eol                           bool
		noteHas, conflict             []string
		alternative                   bool // some single drop must work
	}{
		{
			name:        "torch 2.3 and tensorflow 2.15 pin different nvidia-* wheels",
			source:      "torch-pins-2.3-cu121; tensorflow-setup-py-2.15.0.post1",
			c:           Constraints{Torch: cons("2.3"), TensorFlow: cons("2.15")},
			conflict:    []string{"torch 2.3.1 cu121 and tensorflow 2.15.0 pin different versions of nvidia-cudnn-cu12 (8.9.2.26 and 8.9.4.25), nvidia-nccl-cu12 (2.20.5 and 2.16.5)", "pip installs one version of each package"},
			alternative: true,
		},
		{
			// torch 2.3.1 cu118 pins nvidia-nccl-cu11==2.20.5 against 2.14's
			// 2.16.5, so 2.3.0, whose pins are not recorded, is chosen and
			// the note says they were not compared.
			name:    "torch 2.3 with tensorflow 2.14: 2.3.1's pins conflict, 2.3.0's are unknown and the note says so",
			source:  "tensorflow-setup-py-2.14, torch-pins-2.3.1-cu118",
			c:       Constraints{Torch: cons("2.3"), TensorFlow: cons("2.14")},
			noteHas: []string{"does not record the exact nvidia-* pins of torch 2.3.0 cu118"},
			pkg:     "tensorflow[and-cuda]==2.14.0", python: "3.10", eol: true,
		},
		{
			// CUDA 13 shape: torch 2.13.0's cuda-toolkit[...]==13.0.3 is
			// expanded into nvidia-cublas==13.1.1.3.* and the other
			// suffix-less components, then judged against the
			// jax-cuda13-plugin's with-cuda ranges (nvidia-cublas>=13.0.0.19).
			name:    "torch 2.13 cu130 and jax 0.9.2 cuda13 share an environment: torch's pins fall inside jax's ranges",
			source:  "torch-pins-2.13.0-pypi; cuda-toolkit-13.0.3-pip-log; jax-ml/jax build/nvidia-requirements.txt at jax-v0.9.2",
			c:       Constraints{Torch: cons("2.13"), JAX: cons("0.9.2")},
			noteHas: []string{"the exact pins of torch 2.13.0 cu130 fall inside the nvidia-* version ranges of jax 0.9.2 cu130"},
		},
		{
			name:        "torch 2.6 pins cuDNN 9.1.0.70, below jax 0.7.1's nvidia-cudnn-cu12>=9.8,<10.0",
			source:      "torch-pins-2.6.0-pypi; jax-ml/jax build/nvidia-requirements.txt at jax-v0.7.1",
			c:           Constraints{Torch: cons("2.6"), JAX: cons("0.7.1")},
			conflict:    []string{"torch 2.6.0 cu124 and jax 0.7.1 pin different versions of nvidia-cudnn-cu12 (9.1.0.70 and >=9.8,<10.0)"},
			alternative: true,
		},
		{
			name:    "tensorflow 2.15.0's and-cuda pins tensorrt no index serves: 2.15.0.post1 is installed",
			source:  "tensorflow-pr-62520 (tensorflow/tensorflow#62520)",
			c:       Constraints{TensorFlow: cons("2.15")},
			pkg:     "tensorflow[and-cuda]==2.15.0.post1",
			noteHas: []string{"installed as 2.15.0.post1"},
		},
		{
			name:     "tensorflow 2.14 and-cuda on Python 3.11: tensorrt 8.5.3.1 has no cp311 wheels",
			source:   "tensorflow-issue-61986 (tensorflow/tensorflow#61986)",
			c:        Constraints{TensorFlow: cons("2.14"), Python: MustConstraint("3.11")},
			conflict: []string{"cannot be installed on Python >=3.11: it pins tensorrt==8.5.3.1", "#61986"},
		},
		{
			name:   "tensorflow 2.14 without a Python constraint gets a Python its extra installs on",
			source: "tensorflow-issue-61986",
			c:      Constraints{TensorFlow: cons("2.14")},
			python: "3.10", eol: true,
		},
		{
			name:      "tensorflow 2.12 loads cuDNN from the image: 11.8.0-cudnn8 carries 8.9.6.50 (same major, newer minor)",
			source:    "images-nvidia-dockerfiles: NV_CUDNN_VERSION 8.9.6.50 in dist/11.8.0/ubuntu2204/runtime/cudnn8",
			c:         Constraints{TensorFlow: cons("2.12")},
			baseImage: "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", cudnn: "8.9.6.50", eol: true,
			noteHas: []string{"warning: NVIDIA has marked nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04 end of life"},
		},
		{
			name:      "tensorflow 2.13 resolves too",
			source:    "images-nvidia-dockerfiles",
			c:         Constraints{TensorFlow: cons("2.13")},
			baseImage: "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", cudnn: "8.9.6.50", eol: true,
		},
		{
			name:      "tensorflow 2.12's tested configuration, CUDA 11.8 with cuDNN 8.6: the ubuntu18.04 tag kept cuDNN 8.6.0.163",
			source:    "images-nvidia-dockerfiles: dist/end-of-life/11.8.0/ubuntu1804/runtime/cudnn8, NV_CUDNN_VERSION 8.6.0.163; tensorflow-tested-configs",
			c:         Constraints{TensorFlow: cons("2.12"), CUDA: MustConstraint("11.8"), CuDNN: MustConstraint("8.6")},
			baseImage: "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu18.04", cudnn: "8.6.0.163", python: "3.8", eol: true,
		},
		{
			name:      "a supported point release is not flagged",
			source:    "images-nvidia-supported-tags",
			c:         Constraints{CUDA: MustConstraint("12.2")},
			baseImage: "nvidia/cuda:12.2.2-runtime-ubuntu22.04",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := db.Resolve(tt.c)
			if len(tt.conflict) > 0 {
				var ce *ConflictError
				if !errors.As(err, &ce) {
					t.Fatalf("want a conflict, got %v (stack %s)", err, st.Summary())
				}
				for _, want := range tt.conflict {
					if !strings.Contains(ce.Reason, want) {
						t.Errorf("reason %q lacks %q (source %s)", ce.Reason, want, tt.source)
					}
				}
				if tt.alternative && len(ce.Alternatives) == 0 {
					t.Errorf("no alternative offered: %v", ce)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (source %s)", err, tt.source)
			}
			check := func(what, got, want string) {
				if want != "" && got != want {
					t.Errorf("%s = %q, want %q (source %s)", what, got, want, tt.source)
				}
			}
			check("base image", st.BaseImage, tt.baseImage)
			check("cuDNN", st.CuDNN, tt.cudnn)
			check("Python", st.Python, tt.python)
			if tt.pkg != "" && !slices.Contains(st.Frameworks[FrameworkTensorFlow].Packages, tt.pkg) {
				t.Errorf("packages %v lack %s", st.Frameworks[FrameworkTensorFlow].Packages, tt.pkg)
			}
			if st.BaseImageEOL != tt.eol {
				t.Errorf("base_image_eol = %v, want %v", st.BaseImageEOL, tt.eol)
			}
			for _, want := range tt.noteHas {
				if !slices.ContainsFunc(st.Notes, func(n string) bool { return strings.Contains(n, want) }) {
					t.Errorf("no note has %q:\n%s", want, strings.Join(st.Notes, "\n"))
				}
			}
		})
	}
}

// worldFile is testdata/world.yaml as a File the test may change.
func worldFile(t *testing.T) *File {
	t.Helper()
	b, err := os.ReadFile("testdata/world.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile("testdata/world.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestConflictsAreRules: constraints that fail together only because the
// matrix lacks a fact (the cuDNN inside an image) are not named as
// conflicting; the reason says what to record.
func TestConflictsAreRules(t *testing.T) {
	f := worldFile(t)
	for i := range f.BaseImages {
		f.BaseImages[i].CuDNN = Version{}
	}
	db, err := loadOnly(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Resolve(Constraints{TensorFlow: cons("2.13"), CUDA: MustConstraint("11.8"), CuDNN: MustConstraint("8.6")})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("want a conflict, got %v", err)
	}
	if len(ce.Conflicts) != 0 {
		t.Errorf("pairs named as conflicting although only a fact is missing: %s", ce.Error())
	}
	if !strings.Contains(ce.Reason, "is not recorded in the matrix") {
		t.Errorf("reason %q", ce.Reason)
	}

	// A real rule still names its pair: TensorFlow 2.15 needs CUDA 12.2.
	db = world(t)
	_, err = db.Resolve(Constraints{CUDA: MustConstraint("12.1"), TensorFlow: cons("2.15"), Python: MustConstraint("3.8"), Torch: cons("2.2")})
	if !errors.As(err, &ce) || !slices.Contains(ce.Conflicts, [2]Field{FieldCUDA, FieldTensorFlow}) {
		t.Errorf("conflicts %v", err)
	}
}

// TestPreferSupportedPointRelease: NVIDIA supports only the newest point
// release of a minor and deletes the tags of end-of-life ones
// (doc/support-policy.md, source images-nvidia-support-policy): a
// supported release of the minor comes first, and a stack on an
// end-of-life tag says so.
func TestPreferSupportedPointRelease(t *testing.T) {
	f := worldFile(t)
	for i := range f.BaseImages {
		if f.BaseImages[i].CUDA.String() == "12.2.2" {
			f.BaseImages[i].EOL = true
		}
	}
	f.BaseImages = append(f.BaseImages, BaseImage{CUDA: MustVersion("12.2.0"), OS: []string{"ubuntu22.04"}, Flavors: []string{"base", "runtime", "devel"}, Row: Row{Source: "test"}})
	db, err := loadOnly(f)
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Resolve(Constraints{CUDA: MustConstraint("12.2")})
	if err != nil || st.CUDA != "12.2.0" || st.BaseImageEOL {
		t.Errorf("got %s eol=%v, %v; want the supported 12.2.0", st.CUDA, st.BaseImageEOL, err)
	}
	st, err = db.Resolve(Constraints{CUDA: MustConstraint("12.2.2")})
	if err != nil || !st.BaseImageEOL || !slices.ContainsFunc(st.Notes, func(n string) bool { return strings.Contains(n, "end of life") }) {
		t.Errorf("pinned end-of-life tag: eol=%v notes %v, %v", st.BaseImageEOL, st.Notes, err)
	}
}

// TestPinRowsChecked: pins, pip_version and unserved are checked when a
// matrix file is loaded.
func TestPinRowsChecked(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"not a pin", "tensorflow:\n  - {version: 2.15.0, python: '>=3.9', cuda: '12.2', cudnn: '8.9', source: s, pins: ['nvidia-cudnn-cu12>=8.9']}\n", "must be name==version"},
		{"pinned twice", "tensorflow:\n  - {version: 2.15.0, python: '>=3.9', cuda: '12.2', cudnn: '8.9', source: s, pins: [a==1, A==2]}\n", "pins a twice"},
		{"pip_version of another release", "tensorflow:\n  - {version: 2.15.0, python: '>=3.9', cuda: '12.2', cudnn: '8.9', source: s, pip_version: 2.16.0}\n", "must be a post release of 2.15.0"},
		{"unserved not a pin", "tensorflow:\n  - {version: 2.14.0, python: '>=3.9', cuda: '11.8', cudnn: '8.7', source: s, pins: [tensorrt==8.5.3.1], unserved: [{pin: tensorrt==8.6.1, why: x}]}\n", "unserved tensorrt==8.6.1 is not one of its pins"},
		{"unknown key", "tensorflow:\n  - {version: 2.14.0, python: '>=3.9', cuda: '11.8', cudnn: '8.7', source: s, unserved: [{pin: tensorrt==8.6.1, wy: x}]}\n", `unknown key "wy"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "sources:\n  - {id: s, title: t, url: https://example.invalid}\n" + tt.yaml
			f, err := ParseFile("rows.yaml", []byte(src))
			if err == nil {
				_, err = loadOnly(f)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestUnservedForEveryPython: a release whose CUDA extra pins a wheel no
// index serves at all (as tensorflow[and-cuda]==2.15.0 pins
// tensorrt-libs==8.6.1, tensorflow/tensorflow#62520) is refused with the
// pin and the reason, and an older release is chosen instead.
func TestUnservedForEveryPython(t *testing.T) {
	f := worldFile(t)
	f.TensorFlow = append(f.TensorFlow, TensorFlow{Version: MustVersion("2.15.1"), Python: MustConstraint(">=3.9,<3.12"), CUDA: MustVersion("12.2"), CuDNN: MustVersion("8.9"),
		Pins:     pins(t, "tensorrt-libs==8.6.1"),
		Unserved: []Unserved{{Pin: pins(t, "tensorrt-libs==8.6.1")[0], Why: "no index serves tensorrt-libs 8.6.1"}},
		Row:      Row{Source: "test"}})
	db, err := loadOnly(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Resolve(Constraints{TensorFlow: cons("2.15.1")})
	var ce *ConflictError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "tensorflow 2.15.1 cannot be installed: its CUDA extra pins tensorrt-libs==8.6.1, which no package index serves (no index serves tensorrt-libs 8.6.1)") {
		t.Errorf("got %v", err)
	}
	st, err := db.Resolve(Constraints{TensorFlow: cons("2.15")})
	if err != nil || st.Frameworks[FrameworkTensorFlow].Version != "2.15.0" {
		t.Errorf("--tensorflow 2.15: %v %v", st.Frameworks, err)
	}
}

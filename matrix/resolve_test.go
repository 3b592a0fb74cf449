package matrix

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func world(t *testing.T) *DB {
	t.Helper()
	b, err := os.ReadFile("testdata/world.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile("testdata/world.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	db, err := loadOnly(f)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func cons(s string) *Constraint { c := MustConstraint(s); return &c }

func TestResolveRules(t *testing.T) {
	db := world(t)
	tests := []struct {
		name string
		c    Constraints
		// want holds expected Stack fields; empty strings are not checked.
		want      Stack
		fwCUDA    string   // torch's wheel CUDA, if checked
		noteHas   []string // substrings some note must contain
		conflict  string   // substring of the conflict reason
		dropped   []string // constraints ("CUDA 12.1") whose drop must give an alternative
		inputErr  string   // substring of a non-conflict error
		archs     []string
		wantNoPTX bool
	}{
		{
			name:    "older wheel CUDA runs on newer image CUDA of the same major",
			c:       Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3")},
			want:    Stack{CUDA: "12.2.2", MinDriver: "535.104.05", MinDriverCompat: "525.60.13", RequireCUDA: "cuda>=12.2", BaseImage: "nvidia/cuda:12.2.2-base-ubuntu22.04", Python: "3.10", OS: "ubuntu22.04", CuDNN: "8.9.2.26", NCCL: "2.20.5"},
			fwCUDA:  "12.1",
			noteHas: []string{"built for CUDA 12.1; they run on the CUDA 12.2.2 image through minor-version compatibility", "experimental"},
		},
		{
			name:   "stable variant first; image CUDA as close to the wheels as possible",
			c:      Constraints{Torch: cons("2.3")},
			want:   Stack{CUDA: "11.8.0", MinDriver: "520.61.05", MinDriverCompat: "450.80.02", RequireCUDA: "cuda>=11.8"},
			fwCUDA: "11.8",
		},
		{
			name:   "without a stable variant for the CUDA, the closest image for the wheel",
			c:      Constraints{Torch: cons("2.3"), CUDA: MustConstraint("12")},
			want:   Stack{CUDA: "12.4.1"},
			fwCUDA: "12.1",
		},
		{
			name:     "wheel CUDA newer than the image is refused",
			c:        Constraints{CUDA: MustConstraint("12.1"), TensorFlow: cons("2.15")},
			conflict: "tensorflow 2.15.0 wheels are built for CUDA 12.2; an image with CUDA 12.1 cannot run them",
			dropped:  []string{"CUDA 12.1"},
		},
		{
			name:     "wheel CUDA of another major is refused",
			c:        Constraints{CUDA: MustConstraint("11.8"), Torch: cons("2.2")},
			conflict: "torch 2.2.0 wheels are built for CUDA 12.1; an image with CUDA 11.8 cannot run them",
			dropped:  []string{"CUDA 11.8"},
		},
		{
			name:     "driver below the strict floor is a conflict and names --compat",
			c:        Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3"), Driver: MustVersion("530.30.02")},
			conflict: "--compat would allow it",
			dropped:  []string{"driver 530.30.02"},
		},
		{
			name:    "driver under --compat meets the family floor and relaxes NVIDIA_REQUIRE_CUDA",
			c:       Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3"), Driver: MustVersion("530.30.02"), Compat: true},
			want:    Stack{CUDA: "12.2.2", RequireCUDA: "cuda>=12.0", MinDriver: "535.104.05"},
			noteHas: []string{"minor-version compatibility, so PTX JIT is unavailable"},
		},
		{
			name:     "driver below the compatibility floor is a conflict even with --compat",
			c:        Constraints{CUDA: MustConstraint("12"), Torch: cons("2.3"), Driver: MustVersion("470.57.02"), Compat: true},
			conflict: "driver 470.57.02 is below the stack's floor",
		},
		{
			name: "a driver picks the newest CUDA whose strict floor it meets",
			c:    Constraints{Torch: cons("2.3"), CUDA: MustConstraint("12"), Driver: MustVersion("536.0")},
			want: Stack{CUDA: "12.2.2", MinDriver: "535.104.05"},
		},
		{
			name: "the floor is the highest over the image and every framework",
			c:    Constraints{CUDA: MustConstraint("12.1"), JAX: cons("0.4.31")},
			want: Stack{CUDA: "12.1.1", MinDriver: "540.0", MinDriverCompat: "540.0"},
		},
		{
			name: "a framework floor below the image floor does not lower it",
			c:    Constraints{CUDA: MustConstraint("12.1"), JAX: cons("0.4.30")},
			want: Stack{CUDA: "12.1.1", MinDriver: "530.30.02", MinDriverCompat: "525.60.13"},
		},
		{
			name:    "SASS runs forward within a major: sm_80 code on an sm_86 GPU",
			c:       Constraints{Torch: cons("2.2"), GPU: "a10"},
			want:    Stack{GPU: "A10"},
			archs:   []string{"sm_80"},
			noteHas: []string{"bundles cuDNN 8.9.2.26"},
		},
		{
			name:     "SASS does not cross majors and without PTX there is no kernel",
			c:        Constraints{Torch: cons("2.2"), GPU: "h100"},
			conflict: "torch 2.2.0 cu121 has no kernels for H100-SXM (sm_90): it was compiled for sm_80",
			dropped:  []string{"GPU h100", "torch 2.2"},
		},
		{
			name:     "a GPU newer than the toolkit is explained",
			c:        Constraints{Torch: cons("2.3"), GPU: "b200"},
			conflict: "B200 (sm_100, Blackwell) needs CUDA 12.8 or newer",
		},
		{
			name:     "PTX is JIT-compiled forward, with a note",
			c:        Constraints{Torch: cons("2.3"), CUDA: MustConstraint("12"), GPU: "sm_100"},
			conflict: "needs CUDA 12.8 or newer",
		},
		{
			name: "python: the OS default when the frameworks allow it",
			c:    Constraints{Torch: cons("2.3"), CUDA: MustConstraint("12.2")},
			want: Stack{Python: "3.10", OS: "ubuntu22.04"},
		},
		{
			name: "python: another OS when the preferred one lacks the version",
			c:    Constraints{Torch: cons("2.3"), CUDA: MustConstraint("12.2"), Python: MustConstraint("3.12")},
			want: Stack{Python: "3.12", OS: "rockylinux9"},
		},
		{
			name:     "python: no OS and framework agree",
			c:        Constraints{Torch: cons("2.2"), Python: MustConstraint("3.12")},
			conflict: "no Python fits",
		},
		{
			name: "old TensorFlow loads CUDA and cuDNN from the image: cudnn flavor",
			c:    Constraints{TensorFlow: cons("2.13")},
			want: Stack{CUDA: "11.8.0", SystemCuDNN: true, BaseImage: "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04", CuDNN: "8.9.6.50"},
		},
		{
			name:     "pip cannot hold two cuDNN majors",
			c:        Constraints{Torch: cons("2.3"), JAX: cons("0.4.30"), CUDA: MustConstraint("12")},
			conflict: "needs cuDNN >=9.1; pip cannot install both",
		},
		{
			name: "--cudnn selects the framework variant",
			c:    Constraints{Torch: cons("2.3"), CuDNN: MustConstraint("8.7")},
			want: Stack{CUDA: "11.8.0", CuDNN: "8.7.0.84"},
		},
		{
			name: "--cudnn with no framework asks for a cudnn base image",
			c:    Constraints{CuDNN: MustConstraint("8")},
			want: Stack{CUDA: "11.8.0", SystemCuDNN: true, CuDNN: "8.9.6.50"},
		},
		{
			name: "no framework: newest CUDA, toolkit architectures",
			c:    Constraints{},
			want: Stack{CUDA: "12.4.1", OS: "ubuntu22.04"},
		},
		{
			name:     "a GPU support removed from CUDA",
			c:        Constraints{GPU: "nonexistent-gpu"},
			inputErr: "unknown GPU",
		},
		{
			name:     "unknown framework version",
			c:        Constraints{Torch: cons("9.9")},
			inputErr: `no torch release matches "9.9"; known: 2.3.1, 2.2.0`,
		},
		{
			name:     "unknown flavor",
			c:        Constraints{Flavor: "slim"},
			inputErr: "unknown flavor",
		},
		{
			name: "OS family prefix",
			c:    Constraints{OS: "rockylinux"},
			want: Stack{OS: "rockylinux9", Python: "3.9"},
		},
		{
			name:     "unknown OS",
			c:        Constraints{OS: "debian12"},
			inputErr: "unknown OS",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := db.Resolve(tt.c)
			if tt.inputErr != "" {
				if err == nil || errors.Is(err, ErrNoStack) || !strings.Contains(err.Error(), tt.inputErr) {
					t.Fatalf("err = %v, want an input error mentioning %q", err, tt.inputErr)
				}
				return
			}
			if tt.conflict != "" {
				var ce *ConflictError
				if !errors.As(err, &ce) || !errors.Is(err, ErrNoStack) {
					t.Fatalf("err = %v (stack %+v), want a ConflictError", err, s)
				}
				if !strings.Contains(ce.Reason, tt.conflict) {
					t.Errorf("reason = %q, want it to contain %q", ce.Reason, tt.conflict)
				}
				got := map[string]bool{}
				for _, a := range ce.Alternatives {
					got[ce.Asked.describe(a.Dropped)] = true
				}
				for _, d := range tt.dropped {
					if !got[d] {
						t.Errorf("no alternative without %s; got %v", d, ce.Alternatives)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			w := reflect.ValueOf(tt.want)
			g := reflect.ValueOf(s)
			for i := range w.NumField() {
				f := w.Field(i)
				if f.Kind() == reflect.String && f.String() != "" && f.String() != g.Field(i).String() {
					t.Errorf("%s = %q, want %q", w.Type().Field(i).Name, g.Field(i).String(), f.String())
				}
				if f.Kind() == reflect.Bool && f.Bool() && !g.Field(i).Bool() {
					t.Errorf("%s = false, want true", w.Type().Field(i).Name)
				}
			}
			if tt.fwCUDA != "" && s.Frameworks["torch"].CUDA != tt.fwCUDA {
				t.Errorf("torch wheel CUDA = %s, want %s", s.Frameworks["torch"].CUDA, tt.fwCUDA)
			}
			if tt.archs != nil && !reflect.DeepEqual(s.GPUArchs, tt.archs) {
				t.Errorf("gpu_archs = %v, want %v", s.GPUArchs, tt.archs)
			}
			all := strings.Join(s.Notes, "\n")
			for _, n := range tt.noteHas {
				if !strings.Contains(all, n) {
					t.Errorf("no note contains %q; notes:\n%s", n, all)
				}
			}
		})
	}
}

func TestResolveDeterministic(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	c := Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3")}
	var first []byte
	for i := range 5 {
		s, err := db.Resolve(c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(s)
		if i == 0 {
			first = b
		} else if string(b) != string(first) {
			t.Fatalf("run %d differs:\n%s\n%s", i, first, b)
		}
	}
}

// TestLoadsShareNoWrites loads the built-in matrix (parsed once per
// process) in several goroutines at once, one with a matrix file that
// replaces a row, and resolves on each DB: under -race a write to a slice
// two DBs share fails the test; the built-in DBs give the same answer.
func TestLoadsShareNoWrites(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "extra.yaml")
	if err := os.WriteFile(extra, []byte("os:\n  - name: ubuntu22.04\n    family: ubuntu\n    pythons: [\"3.10\"]\n    source: os-ubuntu-packages\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3")}
	got := make([]string, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			var paths []string
			if i == 3 {
				paths = []string{extra}
			}
			db, err := Load(paths...)
			if err != nil {
				got[i] = err.Error()
				return
			}
			s, err := db.Resolve(c)
			if err != nil {
				got[i] = err.Error()
				return
			}
			b, _ := json.Marshal(s)
			got[i] = string(b)
		})
	}
	wg.Wait()
	if !strings.HasPrefix(got[3], "{") {
		t.Errorf("load with a matrix file: %s", got[3])
	}
	for i := range got[:3] {
		if got[i] != got[0] {
			t.Errorf("load %d resolved\n%s\nload 0\n%s", i, got[i], got[0])
		}
	}
}

// TestBuiltinCUDA122Torch23 is the headline example, on the real
// facts: a CUDA 12.2.2 image with torch 2.3.1 cu121 wheels and a note.
func TestBuiltinCUDA122Torch23(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Resolve(Constraints{CUDA: MustConstraint("12.2"), Torch: cons("2.3")})
	if err != nil {
		t.Fatal(err)
	}
	tor := s.Frameworks["torch"]
	if s.CUDA != "12.2.2" || tor.Version != "2.3.1" || tor.CUDA != "12.1" || tor.IndexURL != "https://download.pytorch.org/whl/cu121" {
		t.Fatalf("got CUDA %s torch %s cu%s from %s", s.CUDA, tor.Version, tor.CUDA, tor.IndexURL)
	}
	if s.MinDriver != "535.104.05" || s.MinDriverCompat != "525.60.13" || s.RequireCUDA != "cuda>=12.2" {
		t.Errorf("floors %s / %s, require %s", s.MinDriver, s.MinDriverCompat, s.RequireCUDA)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "minor-version compatibility") {
		t.Errorf("no note on minor-version compatibility: %v", s.Notes)
	}
	want := []string{"torch==2.3.1", "torchvision==0.18.1", "torchaudio==2.3.1"}
	if !reflect.DeepEqual(tor.Packages, want) {
		t.Errorf("packages = %v, want %v", tor.Packages, want)
	}
	if len(s.Sources) == 0 {
		t.Error("stack names no sources")
	}
}

// TestConstraintFields: constraints are named by Field; Given, Value,
// Without and the library's own message use them.
func TestConstraintFields(t *testing.T) {
	c := Constraints{CUDA: MustConstraint("12.2"), CuDNN: MustConstraint("9"), Python: MustConstraint("3.11"),
		Torch: cons("2.3"), TensorFlow: &Constraint{}, JAX: cons("0.4"), OS: "ubuntu", Flavor: "devel", GPU: "h100", Driver: MustVersion("535.104.05")}
	want := map[Field]string{FieldCUDA: "12.2", FieldCuDNN: "9", FieldTorch: "2.3", FieldTensorFlow: "*", FieldJAX: "0.4",
		FieldPython: "3.11", FieldOS: "ubuntu", FieldFlavor: "devel", FieldGPU: "h100", FieldDriver: "535.104.05"}
	given := c.Given()
	if !reflect.DeepEqual(given, Fields()) || len(given) != len(want) {
		t.Fatalf("Given = %v, want every field in order %v", given, Fields())
	}
	for _, f := range given {
		if got := c.Value(f); got != want[f] {
			t.Errorf("Value(%s) = %q, want %q", f, got, want[f])
		}
		w := c.Without(f)
		switch f {
		case FieldTorch, FieldTensorFlow, FieldJAX: // still selected, any version
			if w.Value(f) != "*" {
				t.Errorf("Without(%s) leaves %q, want *", f, w.Value(f))
			}
		default:
			if slices.Contains(w.Given(), f) {
				t.Errorf("Without(%s) still gives it: %q", f, w.Value(f))
			}
		}
		if back := w.with(c, f); !reflect.DeepEqual(back, c) {
			t.Errorf("Without(%s).with(c) = %+v, want c back", f, back)
		}
	}
	if g := (Constraints{Apt: []string{"libcudnn8"}}).Given(); len(g) != 0 {
		t.Errorf("no constraint, yet given: %v", g)
	}
	if g := (Constraints{Flavor: "runtime"}).Given(); !slices.Equal(g, []Field{FieldFlavor}) {
		t.Errorf("a flavor asked for (runtime too: the default is the resolver's choice) is given: %v", g)
	}
	if FieldCuDNN.String() != "cuDNN" || Field(99).String() != "Field(99)" {
		t.Errorf("names %s %s", FieldCuDNN, Field(99))
	}
	if b, err := json.Marshal(Alternative{Dropped: FieldCuDNN}); err != nil || !strings.Contains(string(b), `"dropped":"cuDNN"`) {
		t.Errorf("Alternative as JSON: %s %v", b, err)
	}
	ce := &ConflictError{Reason: "r", Asked: c, Conflicts: [][2]Field{{FieldCUDA, FieldTorch}}}
	if got := ce.Error(); got != "r; CUDA 12.2 and torch 2.3 conflict on their own" {
		t.Errorf("Error() = %q", got)
	}
}

// TestConflictPairs: with more than two constraints and no single drop
// that works, the pairs that conflict on their own are named by Field.
func TestConflictPairs(t *testing.T) {
	db := world(t)
	_, err := db.Resolve(Constraints{CUDA: MustConstraint("12.1"), TensorFlow: cons("2.15"), Python: MustConstraint("3.8"), Torch: cons("2.2")})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	if len(ce.Alternatives) != 0 {
		t.Fatalf("alternatives %+v", ce.Alternatives)
	}
	if !slices.Contains(ce.Conflicts, [2]Field{FieldCUDA, FieldTensorFlow}) {
		t.Errorf("conflicts %v lack CUDA with tensorflow", ce.Conflicts)
	}
	if !strings.Contains(ce.Error(), "CUDA 12.1 and tensorflow 2.15 conflict on their own") {
		t.Errorf("Error() = %q", ce.Error())
	}
}

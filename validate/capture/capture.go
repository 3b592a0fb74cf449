package capture

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// Spec is a capture as gpuimg.yaml: the stack fields, the extras and a
// capture: section. gpuimg build -f takes it as it is (builder.Config
// keeps capture: and builds nothing from it).
type Spec struct {
	CUDA       string            `json:"cuda,omitempty" yaml:"cuda,omitempty"`
	Torch      string            `json:"torch,omitempty" yaml:"torch,omitempty"`
	TensorFlow string            `json:"tensorflow,omitempty" yaml:"tensorflow,omitempty"`
	JAX        string            `json:"jax,omitempty" yaml:"jax,omitempty"`
	Python     string            `json:"python,omitempty" yaml:"python,omitempty"`
	OS         string            `json:"os,omitempty" yaml:"os,omitempty"`
	Pip        []string          `json:"pip,omitempty" yaml:"pip,omitempty"`
	Apt        []string          `json:"apt,omitempty" yaml:"apt,omitempty"`
	Dnf        []string          `json:"dnf,omitempty" yaml:"dnf,omitempty"`
	Env        map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	Copy       []string          `json:"copy,omitempty" yaml:"copy,omitempty"`
	// TorchCompile is false when torch is captured from an environment
	// with no C compiler: the build then leaves out torch.compile's gcc and
	// Python headers, which the source did not have either.
	TorchCompile *bool  `json:"torch_compile,omitempty" yaml:"torch_compile,omitempty"`
	Capture      Record `json:"capture" yaml:"capture"`
}

// Record is the capture: section: where and when, on what, and what the
// spec does not reproduce.
type Record struct {
	Source string `json:"source" yaml:"source"`
	Date   string `json:"date" yaml:"date"`
	// Driver and GPUs are NVML's, when the capture ran on a GPU host.
	Driver string   `json:"driver,omitempty" yaml:"driver,omitempty"`
	GPUs   []string `json:"gpus,omitempty" yaml:"gpus,omitempty"`
	// Base is the base image the matrix chose for the stack.
	Base string `json:"base,omitempty" yaml:"base,omitempty"`
	// Stack says how the stack fields were chosen: exact, or the nearest
	// stack that reproduces what is installed and why.
	Stack []string `json:"stack,omitempty" yaml:"stack,omitempty"`
	// Unreproducible are the items the spec cannot restore, each with why.
	Unreproducible []Item `json:"unreproducible,omitempty" yaml:"unreproducible,omitempty"`
}

// Item is one thing a capture cannot reproduce.
type Item struct {
	// Kind is pip-url, pip-editable, pip-index, conda, cuda-runfile,
	// unowned-file or secret-env.
	Kind    string `json:"kind" yaml:"kind"`
	What    string `json:"what" yaml:"what"`
	Version string `json:"version,omitempty" yaml:"version,omitempty"`
	Why     string `json:"why" yaml:"why"`
}

// Result is a capture: the spec, and the facts it was made from.
type Result struct {
	Spec  Spec   `json:"spec"`
	Facts *Facts `json:"facts"`
}

// Options steer Capture.
type Options struct {
	// Source names what was captured, as the user wrote it.
	Source string
	DB     *matrix.DB
	// Now stamps the capture; default time.Now.
	Now func() time.Time
	// Driver and GPUs are the host's (NVML), when known.
	Driver string
	GPUs   []string
	// Copy are the spec's copy: entries (SRC:DST, SRC in the build
	// context), which Stage made after CheckCopy passed; Copied are the
	// environment's paths they carry, so no longer listed as
	// unreproducible.
	Copy   []string
	Copied []string
	Limits validate.Limits
}

// Capture reads img and writes the gpuimg.yaml that rebuilds it.
func Capture(ctx context.Context, img v1.Image, opt Options) (*Result, error) {
	if opt.DB == nil {
		return nil, fmt.Errorf("capture: no matrix")
	}
	f, _, err := Collect(ctx, img, CollectOptions{Name: opt.Source, DB: opt.DB, Limits: opt.Limits})
	if err != nil {
		return nil, err
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	s := Spec{Env: f.Env, Copy: opt.Copy, Capture: Record{Source: opt.Source, Date: now().UTC().Format(time.RFC3339), Driver: opt.Driver, GPUs: opt.GPUs}}
	stack, notes := resolve(opt.DB, f, &s)
	s.Capture.Stack = notes
	if stack != nil {
		s.Capture.Base = stack.BaseImage
	}
	s.Pip, s.Capture.Unreproducible = pipPins(f, stack)
	s.Apt, s.Dnf = manualPackages(f)
	if s.Torch != "" && !hasCompiler(f) {
		off := false
		s.TorchCompile = &off
		s.Capture.Stack = append(s.Capture.Stack, "no C compiler (gcc) installed: torch_compile: false leaves out torch.compile's gcc and Python headers, as the source had none; remove the line to have them")
	}
	if len(s.Dnf) > 0 {
		s.Capture.Stack = append(s.Capture.Stack, dnfNote(stack))
	}
	s.Capture.Unreproducible = append(s.Capture.Unreproducible, others(f, opt.Copied)...)
	return &Result{Spec: s, Facts: f}, nil
}

// resolve sets the stack fields of s from what is installed and resolves
// them; when no stack fits exactly, it drops the OS, then Python, then
// the CUDA and says so.
func resolve(db *matrix.DB, f *Facts, s *Spec) (*matrix.Stack, []string) {
	var notes []string
	torch, tf, jax := f.Frameworks["torch"], f.Frameworks["tensorflow"], f.Frameworks["jax"]
	s.Torch, s.TensorFlow, s.JAX = torch.Version, tf.Version, jax.Version
	s.Python = f.Python
	s.CUDA = cudaOf(f)
	if s.CUDA != "" && f.CUDA != "" && !strings.HasPrefix(f.CUDA+".", s.CUDA+".") {
		notes = append(notes, fmt.Sprintf("the frameworks were built for CUDA %s and the toolkit found is CUDA %s: the stack follows the frameworks' CUDA", s.CUDA, f.CUDA))
	}
	if len(f.Frameworks) == 0 && f.CUDA == "" {
		notes = append(notes, "no framework and no CUDA toolkit found: the stack is the matrix's default for what is pinned (give cuda: to choose one)")
	}
	if known(db, f.OS) {
		s.OS = f.OS
	} else if f.OS != "" {
		notes = append(notes, fmt.Sprintf("NVIDIA publishes no CUDA image for %s: the matrix picks the OS", f.OS))
	}
	for _, drop := range []func() string{
		func() string { return "" },
		func() string { o := s.OS; s.OS = ""; return maybe(o, "the OS "+o) },
		func() string { p := s.Python; s.Python = ""; return maybe(p, "Python "+p) },
		func() string { c := s.CUDA; s.CUDA = ""; return maybe(c, "CUDA "+c) },
	} {
		if what := drop(); what != "" {
			notes = append(notes, "no stack fits with "+what+": left to the matrix")
		}
		st, err := db.Resolve(constraints(s))
		if err != nil {
			continue
		}
		notes = append(notes, exactness(st, f)...)
		return &st, notes
	}
	notes = append(notes, "no stack the matrix knows fits what is installed: the stack fields are as found, and gpuimg build will say why they do not resolve")
	s.CUDA, s.Python, s.OS = cudaOf(f), f.Python, ""
	return nil, notes
}

func maybe(v, what string) string {
	if v == "" {
		return ""
	}
	return what
}

// cudaOf is the CUDA major.minor the frameworks were built for, else the
// toolkit's.
func cudaOf(f *Facts) string {
	for _, name := range []string{"torch", "tensorflow", "jax"} {
		if c := f.Frameworks[name].CUDA; c != "" {
			return c
		}
	}
	if f.CUDA != "" {
		parts := strings.SplitN(f.CUDA, ".", 3)
		if len(parts) >= 2 {
			return parts[0] + "." + parts[1]
		}
	}
	return ""
}

func known(db *matrix.DB, os string) bool {
	if os == "" {
		return false
	}
	_, err := db.Resolve(matrix.Constraints{OS: os})
	return err == nil
}

func constraints(s *Spec) matrix.Constraints {
	var c matrix.Constraints
	exact := func(v string) *matrix.Constraint {
		if v == "" {
			return nil
		}
		k, err := matrix.ParseConstraint(v)
		if err != nil {
			return nil
		}
		return &k
	}
	if k := exact(s.CUDA); k != nil {
		c.CUDA = *k
	}
	if k := exact(s.Python); k != nil {
		c.Python = *k
	}
	c.Torch, c.TensorFlow, c.JAX, c.OS = exact(s.Torch), exact(s.TensorFlow), exact(s.JAX), s.OS
	return c
}

// exactness says whether each framework of the stack is what is installed.
func exactness(st matrix.Stack, f *Facts) []string {
	var notes []string
	for _, name := range slices.Sorted(maps.Keys(f.Frameworks)) {
		got, want := st.Frameworks[name], f.Frameworks[name]
		switch {
		case got.Version != want.Version:
			notes = append(notes, fmt.Sprintf("%s %s is installed; the nearest stack has %s %s", name, want.Version, name, got.Version))
		case want.CUDA != "" && got.CUDA != want.CUDA:
			notes = append(notes, fmt.Sprintf("%s %s for CUDA %s is installed; the matrix has no such variant, the nearest stack has CUDA %s's", name, want.Version, want.CUDA, got.CUDA))
		default:
			notes = append(notes, fmt.Sprintf("%s %s for CUDA %s: exact (%s)", name, got.Version, got.CUDA, st.BaseImage))
		}
	}
	return notes
}

// rePythonPkg are the OS packages of Python itself, which the stack's
// build installs (or its base has).
var rePythonPkg = regexp.MustCompile(`^(lib)?python3(\.[0-9]+)?(-minimal|-venv|-dev|-distutils|-stdlib|-pip|-setuptools|-wheel)?$`)

// manualPackages are the OS packages installed by hand, less Python's
// own: dpkg's (apt:) and the rpm database's (dnf:).
func manualPackages(f *Facts) (apt, dnf []string) {
	for _, p := range f.OSPackages {
		if !p.Manual || rePythonPkg.MatchString(p.Name) {
			continue
		}
		if p.Manager == "rpm" {
			dnf = append(dnf, p.Name)
		} else {
			apt = append(apt, p.Name)
		}
	}
	return apt, dnf
}

// dnfNote says what dnf: needs of the stack.
func dnfNote(stack *matrix.Stack) string {
	const what = "dnf: are the rpm database's packages installed by hand (required by no other package); they need an RPM base (os: rockylinux9, rockylinux8, ubi9 or ubi8)"
	if stack != nil && (strings.HasPrefix(stack.OS, "rockylinux") || strings.HasPrefix(stack.OS, "ubi")) {
		return what + ": " + stack.OS + " installs them with dnf"
	}
	os := "the matrix's OS"
	if stack != nil {
		os = stack.OS
	}
	return what + ", and " + os + " is not one: gpuimg build refuses them until os: names one, or apt: lists their Debian/Ubuntu names"
}

// reGCC are the OS packages of a C compiler torch.compile can use.
var reGCC = regexp.MustCompile(`^(gcc|gcc-[0-9]+|clang|clang-[0-9]+)$`)

// hasCompiler says whether the OS packages hold a C compiler.
func hasCompiler(f *Facts) bool {
	return slices.ContainsFunc(f.OSPackages, func(p OSPackage) bool { return reGCC.MatchString(p.Name) })
}

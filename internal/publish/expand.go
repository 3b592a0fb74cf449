package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/matrix"
)

// BuildVersion is gpuimg's build-defining version: it is folded into every
// variant's Inputs. Bump it when what gpuimg builds from the same generated
// Dockerfile changes meaning (the build context it sends, verify.py, the
// build settings), so that publish rebuilds every variant once.
const BuildVersion = "gpuimg-build/3" // 2: the layered Python environment (builder.LayeredDockerfile); 3: zstd layers by default (builder.DefaultCompression)

// InputsLabel is the image label (and manifest annotation) that holds a
// variant's Inputs digest.
const InputsLabel = builder.InputsLabel

// ExpandOptions are what the caller knows beyond the publish file. Expand
// needs no daemon and no registry; publish pins the base images first and
// passes them here, so its Inputs also fold in the base image digests.
type ExpandOptions struct {
	// Bases maps a stack's BaseImage (matrix.Stack.BaseImage) to the base
	// it was pinned to (images.PinBase). A stack whose base is in Bases is
	// generated FROM the pinned reference and its Inputs include the
	// base's digest; otherwise the Dockerfile names the base by its tag.
	// The default is none.
	Bases map[string]images.Base
	// Files maps a build.copy source or the build.requirements file, as
	// written in the publish file, to the digest of its content; they are
	// folded into Inputs. The default is none.
	Files map[string]string
	// SourceDateEpoch is the build's effective SOURCE_DATE_EPOCH
	// (builder.Plan.SourceDateEpoch): it sets the image's created label
	// and file times, so it is folded into Inputs. The default, 0, leaves
	// it out (expand, which pins nothing, does not know it).
	SourceDateEpoch int64
	// Compression is the build's layer compression (builder.Request's);
	// "" and builder.DefaultCompression (zstd) are the same and leave it
	// out of Inputs.
	Compression matrix.Compression
	// LargeWheel is the build's builder.Request.LargeWheel; 0 and
	// builder.DefaultLargeWheel leave it out of Inputs.
	LargeWheel int64
	// NoTorchCompile is the build's builder.Request.NoTorchCompile: the
	// Dockerfile, and so Inputs, leaves torch.compile's compiler and
	// headers out. The default, false, keeps them.
	NoTorchCompile bool
}

// Expand turns a publish file into a plan: the product of f.Matrix's axes
// (the first axis varying slowest), minus the combinations an exclude
// entry matches, plus f.Include (never excluded), each resolved with db. A combination the
// resolver refuses is Skipped with the resolver's reason (not an error),
// as is an excluded one. A variant whose stack cannot pass the file's
// validate: (its driver and GPUs) or a targets: fleet (its driver and
// GPUs, narrowed by gpu:), judged as matrix check judges a stack
// (matrix.DB.CheckStack), is marked: its Validation says which check
// fails (it would be built and never tagged). Combinations that resolve to the same stack give
// one variant; the later ones are Skipped as "same stack as NAME". The
// order is deterministic.
//
// Errors: an unknown GPU in validate: or a target's gpu:, an unknown
// target, a resolver input error (an unknown GPU), a tag template field
// the stack lacks, a rendered tag that is not a valid OCI tag, or two
// different stacks rendering to the same tag.
func Expand(ctx context.Context, db *matrix.DB, f *File, opts ExpandOptions) (*Plan, error) {
	plan := &Plan{Repository: f.Repository, Variants: []Variant{}, Skipped: []Skipped{}}
	hosts, err := planHosts(db, f)
	if err != nil {
		return nil, err
	}
	n, err := f.productSize()
	if err != nil {
		return nil, err
	}
	byStack := map[string]string{} // stack key -> variant name
	byName := map[string]bool{}
	i := 0
	for combo := range f.combinations() {
		i++
		if ctx.Err() != nil {
			return nil, fmt.Errorf("expand %s: %w", f.name(), context.Cause(ctx))
		}
		axes := combo.axes()
		// Exclusions apply to the product only: an include is explicit.
		if ex := f.excluded(combo); ex != nil && i <= n {
			plan.Skipped = append(plan.Skipped, Skipped{Axes: axes, Reason: fmt.Sprintf("excluded (%s:%d)", f.name(), ex.Line)})
			continue
		}
		var spec matrix.Spec
		for _, v := range combo.Values {
			spec[v.Field] = v.Value
		}
		c, err := spec.Constraints()
		if err != nil {
			return nil, fmt.Errorf("expand %s: %s: %w", f.name(), combo, err) // checked when loading
		}
		c = builder.Constrain(c, f.Build, f.Platforms)
		stack, err := db.Resolve(c)
		if ce, ok := errors.AsType[*matrix.ConflictError](err); ok {
			plan.Skipped = append(plan.Skipped, Skipped{Axes: axes, Reason: ce.Reason})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("expand %s: resolve %s: %w", f.name(), combo, err)
		}
		why, err := cannotPass(db, stack, hosts)
		if err != nil {
			return nil, fmt.Errorf("expand %s: %s: %w", f.name(), combo, err)
		}
		key, err := stackKey(stack)
		if err != nil {
			return nil, err
		}
		if first, ok := byStack[key]; ok {
			plan.Skipped = append(plan.Skipped, Skipped{Axes: axes, Reason: "same stack as " + first})
			continue
		}
		tag, err := f.Tag.Render(Fields(stack, axes))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", f.name(), f.Tag.Line, combo, err)
		}
		if err := CheckTag(tag); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: tag template %s renders %w", f.name(), f.Tag.Line, combo, bound.Quote(f.Tag.Text), err)
		}
		if byName[tag] {
			return nil, fmt.Errorf("%s:%d: tag %q is rendered for two different stacks (the second from %s); add the field that tells them apart to the tag template", f.name(), f.Tag.Line, tag, combo)
		}
		inputs, err := Inputs(stack, f, opts)
		if err != nil {
			return nil, fmt.Errorf("expand %s: %s: %w", f.name(), combo, err)
		}
		byStack[key], byName[tag] = tag, true
		plan.Variants = append(plan.Variants, Variant{
			Name: tag, Tag: f.Repository + ":" + tag, Axes: axes, Stack: stack, Inputs: inputs, Validation: why,
		})
	}
	for _, v := range plan.Variants {
		for _, t := range f.Targets {
			if _, err := t.Ref(v); err != nil {
				return nil, fmt.Errorf("expand %s: target %s: %s: %w", f.name(), t.Target, v.Name, err)
			}
		}
	}
	return plan, nil
}

// MaxCombinations bounds the combinations a publish file may name: the
// product of its axes plus its includes. A file naming more is refused
// before any is resolved.
const MaxCombinations = 10_000

// productSize is the number of combinations of the axes (0 without
// axes), refused over MaxCombinations with the axes' sizes.
func (f *File) productSize() (int, error) {
	if len(f.Matrix) == 0 {
		return 0, nil
	}
	n := 1
	sizes := make([]string, len(f.Matrix))
	over := false
	for i, a := range f.Matrix {
		sizes[i] = strconv.Itoa(len(a.Values))
		if n *= len(a.Values); n > MaxCombinations {
			over = true
			n = MaxCombinations + 1 // keeps the product from overflowing
		}
	}
	if over || n+len(f.Include) > MaxCombinations {
		return 0, fmt.Errorf("expand %s: %w: its matrix has %s combinations (%d axes) and %d includes, over the limit of %d; split it into several publish files, or list the stacks you build as include entries",
			f.name(), bound.ErrBound, strings.Join(sizes, "×"), len(f.Matrix), len(f.Include), MaxCombinations)
	}
	return n, nil
}

// combinations yields the product of the axes, the last axis varying
// fastest, then the includes: one at a time, never all at once.
func (f *File) combinations() iter.Seq[Combination] {
	return func(yield func(Combination) bool) {
		if len(f.Matrix) > 0 && !f.product(yield) {
			return
		}
		for _, c := range f.Include {
			if !yield(c) {
				return
			}
		}
	}
}

// product yields the product of the axes; false when yield stopped it.
func (f *File) product(yield func(Combination) bool) bool {
	idx := make([]int, len(f.Matrix))
	for {
		var c Combination
		for i, a := range f.Matrix {
			if len(a.Values) == 0 {
				return true
			}
			c.Values = append(c.Values, Value{Axis: a.Name, Field: a.Field, Value: a.Values[idx[i]]})
		}
		if !yield(c) {
			return false
		}
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(f.Matrix[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return true
		}
	}
}

// excluded returns the exclude entry every key of which matches c.
func (f *File) excluded(c Combination) *Combination {
	for i := range f.Exclude {
		ex := &f.Exclude[i]
		all := true
		for _, want := range ex.Values {
			if got, ok := c.value(want.Axis); !ok || got != want.Value {
				all = false
				break
			}
		}
		if all {
			return ex
		}
	}
	return nil
}

func (c Combination) value(axis string) (string, bool) {
	for _, v := range c.Values {
		if v.Axis == axis {
			return v.Value, true
		}
	}
	return "", false
}

func (c Combination) axes() map[string]string {
	out := make(map[string]string, len(c.Values))
	for _, v := range c.Values {
		out[v.Axis] = v.Value
	}
	return out
}

// String renders the combination for messages: "cuda 12.4, torch 2.6".
func (c Combination) String() string {
	parts := make([]string, len(c.Values))
	for i, v := range c.Values {
		parts[i] = v.Axis + " " + v.Value
	}
	return strings.Join(parts, ", ")
}

func (f *File) name() string {
	if f.Path == "" {
		return "publish.yaml"
	}
	return f.Path
}

// stackKey identifies what a stack builds: its JSON without the notes,
// which say why the resolver chose it and differ with the constraints.
func stackKey(s matrix.Stack) (string, error) {
	s.Notes, s.SupportedAlternative = nil, nil
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode stack: %w", err)
	}
	return string(b), nil
}

// Fields are the template fields of a variant: the axes as written,
// overridden by the resolved values where the stack has them (cuda,
// cuda_short, python, os, flavor, torch, tensorflow, jax, their wheels'
// CUDA torch_cuda_short, tensorflow_cuda_short, jax_cuda_short, cudnn,
// gpu).
func Fields(s matrix.Stack, axes map[string]string) map[string]string {
	out := maps.Clone(axes)
	if out == nil {
		out = map[string]string{}
	}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	set("cuda", s.CUDA)
	if v, err := matrix.ParseVersion(s.CUDA); err == nil {
		set(FieldCUDAShort, matrix.CUDATag(v))
	}
	set("python", s.Python)
	set("os", s.OS)
	set("flavor", s.Flavor)
	for _, fw := range matrix.FrameworkNames() {
		set(fw, s.Frameworks[fw].Version)
		short := ""
		if v, err := matrix.ParseVersion(s.Frameworks[fw].CUDA); err == nil && s.Frameworks[fw].CUDA != "" {
			short = matrix.CUDATag(v)
		}
		set(WheelCUDAShortField(fw), short)
	}
	if s.CuDNN != "" {
		out["cudnn"] = s.CuDNN
	}
	if s.GPU != "" {
		out["gpu"] = s.GPU
	}
	return out
}

// inputs is what a variant's Inputs digest is taken over. encoding/json
// writes struct fields in this order and map keys sorted, so the encoding
// is canonical.
type inputs struct {
	BuildVersion string             `json:"build_version"`
	Stack        matrix.Stack       `json:"stack"`
	Dockerfile   string             `json:"dockerfile"`
	Extras       builder.Extras     `json:"extras"`
	Platforms    []string           `json:"platforms"`
	BaseDigest   string             `json:"base_digest,omitempty"`
	Files        map[string]string  `json:"files,omitempty"`
	Epoch        int64              `json:"source_date_epoch,omitempty"`
	Compression  matrix.Compression `json:"compression,omitempty"`
	LargeWheel   int64              `json:"large_wheel,omitempty"`
}

// Inputs is the digest ("sha256:…") over everything that decides a
// variant's content: BuildVersion, the stack, the generated Dockerfile,
// the build extras, the platforms (in any order) and, when opts has them,
// the pinned base's digest, the digests of the copied files and the
// requirements file, and the build's SOURCE_DATE_EPOCH.
func Inputs(s matrix.Stack, f *File, opts ExpandOptions) (string, error) {
	df, err := Dockerfile(s, f.Build, opts)
	if err != nil {
		return "", err
	}
	s.SupportedAlternative = nil // advice, not content
	in := inputs{BuildVersion: BuildVersion, Stack: s, Dockerfile: df, Extras: f.Build, Platforms: slices.Sorted(slices.Values(f.Platforms.Strings())), Epoch: opts.SourceDateEpoch}
	if opts.Compression != "" && opts.Compression != builder.DefaultCompression {
		in.Compression = opts.Compression
	}
	if opts.LargeWheel != builder.DefaultLargeWheel {
		in.LargeWheel = opts.LargeWheel
	}
	if b, ok := opts.Bases[s.BaseImage]; ok {
		in.BaseDigest = b.Digest
	}
	for _, src := range sourcesOf(f.Build) {
		if d, ok := opts.Files[src]; ok {
			if in.Files == nil {
				in.Files = map[string]string{}
			}
			in.Files[src] = d
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("encode inputs: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// sourcesOf lists the files the extras read from the client.
func sourcesOf(e builder.Extras) []string {
	var out []string
	if e.Requirements != "" {
		out = append(out, e.Requirements)
	}
	for _, c := range e.Copy {
		cp, _ := builder.ParseCopySpec(c) // Load validated the extras
		out = append(out, cp.Src)
	}
	return out
}

// unpinned stands in for a base digest while the Dockerfile is generated
// without one; Dockerfile puts the base's tag back in its place.
const unpinned = "@sha256:0000000000000000000000000000000000000000000000000000000000000000"

// Dockerfile is the Dockerfile gpuimg generates for stack s with extras e
// (builder.Dockerfile), FROM the base pinned in opts.Bases, else FROM the
// base's tag (builder.Dockerfile itself insists on a pinned base; expand
// runs without a registry).
func Dockerfile(s matrix.Stack, e builder.Extras, opts ExpandOptions) (string, error) {
	d := builder.Definition{Stack: s, Extras: e, HasRequirements: e.Requirements != "", NoTorchCompile: opts.NoTorchCompile}
	if b, ok := opts.Bases[s.BaseImage]; ok {
		d.Base = b.From
		return builder.Dockerfile(d)
	}
	d.Base = s.BaseImage + unpinned
	df, err := builder.Dockerfile(d)
	if err != nil {
		return "", err
	}
	from := "\nFROM " + d.Base // the stages FROM the base (builder.Dockerfile names the first)
	if !strings.Contains(df, from+" ") && !strings.Contains(df, from+"\n") {
		return "", fmt.Errorf("generate Dockerfile for %s: FROM line not found", s.BaseImage)
	}
	return strings.ReplaceAll(df, from, "\nFROM "+s.BaseImage), nil
}

// planHost is a host the plan's variants must pass on: validate:'s, or a
// targets: fleet's.
type planHost struct {
	what string // "validate:", "target sagemaker/p5"
	host matrix.Host
}

// planHosts are the hosts of f's validate: and targets:, checked: an
// unknown GPU or target is an error before anything is built.
func planHosts(db *matrix.DB, f *File) ([]planHost, error) {
	var out []planHost
	for i, g := range f.Validate.GPU {
		if _, err := db.FindGPU(g); err != nil {
			return nil, fmt.Errorf("expand %s: validate.gpu[%d]: %w", f.name(), i, err)
		}
	}
	if !f.Validate.Driver.IsZero() || len(f.Validate.GPU) > 0 {
		out = append(out, planHost{"validate", matrix.Host{Driver: f.Validate.Driver, GPU: strings.Join(f.Validate.GPU, ",")}})
	}
	for _, ts := range f.Targets {
		t, err := ts.Fleet(db)
		if err != nil {
			return nil, fmt.Errorf("expand %s: targets: %w", f.name(), err)
		}
		out = append(out, planHost{"target " + t.Name, matrix.Host{Driver: t.Driver, GPU: strings.Join(t.GPUs, ",")}})
	}
	return out, nil
}

// cannotPass says why stack s cannot pass validation on one of hosts (the
// first failed check of the first such host), or "" when it passes on all.
func cannotPass(db *matrix.DB, s matrix.Stack, hosts []planHost) (string, error) {
	for _, h := range hosts {
		fs, err := db.CheckStack(s, h.host)
		if err != nil {
			return "", err
		}
		for _, f := range fs {
			if f.Status == matrix.Fail {
				return fmt.Sprintf("%s would fail %s (%s): %s: %s", s.Short(), h.what, hostWords(h.host), f.Name, f.Message), nil
			}
		}
	}
	return "", nil
}

// hostWords names a host: "driver 535.104.05, GPUs h100,l4".
func hostWords(h matrix.Host) string {
	var parts []string
	if !h.Driver.IsZero() {
		parts = append(parts, "driver "+h.Driver.String())
	}
	if h.GPU != "" {
		parts = append(parts, "GPUs "+h.GPU)
	}
	if len(parts) == 0 {
		return "no driver or GPUs recorded"
	}
	return strings.Join(parts, ", ")
}

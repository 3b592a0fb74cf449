package publish

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/sbom"
)

// File is a publish file (publish.yaml): the images a team publishes, as a
// matrix of resolver constraints, and where they go. docs/publish.md
// describes the format.
type File struct {
	// Repository is where the images are pushed (registry.example.com/ml/torch).
	Repository string `yaml:"repository"`
	// Tag renders each variant's tag from its fields ("{torch}-cu{cuda_short}").
	Tag Template `yaml:"tag"`
	// Matrix are the axes, in the order written; their product is the
	// combinations to resolve.
	Matrix Axes `yaml:"matrix"`
	// Exclude drops the combinations that match every key of an entry.
	Exclude []Combination `yaml:"exclude"`
	// Include adds combinations, resolved after the product.
	Include []Combination `yaml:"include"`
	// Build are the extras on top of every stack, as in gpuimg.yaml.
	Build builder.Extras `yaml:"build"`
	// Platforms to build ("linux/amd64"); empty: the builder's platform.
	Platforms images.Platforms `yaml:"platforms"`
	// Builders are BuildKit addresses; empty: the local daemon.
	Builders []string `yaml:"builders"`
	// Validate is the static validation a variant must pass before it is
	// tagged.
	Validate ValidateSpec `yaml:"validate"`
	// Mirrors are repositories a validated variant is copied to.
	Mirrors []string `yaml:"mirrors"`
	// Promote are the moving tags given to variants that passed.
	Promote Promote `yaml:"promote"`
	// Targets are provider fleets each variant is validated against and
	// imported into (images import), in the form each accepts.
	Targets []TargetSpec `yaml:"targets"`
	// Signing, when it names a key, signs every variant published and
	// attaches its SBOM and signed validation reports.
	Signing Signing `yaml:"signing"`

	// Path is the file LoadFile read, for messages.
	Path string `yaml:"-"`
}

// ValidateSpec is the validate: section: the hosts the images must run on.
type ValidateSpec struct {
	// Driver is the hosts' NVIDIA driver (535.104.05).
	Driver matrix.Version `yaml:"driver"`
	// GPU are the GPUs the hosts have (h100, l4).
	GPU []string `yaml:"gpu"`
	// Strict fails a variant whose report has an unknown check (a fact
	// the matrix lacks) or a warning, as validate --strict does. Off, a
	// failed check fails it and an unknown one is listed in the report.
	Strict bool `yaml:"strict"`
}

// Signing is the signing: section.
type Signing struct {
	// Key is the private key: a cosign key file (its password from
	// COSIGN_PASSWORD), a PEM key, env://VAR (the key's PEM held in the
	// environment variable VAR, as CI holds a secret), or an AWS KMS key,
	// awskms:///alias/NAME (docs/supply-chain.md). Empty: nothing is
	// signed.
	Key string `yaml:"key"`
	// SignatureFormat is where signatures go: bundle (cosign v3, the
	// default), legacy (cosign v2's .sig tag) or both.
	SignatureFormat string `yaml:"signature_format"`
	// SBOM is the SBOM's format: spdx-json (the default) or
	// cyclonedx-json.
	SBOM string `yaml:"sbom"`
	// Require is the evidence (signature, sbom, provenance, validation)
	// an unchanged variant's tag must carry, signed by Key, to be left as
	// it is; a tag without it is rebuilt and signed. Empty: signature,
	// sbom and validation.
	Require []string `yaml:"require"`
}

// Enabled says whether the section asks for signing.
func (s Signing) Enabled() bool { return s.Key != "" }

// Format is the signature format (bundle when unset).
func (s Signing) Format() sign.Format {
	if s.SignatureFormat == "" {
		return sign.FormatBundle
	}
	return sign.Format(s.SignatureFormat)
}

// SBOMFormat is the SBOM's format (SPDX JSON when unset).
func (s Signing) SBOMFormat() sbom.Format {
	if s.SBOM == "" {
		return sbom.SPDXJSON
	}
	return sbom.Format(s.SBOM)
}

// Required is the evidence an unchanged variant must carry.
func (s Signing) Required() ([]verbs.Evidence, error) {
	if len(s.Require) == 0 {
		return []verbs.Evidence{verbs.EvidenceSignature, verbs.EvidenceSBOM, verbs.EvidenceValidation}, nil
	}
	return verbs.ParseEvidence(strings.Join(s.Require, ","))
}

func (s Signing) check() error {
	if !s.Enabled() {
		if s.SignatureFormat != "" || s.SBOM != "" || len(s.Require) > 0 {
			return errors.New("signing: has settings but no key; set key: to a key file or env://VAR")
		}
		return nil
	}
	if _, err := sign.ParseFormat(string(s.Format())); err != nil {
		return fmt.Errorf("signing.signature_format: %w", err)
	}
	if _, err := sbom.ParseFormat(string(s.SBOMFormat())); err != nil {
		return fmt.Errorf("signing.sbom: %w", err)
	}
	if _, err := s.Required(); err != nil {
		return fmt.Errorf("signing.require: %w", err)
	}
	return nil
}

// TargetSpec is one entry of targets:: a fleet (a targets: row of the
// matrix, gpuimg matrix list targets) and where its provider pulls from.
type TargetSpec struct {
	// Target names the matrix row (sagemaker/p5).
	Target string `yaml:"target"`
	// Repository is the provider's registry repository; a variant goes to
	// Repository:TAG.
	Repository string `yaml:"repository"`
	// Tag renders the tag there, as the file's tag:; empty: the variant's
	// own tag.
	Tag Template `yaml:"tag"`
	// GPU narrows the fleet's GPU list to the GPUs the hosts rent (h100),
	// as --gpu does for images import; empty: every GPU the row lists.
	GPU []string `yaml:"gpu"`
}

// Fleet is the matrix row t names, its GPU list narrowed to t.GPU
// (matrix.DB.NarrowTarget).
func (t TargetSpec) Fleet(db *matrix.DB) (matrix.Target, error) {
	row, err := db.Target(t.Target)
	if err != nil {
		return row, err
	}
	row, _, err = db.NarrowTarget(row, strings.Join(t.GPU, ","))
	if err != nil {
		return row, fmt.Errorf("target %s: gpu: %w", t.Target, err)
	}
	return row, nil
}

// Ref is where variant v goes for this target.
func (t TargetSpec) Ref(v Variant) (string, error) {
	if t.Tag.Text == "" {
		return t.Repository + ":" + v.Name, nil
	}
	tag, err := t.Tag.Render(Fields(v.Stack, v.Axes))
	if err != nil {
		return "", err
	}
	return t.Repository + ":" + tag, nil
}

// Promote is the promote: section.
type Promote struct {
	// Tags are templates like Tag; each renders to a moving tag.
	Tags []Template `yaml:"tags"`
}

// axisNames lists the axes (keys under matrix:, exclude: and include:):
// the resolver's constraints by their keys (matrix.Field.Key), the same
// names as gpuimg.yaml's keys and gpuimg's stack flags, in explanation
// order.
func axisNames() []string {
	var out []string
	for _, f := range matrix.Fields() {
		out = append(out, f.Key())
	}
	return out
}

// Axis is one key under matrix: with its values as written.
type Axis struct {
	Name   string
	Field  matrix.Field
	Values []string
	Line   int
}

// Axes are the matrix: section, in the order written.
type Axes []Axis

// UnmarshalYAML implements yaml.Unmarshaler: a mapping of axis names to
// lists of constraints, each checked with the line.
func (a *Axes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: matrix must be a mapping of axes to lists of values", n.Line)
	}
	seen := map[string]bool{}
	var out Axes
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, err := axisField(k, seen)
		if err != nil {
			return err
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return fmt.Errorf("line %d: matrix.%s must be a non-empty list of values", v.Line, k.Value)
		}
		ax := Axis{Name: k.Value, Field: f, Line: k.Line}
		dup := map[string]bool{}
		for _, item := range v.Content {
			val, err := axisValue(k.Value, f, item)
			if err != nil {
				return err
			}
			if dup[val] {
				return fmt.Errorf("line %d: matrix.%s lists %q twice", item.Line, k.Value, val)
			}
			dup[val] = true
			ax.Values = append(ax.Values, val)
		}
		out = append(out, ax)
	}
	*a = out
	return nil
}

// Value is one axis set to one value.
type Value struct {
	Axis  string
	Field matrix.Field
	Value string
}

// Combination is one entry of exclude: or include:, its keys in the order
// written.
type Combination struct {
	Values []Value
	Line   int
}

// UnmarshalYAML implements yaml.Unmarshaler: a mapping of axis names to
// single values.
func (c *Combination) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return fmt.Errorf("line %d: want a mapping of axes to values ({cuda: \"12.4\", torch: \"2.6\"})", n.Line)
	}
	seen := map[string]bool{}
	out := Combination{Line: n.Line}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, err := axisField(k, seen)
		if err != nil {
			return err
		}
		val, err := axisValue(k.Value, f, v)
		if err != nil {
			return err
		}
		out.Values = append(out.Values, Value{Axis: k.Value, Field: f, Value: val})
	}
	*c = out
	return nil
}

func axisField(k *yaml.Node, seen map[string]bool) (matrix.Field, error) {
	f, ok := matrix.FieldByKey(k.Value)
	if !ok {
		return 0, fmt.Errorf("line %d: unknown axis %q; known axes: %s", k.Line, k.Value, strings.Join(axisNames(), ", "))
	}
	if seen[k.Value] {
		return 0, fmt.Errorf("line %d: axis %q given twice", k.Line, k.Value)
	}
	seen[k.Value] = true
	return f, nil
}

func axisValue(axis string, f matrix.Field, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", fmt.Errorf("line %d: %s: want a value, got %s", n.Line, axis, kindName(n))
	}
	if err := (&matrix.Constraints{}).Set(f, n.Value); err != nil {
		return "", fmt.Errorf("line %d: %s %q: %w", n.Line, axis, n.Value, err)
	}
	return strings.TrimSpace(n.Value), nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return "a scalar"
}

// LoadFile reads a publish file. Unknown keys and malformed values are
// errors naming the file and line.
func LoadFile(path string) (*File, error) {
	b, err := bound.ReadFile(path, "", bound.MaxUserFile)
	if err != nil {
		return nil, fmt.Errorf("read publish file: %w", err)
	}
	return ParseFile(path, b)
}

// ParseFile decodes a publish file; name is used in errors and kept as
// File.Path.
func ParseFile(name string, data []byte) (*File, error) {
	f := &File{}
	if err := matrix.DecodeStrict(name, data, f); err != nil {
		return nil, err
	}
	f.Path = name
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err) // DecodeStrict parsed it already
	}
	if err := f.check(topLevel(&doc)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// topLevel maps each top-level key of a document to its value's node.
func topLevel(doc *yaml.Node) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return out
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		out[root.Content[i].Value] = root.Content[i+1]
	}
	return out
}

// check validates what decoding does not: required keys, references,
// platforms, builder addresses and the extras. keys gives the lines.
func (f *File) check(keys map[string]*yaml.Node) error {
	line := func(key string) int {
		if n, ok := keys[key]; ok {
			return n.Line
		}
		return 1
	}
	itemLine := func(key string, i int) int {
		if n, ok := keys[key]; ok && n.Kind == yaml.SequenceNode && i < len(n.Content) {
			return n.Content[i].Line
		}
		return line(key)
	}
	if f.Repository == "" {
		return fmt.Errorf("line %d: repository is required (where the images are pushed: registry.example.com/ml/torch)", line("repository"))
	}
	if _, err := name.NewRepository(f.Repository); err != nil {
		return fmt.Errorf("line %d: repository %q: %w", line("repository"), f.Repository, err)
	}
	if f.Tag.Text == "" {
		return fmt.Errorf("line %d: tag is required (a template such as \"{torch}-cu{cuda_short}-py{python}\")", line("tag"))
	}
	if len(f.Matrix) == 0 && len(f.Include) == 0 {
		return fmt.Errorf("line %d: matrix (or include) is required: nothing to publish", line("matrix"))
	}
	axes := map[string]bool{}
	for _, a := range f.Matrix {
		axes[a.Name] = true
	}
	for _, ex := range f.Exclude {
		for _, v := range ex.Values {
			if !axes[v.Axis] {
				return fmt.Errorf("line %d: exclude names axis %q, which matrix does not have; it would never match", ex.Line, v.Axis)
			}
		}
	}
	if err := f.Build.Validate(); err != nil {
		return fmt.Errorf("line %d: build: %w", line("build"), err)
	}
	for i, b := range f.Builders {
		if err := checkBuilder(b); err != nil {
			return fmt.Errorf("line %d: builder %q: %w", itemLine("builders", i), b, err)
		}
	}
	for i, m := range f.Mirrors {
		if _, err := name.NewRepository(m); err != nil {
			return fmt.Errorf("line %d: mirror %q: %w", itemLine("mirrors", i), m, err)
		}
	}
	for i, t := range f.Targets {
		if strings.TrimSpace(t.Target) == "" {
			return fmt.Errorf("line %d: targets[%d] has no target: name the fleet (gpuimg matrix list targets)", itemLine("targets", i), i)
		}
		if _, err := name.NewRepository(t.Repository); err != nil {
			return fmt.Errorf("line %d: targets[%d] (%s): repository %q: %w", itemLine("targets", i), i, t.Target, t.Repository, err)
		}
	}
	if d := f.Validate.Driver; !d.IsZero() {
		if _, err := matrix.ParseDriver(d.String()); err != nil {
			return fmt.Errorf("line %d: validate.driver: %w", line("validate"), err)
		}
	}
	for i, g := range f.Validate.GPU {
		if strings.TrimSpace(g) == "" {
			return fmt.Errorf("line %d: validate.gpu[%d] is empty", line("validate"), i)
		}
	}
	if err := f.Signing.check(); err != nil {
		return fmt.Errorf("line %d: %w", line("signing"), err)
	}
	return nil
}

// builderSchemes are the BuildKit address schemes a builder may use.
var builderSchemes = []string{"unix://", "tcp://", "docker-container://", "kube-pod://"}

func checkBuilder(addr string) error {
	for _, s := range builderSchemes {
		if rest, ok := strings.CutPrefix(addr, s); ok {
			if rest == "" {
				return fmt.Errorf("nothing after %s", s)
			}
			return nil
		}
	}
	return fmt.Errorf("want an address starting with %s", strings.Join(builderSchemes, ", "))
}

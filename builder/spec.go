package builder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/matrix"
)

// Extras are what a team adds on top of the resolved stack. The zero value
// adds nothing.
type Extras struct {
	// Pip are extra pip requirements ("numpy==1.26.4"), installed after the
	// frameworks.
	Pip []string `yaml:"pip" json:"pip,omitempty"`
	// Requirements is a requirements.txt file (path on the client).
	Requirements string `yaml:"requirements" json:"requirements,omitempty"`
	// Apt are extra OS packages (apt on Ubuntu, dnf on Rocky Linux and UBI).
	Apt []string `yaml:"apt" json:"apt,omitempty"`
	// Dnf are RPM packages by their RPM names (gpuimg capture of an
	// RPM-based root writes them): installed with dnf on a Rocky Linux or
	// UBI base, refused on an apt one (ErrDnfNeedsRPMBase).
	Dnf []string `yaml:"dnf" json:"dnf,omitempty"`
	// Copy are SRC:DST pairs (ParseCopySpec); SRC is relative to the
	// context directory.
	Copy []string `yaml:"copy" json:"copy,omitempty"`
	// Env are extra environment variables.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Workdir is the image's working directory.
	Workdir string `yaml:"workdir" json:"workdir,omitempty"`
	// Entrypoint is the image's entrypoint (exec form).
	Entrypoint []string `yaml:"entrypoint" json:"entrypoint,omitempty"`
	// Fabric names a fabrics: row (efa, infiniband; gpuimg matrix list
	// fabrics) whose user space the build adds, in a layer of its own
	// right on the base so that variants on one base share it; the
	// resolver refuses frameworks whose NCCL its plugin does not support.
	Fabric string `yaml:"fabric" json:"fabric,omitempty"`
	// FabricSource is the installer archive of a fabric installed from
	// one (efa), pinned: URL#sha256=HEX (a mirror of the archive the
	// matrix names, or another release's).
	FabricSource string `yaml:"fabric_source" json:"fabric_source,omitempty"`
}

// FabricSource is an installer archive by URL and sha256.
type FabricSource struct {
	URL    string
	SHA256 string
}

// ParseFabricSource parses URL#sha256=HEX.
func ParseFabricSource(s string) (FabricSource, error) {
	u, frag, ok := strings.Cut(s, "#")
	sum, hasSum := strings.CutPrefix(frag, "sha256=")
	if !ok || !hasSum || !sha256RE.MatchString(sum) {
		return FabricSource{}, fmt.Errorf("fabric source %q is not pinned: want URL#sha256=HEX (the archive's sha256sum)", s)
	}
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return FabricSource{}, fmt.Errorf("fabric source %q: want an http:// or https:// URL of the archive", s)
	}
	return FabricSource{URL: u, SHA256: sum}, nil
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Config is the content of a gpuimg.yaml file: the stack constraints, the
// extras and the build settings, all optional. Flags override it.
type Config struct {
	// Stack are the stack fields, each under its key (matrix.Field.Key:
	// cuda, torch, …, target: a fleet whose driver and GPUs apply unless
	// driver or gpu is given), as written.
	Stack      matrix.Spec `yaml:"-"`
	MatrixFile []string    `yaml:"matrix_files"`

	Extras `yaml:",inline"`

	Tag               []string           `yaml:"tag"`
	Push              bool               `yaml:"push"`
	Platforms         images.Platforms   `yaml:"platforms"`
	RegistryMirrors   map[string]string  `yaml:"registry_mirrors"`
	PipIndexURL       string             `yaml:"pip_index_url"`
	PipExtraIndexURLs []string           `yaml:"pip_extra_index_url"`
	PipTrustedHosts   []string           `yaml:"pip_trusted_host"`
	PipFindLinks      []string           `yaml:"pip_find_links"`
	PythonMirror      string             `yaml:"python_mirror"`
	CacheFrom         []string           `yaml:"cache_from"`
	CacheTo           []string           `yaml:"cache_to"`
	Compression       matrix.Compression `yaml:"compression"`
	LargeWheel        string             `yaml:"large_wheel"`
	// Provenance asks for SLSA v1 provenance: auto (gpuimg's builder id)
	// or a builder id URI (Request.Provenance).
	Provenance string `yaml:"provenance"`
	// TorchCompile false leaves out torch.compile's C compiler and
	// Python headers (Definition.NoTorchCompile); unset means true.
	TorchCompile *bool `yaml:"torch_compile"`
	// Capture is what gpuimg capture recorded (source, date, driver,
	// what it could not reproduce); a build reads nothing from it.
	Capture yaml.Node `yaml:"capture" json:"-"`

	// Path is the file LoadConfig read, for messages.
	Path string `yaml:"-"`
}

// name is the file for messages.
func (c *Config) name() string {
	if c.Path == "" {
		return "gpuimg.yaml"
	}
	return c.Path
}

// LoadConfig reads a gpuimg.yaml. Unknown keys and wrong types are errors
// naming the file and line.
func LoadConfig(file string) (*Config, error) {
	b, err := bound.ReadFile(file, "", bound.MaxUserFile)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := matrix.OneDocument(file, b); err != nil {
		return nil, err
	}
	var in configYAML
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	err = dec.Decode(&in)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	c := in.Config
	if err = in.stack(&c, err); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
		msg = strings.ReplaceAll(msg, "\n  ", "; ")
		return nil, fmt.Errorf("%s: %s", file, msg)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c.Path = file
	return &c, nil
}

// configYAML is gpuimg.yaml as decoded: Config's keys, and the others
// (Rest), which configYAML.stack takes as stack fields or refuses.
type configYAML struct {
	Config `yaml:",inline"`
	Rest   map[string]yaml.Node `yaml:",inline"`
}

// stack sets c.Stack from the stack fields' keys in Rest and refuses the
// other keys as the strict decoder would; their errors are added to err,
// the decoder's.
func (in *configYAML) stack(c *Config, err error) error {
	te, ok := errors.AsType[*yaml.TypeError](err)
	if err != nil && !ok {
		return err
	}
	if te == nil {
		te = &yaml.TypeError{}
	}
	keys := map[string]matrix.Field{}
	for _, f := range matrix.SpecFields() {
		keys[f.Key()] = f
	}
	for _, k := range slices.SortedFunc(maps.Keys(in.Rest), func(a, b string) int { return in.Rest[a].Line - in.Rest[b].Line }) {
		n := in.Rest[k]
		f, ok := keys[k]
		if !ok {
			te.Errors = append(te.Errors, fmt.Sprintf("line %d: field %s not found in type builder.Config", n.Line, k))
			continue
		}
		if err := n.Decode(&c.Stack[f]); err != nil {
			if e, ok := errors.AsType[*yaml.TypeError](err); ok {
				te.Errors = append(te.Errors, e.Errors...)
				continue
			}
			return err
		}
	}
	if len(te.Errors) == 0 {
		return nil
	}
	// In the file's order, as the decoder alone would list them.
	slices.SortStableFunc(te.Errors, func(a, b string) int { return errorLine(a) - errorLine(b) })
	return te
}

// errorLine is the line a decoder's error names ("line 3: …"), 0 for none.
func errorLine(msg string) int {
	var n int
	if _, err := fmt.Sscanf(msg, "line %d:", &n); err != nil {
		return 0
	}
	return n
}

var (
	pipReqRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?\s*((==|>=|<=|~=|!=|<|>|===)\s*[A-Za-z0-9.*+!_-]+\s*,?\s*)*$`)
	aptRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*(=[A-Za-z0-9.+~:-]+)?$`)
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	rpmRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)
)

// ErrDnfNeedsRPMBase is wrapped when dnf: packages meet a stack on an apt
// base (Ubuntu), which cannot install them.
var ErrDnfNeedsRPMBase = errors.New("dnf: lists RPM packages, which need an RPM base")

// Validate checks the extras without touching the filesystem.
func (e Extras) Validate() error {
	for _, p := range e.Pip {
		if !pipReqRE.MatchString(p) {
			return fmt.Errorf("pip requirement %q is not NAME or NAME==VERSION (URLs and options go in a requirements file)", p)
		}
	}
	for _, a := range e.Apt {
		if !aptRE.MatchString(a) {
			return fmt.Errorf("package name %q is not a valid apt/dnf package name", a)
		}
	}
	for _, a := range e.Dnf {
		if !rpmRE.MatchString(a) {
			return fmt.Errorf("dnf: package name %q is not a valid RPM package name", a)
		}
	}
	if _, err := e.CopySpecs(); err != nil {
		return err
	}
	for k := range e.Env {
		if !envKeyRE.MatchString(k) {
			return fmt.Errorf("environment variable name %q is not valid", k)
		}
	}
	if e.FabricSource != "" {
		if e.Fabric == "" {
			return errors.New("fabric_source is given without fabric: name the fabric it installs (--fabric efa)")
		}
		if _, err := ParseFabricSource(e.FabricSource); err != nil {
			return err
		}
	}
	if e.Workdir != "" && !path.IsAbs(e.Workdir) {
		return fmt.Errorf("workdir %q must be an absolute path", e.Workdir)
	}
	return nil
}

// Constrain returns c with what a build of extras e for platforms asks
// of its stack: OS packages that use CUDA's libraries need the runtime
// flavor (Constraints.Apt), and a framework without CUDA wheels for one of
// the platforms is refused (Constraints.Platforms). gpuimg build and
// publish's expansion resolve their stacks through it.
func Constrain(c matrix.Constraints, e Extras, platforms images.Platforms) matrix.Constraints {
	c.Apt, c.Fabric, c.Platforms = e.Apt, e.Fabric, platforms.Strings()
	return c
}

// ParseEnv parses K=V pairs from the command line.
func ParseEnv(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !envKeyRE.MatchString(k) {
			return nil, fmt.Errorf("env %q: want KEY=VALUE", p)
		}
		out[k] = v
	}
	return out, nil
}

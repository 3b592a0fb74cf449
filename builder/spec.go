package builder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpuimg/gpuimg/images"
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
	// Copy are SRC:DST pairs (ParseCopySpec); SRC is relative to the
	// context directory.
	Copy []string `yaml:"copy" json:"copy,omitempty"`
	// Env are extra environment variables.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Workdir is the image's working directory.
	Workdir string `yaml:"workdir" json:"workdir,omitempty"`
	// Entrypoint is the image's entrypoint (exec form).
	Entrypoint []string `yaml:"entrypoint" json:"entrypoint,omitempty"`
}

// Config is the content of a gpuimg.yaml file: the stack constraints, the
// extras and the build settings, all optional. Flags override it.
type Config struct {
	CUDA       string   `yaml:"cuda"`
	CuDNN      string   `yaml:"cudnn"`
	Torch      string   `yaml:"torch"`
	TensorFlow string   `yaml:"tensorflow"`
	JAX        string   `yaml:"jax"`
	Python     string   `yaml:"python"`
	OS         string   `yaml:"os"`
	Flavor     string   `yaml:"flavor"`
	GPU        string   `yaml:"gpu"`
	Driver     string   `yaml:"driver"`
	Target     string   `yaml:"target"` // a fleet (gpuimg matrix list targets): its driver and GPUs unless driver or gpu is given
	MatrixFile []string `yaml:"matrix_files"`

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
	// TorchCompile false leaves out torch.compile's C compiler and
	// Python headers (Definition.NoTorchCompile); unset means true.
	TorchCompile *bool `yaml:"torch_compile"`

	// Path is the file LoadConfig read, for messages.
	Path string `yaml:"-"`
}

// stack is the file's stack fields by matrix.Field.
func (c *Config) stack() matrix.Spec {
	return matrix.Spec{matrix.FieldCUDA: c.CUDA, matrix.FieldCuDNN: c.CuDNN, matrix.FieldTorch: c.Torch, matrix.FieldTensorFlow: c.TensorFlow,
		matrix.FieldJAX: c.JAX, matrix.FieldPython: c.Python, matrix.FieldOS: c.OS, matrix.FieldFlavor: c.Flavor, matrix.FieldGPU: c.GPU,
		matrix.FieldDriver: c.Driver, matrix.FieldTarget: c.Target}
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
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := matrix.OneDocument(file, b); err != nil {
		return nil, err
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
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

var (
	pipReqRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?\s*((==|>=|<=|~=|!=|<|>|===)\s*[A-Za-z0-9.*+!_-]+\s*,?\s*)*$`)
	aptRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*(=[A-Za-z0-9.+~:-]+)?$`)
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

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
	if _, err := e.CopySpecs(); err != nil {
		return err
	}
	for k := range e.Env {
		if !envKeyRE.MatchString(k) {
			return fmt.Errorf("environment variable name %q is not valid", k)
		}
	}
	if e.Workdir != "" && !path.IsAbs(e.Workdir) {
		return fmt.Errorf("workdir %q must be an absolute path", e.Workdir)
	}
	return nil
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

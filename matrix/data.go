package matrix

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Pos is where a row was read: a file and a line. Built-in rows name the
// embedded file (data/cuda.yaml).
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Row is what every matrix row has: where it came from and what it says
// about disagreements between sources.
type Row struct {
	Source string   `yaml:"source" json:"source"`
	Notes  []string `yaml:"notes" json:"notes,omitempty"`
	At     Pos      `yaml:"-" json:"-"`
}

// Source is a public document a fact was read from.
type Source struct {
	ID        string `yaml:"id" json:"id"`
	Title     string `yaml:"title" json:"title"`
	URL       string `yaml:"url" json:"url"`
	Retrieved string `yaml:"retrieved" json:"retrieved,omitempty"`
	At        Pos    `yaml:"-" json:"-"`
}

// CUDAFamily holds what is true of a whole CUDA major version.
type CUDAFamily struct {
	Major int `yaml:"major" json:"major"`
	// MinDriverCompat is the Linux driver floor for any release of the
	// family under minor-version compatibility.
	MinDriverCompat Version `yaml:"min_driver_compat" json:"min_driver_compat"`
	Row             `yaml:",inline"`
}

// CUDARelease is one CUDA toolkit release (a GA or an update).
type CUDARelease struct {
	Version Version `yaml:"version" json:"version"`
	// MinDriver is the Linux x86_64 driver that shipped with the toolkit:
	// the floor without minor-version compatibility.
	MinDriver Version `yaml:"min_driver" json:"min_driver"`
	Released  string  `yaml:"released" json:"released,omitempty"`
	Row       `yaml:",inline"`
}

// Arch is a GPU architecture (sm_XY) and the toolkits that can target it.
type Arch struct {
	Arch string `yaml:"arch" json:"arch"`
	Name string `yaml:"name" json:"name"`
	// AddedIn is the first toolkit that compiles for it.
	AddedIn Version `yaml:"added_in" json:"added_in"`
	// RemovedIn is the first toolkit that no longer does; zero if none.
	RemovedIn Version `yaml:"removed_in" json:"removed_in"`
	// ArchSpecific is the first toolkit whose nvcc accepts the
	// architecture-specific target (sm_90a, compute_90a); zero if none.
	ArchSpecific Version `yaml:"arch_specific" json:"arch_specific,omitzero"`
	// FamilySpecific is the first toolkit whose nvcc accepts the
	// family-specific target (sm_100f, compute_100f); zero if none.
	FamilySpecific Version `yaml:"family_specific" json:"family_specific,omitzero"`
	// RenamedTo is the name toolkits from RemovedIn on give the same
	// hardware (sm_101 became sm_110 in CUDA 13.0).
	RenamedTo string `yaml:"renamed_to" json:"renamed_to,omitempty"`
	// Driver is the range of driver branches that know the architecture
	// (its first GPUs'); a GPU row's own Driver, when set, wins.
	Driver DriverSupport `yaml:"driver" json:"driver,omitzero"`
	Row    `yaml:",inline"`
}

// DriverSupport is the range of Linux driver branches that know a GPU or
// an architecture: a driver of an older branch does not run it, nor one
// newer than Last. Zero fields are not recorded.
type DriverSupport struct {
	// Branch is the lowest driver branch (525 for R525) that knows it.
	Branch Version `yaml:"branch" json:"branch,omitzero"`
	// First is the first release of Branch that lists it (525.85.05),
	// when NVIDIA's lists show one; earlier releases of Branch may not.
	First Version `yaml:"first" json:"first,omitzero"`
	// Last is the last branch that still supports it (580 for Pascal).
	Last Version `yaml:"last" json:"last,omitzero"`
	// ListedSince is, for a GPU older than NVIDIA's per-release lists
	// (open-gpu-kernel-modules' first tag is 515.43.04), the first release
	// from which every later release's list names it: a lower bound of
	// what is known, not the release that first supported it. A driver at
	// or above it knows the GPU; one below is unknown, never a failure.
	// A GPU row sets it instead of Branch and First.
	ListedSince Version `yaml:"listed_since" json:"listed_since,omitzero"`
	// Branches are, branch by branch from Branch on, the releases whose
	// Compatible GPUs tables name the GPU, read from every release tag
	// (off-cycle builds included). A branch without an entry below the
	// last entry is one whose releases never list the GPU. First, where
	// another source (the driver's name table, its change log) shows an
	// earlier release of Branch knowing the GPU, still wins from there
	// on. Optional; gpus: rows only.
	Branches []BranchListing `yaml:"branches" json:"branches,omitempty"`
	Source   string          `yaml:"source" json:"source,omitempty"`
	Notes    []string        `yaml:"notes" json:"notes,omitempty"`
	// FromArch says Branch is the GPU's architecture's, as DriverSupportOf
	// fills it for a GPU row that records none: a lower bound only.
	FromArch bool `yaml:"-" json:"-"`
}

// BranchListing is what the release tags of one driver branch say of a
// GPU: the lowest-numbered release whose Compatible GPUs table names it
// (an off-cycle build numbered below the branch's mainline releases
// counts), and the releases numbered above it whose tables do not.
type BranchListing struct {
	Branch Version `yaml:"branch" json:"branch"`
	First  Version `yaml:"first" json:"first"`
	// Unlisted are releases of Branch after First whose tables leave the
	// GPU out (off-cycle builds of another product line, or a row that
	// came back later).
	Unlisted []Version `yaml:"unlisted" json:"unlisted,omitempty"`
}

// Listing is the entry of Branches for driver branch b (525), if any.
func (d DriverSupport) Listing(b int) (BranchListing, bool) {
	for _, l := range d.Branches {
		if l.Branch.Major() == b {
			return l, true
		}
	}
	return BranchListing{}, false
}

// IsZero reports whether nothing is recorded.
func (d DriverSupport) IsZero() bool {
	return d.Branch.IsZero() && d.Last.IsZero() && d.ListedSince.IsZero()
}

// Library is a cuDNN or NCCL release and the CUDA versions it supports.
type Library struct {
	Version   Version    `yaml:"version" json:"version"`
	CUDA      Constraint `yaml:"cuda" json:"cuda"`
	MinDriver Version    `yaml:"min_driver" json:"min_driver"`
	// Gencode is the device code a build of the release compiles for,
	// per CUDA release it is built with, where a source states it (for
	// NCCL: the default NVCC_GENCODE of makefiles/common.mk at the
	// release tag, which is what a source build gets; NVIDIA's own
	// binaries were not inspected).
	Gencode []Gencode `yaml:"gencode" json:"gencode,omitempty"`
	Row     `yaml:",inline"`
}

// Gencode is the architectures one CUDA build compiles device code for:
// SASS (cubins) and PTX, as sm_XY.
type Gencode struct {
	CUDA Version  `yaml:"cuda" json:"cuda"`
	SASS []string `yaml:"sass" json:"sass"`
	PTX  []string `yaml:"ptx" json:"ptx,omitempty"`
}

// String is the gencode as a table cell, every architecture named (a
// range would hide the gaps: NCCL's CUDA 12.9 build has no sm_75):
// "12.9: sm_60,sm_61,sm_70,sm_80,sm_90,sm_100,sm_120 +PTX sm_120".
func (g Gencode) String() string {
	s := g.CUDA.String() + ": " + strings.Join(g.SASS, ",")
	if len(g.PTX) > 0 {
		s += " +PTX " + strings.Join(g.PTX, ",")
	}
	return s
}

// OS is an operating system NVIDIA publishes CUDA images for.
type OS struct {
	Name   string `yaml:"name" json:"name"`
	Family string `yaml:"family" json:"family"`
	// Pythons are the CPython minors the distribution's own repositories
	// provide; the first is its default python3.
	Pythons []Version `yaml:"pythons" json:"pythons"`
	EOL     string    `yaml:"eol" json:"eol,omitempty"`
	Row     `yaml:",inline"`
}

// BaseImage lists the nvidia/cuda tags published for one CUDA release.
type BaseImage struct {
	CUDA    Version  `yaml:"cuda" json:"cuda"`
	OS      []string `yaml:"os" json:"os"`
	Flavors []string `yaml:"flavors" json:"flavors"`
	// CuDNN is the cuDNN inside the cudnn flavors (NV_CUDNN_VERSION in
	// NVIDIA's Dockerfiles), if known. NVIDIA rebuilds tags and may bump it;
	// the row records the value read and its notes say when.
	CuDNN Version `yaml:"cudnn" json:"cudnn"`
	// EOL marks tags NVIDIA has declared end of life (doc/unsupported-tags.md,
	// dist/end-of-life/ or its support policy): superseded by a newer point
	// release of the same minor, or their driver branch or OS is past its
	// end. They get no updates and are deleted six months later.
	EOL bool `yaml:"eol" json:"eol,omitempty"`
	Row `yaml:",inline"`
}

// Torch is one PyTorch release.
type Torch struct {
	Version     Version        `yaml:"version" json:"version"`
	Released    string         `yaml:"released" json:"released,omitempty"`
	Python      Constraint     `yaml:"python" json:"python"`
	Torchvision string         `yaml:"torchvision" json:"torchvision,omitempty"`
	Torchaudio  string         `yaml:"torchaudio" json:"torchaudio,omitempty"`
	Variants    []TorchVariant `yaml:"variants" json:"variants"`
	Row         `yaml:",inline"`
}

// TorchVariant is one CUDA build of a PyTorch release (cu121, …).
type TorchVariant struct {
	CUDA     Version  `yaml:"cuda" json:"cuda"`
	Status   string   `yaml:"status" json:"status"`
	CuDNN    Version  `yaml:"cudnn" json:"cudnn"`
	NCCL     Version  `yaml:"nccl" json:"nccl"`
	Archs    []string `yaml:"archs" json:"archs,omitempty"`
	PTX      []string `yaml:"ptx" json:"ptx,omitempty"`
	IndexURL string   `yaml:"index_url" json:"index_url,omitempty"`
	// PyPI marks the variant plain "pip install torch==X" installs from
	// PyPI; the resolver prefers it among variants equally close to a
	// requested CUDA, after stable ones.
	PyPI bool `yaml:"pypi" json:"pypi,omitempty"`
	// Pins are the wheel's exact Requires-Dist pins of packages other
	// frameworks may pin too (nvidia-*-cuNN), as its METADATA lists them;
	// empty when they were not read.
	Pins []Pin `yaml:"pins" json:"pins,omitempty"`
	// Triton is the wheel's triton requirement as its METADATA writes it
	// (==3.2.0, ~=3.8.0); empty when it was not read.
	Triton string   `yaml:"triton" json:"triton,omitempty"`
	Notes  []string `yaml:"notes" json:"notes,omitempty"`
}

// TensorFlow is one tested GPU configuration of TensorFlow.
type TensorFlow struct {
	Version Version    `yaml:"version" json:"version"`
	Python  Constraint `yaml:"python" json:"python"`
	CUDA    Version    `yaml:"cuda" json:"cuda"`
	CuDNN   Version    `yaml:"cudnn" json:"cudnn"`
	// PipVersion is the release pip installs when it is not Version: a
	// post release that fixed the packaging (2.15.0.post1). Empty means
	// Version.
	PipVersion string `yaml:"pip_version" json:"pip_version,omitempty"`
	// Pins are the exact pins of the tensorflow[and-cuda] extra gpuimg
	// installs (of PipVersion when set), as setup.py's EXTRA_PACKAGES
	// lists them; empty when they were not read.
	Pins []Pin `yaml:"pins" json:"pins,omitempty"`
	// Unserved are pins of that extra no index serves, for some or every
	// Python: the resolver refuses those stacks and says why.
	Unserved []Unserved `yaml:"unserved" json:"unserved,omitempty"`
	Row      `yaml:",inline"`
}

// JAX is one JAX release and its CUDA wheel extras.
type JAX struct {
	Version  Version      `yaml:"version" json:"version"`
	Python   Constraint   `yaml:"python" json:"python"`
	Variants []JAXVariant `yaml:"variants" json:"variants"`
	Row      `yaml:",inline"`
}

// JAXVariant is one pip extra of a JAX release (jax[cuda12]).
type JAXVariant struct {
	Extra     string  `yaml:"extra" json:"extra"`
	CUDA      Version `yaml:"cuda" json:"cuda"`
	MinCUDA   Version `yaml:"min_cuda" json:"min_cuda"`
	MinCuDNN  Version `yaml:"min_cudnn" json:"min_cudnn"`
	MinDriver Version `yaml:"min_driver" json:"min_driver"`
	// FindLinks is a page of wheel links pip needs besides the index
	// (pip's --find-links): JAX 0.4.17 to 0.4.29's cuda*_pip extras pin
	// jaxlib==V+cudaNN.cudnnNN, which only JAX's page serves.
	FindLinks string `yaml:"find_links" json:"find_links,omitempty"`
	// CuDNNBelow, when set, is the cuDNN release the extra's wheels need
	// to stay below although the extra's own pin allows it (JAX 0.4.17 to
	// 0.4.25's jaxlib+cudaNN.cudnn89 pin nvidia-cudnn-cuNN>=8.9 with no
	// upper bound, pip takes cuDNN 9, and the jaxlib refuses it when the
	// GPU backend starts): the resolver adds nvidia-cudnn-cuNN<CuDNNBelow
	// to the install.
	CuDNNBelow Version `yaml:"cudnn_below" json:"cudnn_below,omitzero"`
	// Requires are the NVIDIA wheel ranges the extra installs with the
	// plugin (jax-cudaNN-plugin[with-cuda], as build/nvidia-requirements.txt
	// fills them at the release tag); empty when they were not read.
	Requires []WheelRange `yaml:"requires" json:"requires,omitempty"`
	Notes    []string     `yaml:"notes" json:"notes,omitempty"`
}

// CUDAPlatforms says on which platforms a framework's releases have CUDA
// wheels; on any other, pip installs a CPU-only build or nothing. Releases
// no row covers are not checked.
type CUDAPlatforms struct {
	// Framework is torch, tensorflow or jax.
	Framework string `yaml:"framework" json:"framework"`
	// Versions are the releases the row covers ("<2.5"; empty: all).
	Versions Constraint `yaml:"versions" json:"versions"`
	// Platforms are OS/ARCH pairs (linux/amd64).
	Platforms []string `yaml:"platforms" json:"platforms"`
	Row       `yaml:",inline"`
}

// GPU is a GPU model and its datasheet figures (dense peaks).
type GPU struct {
	Name               string   `yaml:"name" json:"name"`
	Aliases            []string `yaml:"aliases" json:"aliases,omitempty"`
	Arch               string   `yaml:"arch" json:"arch"`
	MemoryGB           float64  `yaml:"memory_gb" json:"memory_gb"`
	MemoryBandwidthGBs float64  `yaml:"memory_bandwidth_gbs" json:"memory_bandwidth_gbs"`
	FP32TFLOPS         float64  `yaml:"fp32_tflops" json:"fp32_tflops"`
	TF32TFLOPS         float64  `yaml:"tf32_tflops" json:"tf32_tflops,omitempty"`
	FP16TFLOPS         float64  `yaml:"fp16_tflops" json:"fp16_tflops,omitempty"`
	BF16TFLOPS         float64  `yaml:"bf16_tflops" json:"bf16_tflops,omitempty"`
	// Driver, when set, is the range of driver branches that know this
	// GPU where it differs from its architecture's (H100 PCIe from R520,
	// H100 SXM from R525).
	Driver DriverSupport `yaml:"driver" json:"driver,omitzero"`
	Row    `yaml:",inline"`
}

// File is the content of one matrix file. Every key is optional.
type File struct {
	Sources      []Source      `yaml:"sources"`
	CUDAFamilies []CUDAFamily  `yaml:"cuda_families"`
	CUDA         []CUDARelease `yaml:"cuda"`
	Archs        []Arch        `yaml:"archs"`
	CuDNN        []Library     `yaml:"cudnn"`
	NCCL         []Library     `yaml:"nccl"`
	OS           []OS          `yaml:"os"`
	BaseImages   []BaseImage   `yaml:"base_images"`
	Torch        []Torch       `yaml:"torch"`
	TensorFlow   []TensorFlow  `yaml:"tensorflow"`
	JAX          []JAX         `yaml:"jax"`
	// CUDAPlatforms: see the type; in data/platforms.yaml.
	CUDAPlatforms []CUDAPlatforms `yaml:"cuda_platforms"`
	GPUs          []GPU           `yaml:"gpus"`
	Targets       []Target        `yaml:"targets"`
	// Fabrics: see the type; in data/fabrics.yaml.
	Fabrics []Fabric `yaml:"fabrics"`
	// Advisories: see the type; in data/advisories.yaml.
	Advisories []Advisory  `yaml:"advisories"`
	References []Reference `yaml:"references"`
	Links      []Link      `yaml:"links"`
	// StandalonePythons: see the type; in data/pythons.yaml.
	StandalonePythons []StandalonePython `yaml:"standalone_pythons"`
	// CUDAToolkitWheels: see the type; in data/cudatoolkit.yaml.
	CUDAToolkitWheels []CUDAToolkitWheel `yaml:"cuda_toolkit_wheels"`
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping the line for errors.
func (v *Version) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a version, got %s", n.Line, kindName(n.Kind))
	}
	if n.Value == "" || n.Tag == "!!null" {
		*v = Version{}
		return nil
	}
	p, err := ParseVersion(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*v = p
	return nil
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping the line for errors.
func (c *Constraint) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a version constraint, got %s", n.Line, kindName(n.Kind))
	}
	if n.Value == "" || n.Tag == "!!null" {
		*c = Constraint{}
		return nil
	}
	p, err := ParseConstraint(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*c = p
	return nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	return "a scalar"
}

// ParseFile decodes one matrix file. name is used in errors and positions.
// Unknown keys and wrong types are errors naming the line.
func ParseFile(name string, data []byte) (*File, error) {
	f := &File{}
	root, err := decodeStrict(name, data, f)
	if err != nil {
		return nil, err
	}
	if root != nil {
		setPositions(f, root, name)
	}
	return f, nil
}

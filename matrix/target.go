package matrix

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrUnknownTarget is wrapped by the error of a target name that matches no
// targets: row; the error suggests the nearest names.
var ErrUnknownTarget = errors.New("unknown target")

// Target is a fleet images run on: a cloud provider's hosts
// (sagemaker/p5, gke/cos-default) or a team's own cluster. It says what
// the hosts run (driver, GPUs, CPU architectures) and what the provider
// accepts (manifest formats, compressions, size, registry, runtime
// contract). Every fact comes from Source; facts that could not be
// confirmed are listed in Unconfirmed by their key.
type Target struct {
	// Name is provider/fleet, or a single word for a provider with one
	// fleet (runpod).
	Name string `yaml:"name" json:"name"`
	// Driver is the host driver, a full version (550.127.05) as
	// ParseDriver reads it: a branch alone (535) is refused, as it is on
	// the command line.
	Driver Version `yaml:"driver" json:"driver"`
	// GPUs name rows of the GPU table.
	GPUs []string `yaml:"gpus" json:"gpus"`
	// Platforms are OCI platforms such as linux/amd64.
	Platforms []string `yaml:"platforms" json:"platforms"`
	// MediaTypes are the manifest formats accepted; empty means any.
	MediaTypes []ManifestFormat `yaml:"media_types" json:"media_types"`
	// Index says whether a multi-platform image index (or manifest list)
	// is accepted; false means a single manifest must be pushed.
	Index bool `yaml:"index" json:"index"`
	// Attestations says whether attestation manifests (BuildKit
	// provenance/SBOM inside an index) are accepted.
	Attestations bool `yaml:"attestations" json:"attestations"`
	// Compressions are the layer compressions accepted; empty means any.
	Compressions []Compression `yaml:"compressions" json:"compressions"`
	// MaxSize is the largest image accepted, zero if no limit is known;
	// SizeOf says whether the limit applies to the compressed layers (as
	// pushed) or the uncompressed filesystem.
	MaxSize Size   `yaml:"max_size" json:"max_size"`
	SizeOf  string `yaml:"size_of" json:"size_of,omitempty"`
	// Registry is where the provider pulls from: ecr, artifact-registry,
	// acr, acr-enterprise, any.
	Registry string `yaml:"registry" json:"registry"`
	// Runtime is how the platform starts the container, if it imposes
	// anything.
	Runtime *RuntimeContract `yaml:"runtime" json:"runtime"`
	// Fabric names the fabrics: row of the fleet's multi-node network
	// (efa, infiniband, tcpxo, gib); empty when no source read says which
	// fabric its hosts give containers, and validate --target says so.
	Fabric string `yaml:"fabric" json:"fabric,omitempty"`
	// ContainerToolkit is the NVIDIA Container Toolkit the fleet's hosts
	// run, where a source states it; nil when none read does. validate
	// --target judges it against the toolkit's advisories.
	ContainerToolkit *ContainerToolkit `yaml:"container_toolkit" json:"container_toolkit,omitempty"`
	// Unconfirmed lists the keys of facts above that no source confirmed
	// (driver, max_size, …); they are best guesses and say so.
	Unconfirmed []string `yaml:"unconfirmed" json:"unconfirmed,omitempty"`
	Row         `yaml:",inline"`
}

// Provider is the part of the name before the slash.
func (t Target) Provider() string {
	p, _, _ := strings.Cut(t.Name, "/")
	return p
}

// RuntimeContract is what a platform expects of an image to start it.
type RuntimeContract struct {
	// Args are the arguments the platform passes (SageMaker: serve,
	// train); the image needs an exec-form ENTRYPOINT that takes them.
	Args []string `yaml:"args" json:"args,omitempty"`
	// Port is the port the platform sends traffic and health checks to.
	Port int `yaml:"port" json:"port,omitempty"`
	// Health is the health route (/ping), or the environment variable
	// that names it (AIP_HEALTH_ROUTE).
	Health string `yaml:"health" json:"health,omitempty"`
	// User is root, non-root or empty (any).
	User string `yaml:"user" json:"user,omitempty"`
	// UID, when set, is the numeric user the platform requires the image
	// to run as (ModelArts: 1101); it implies user: non-root.
	UID int `yaml:"uid" json:"uid,omitempty"`
}

// ContainerToolkit is the NVIDIA Container Toolkit (nvidia-container-toolkit)
// version a fleet's hosts run, with where and when it was read: a fact of
// its own, from a source other than the row's where need be.
type ContainerToolkit struct {
	// Version is the toolkit release (1.19.1), without a package
	// revision (1.19.1-1).
	Version Version `yaml:"version" json:"version"`
	// Source is the id of the sources: entry the version was read from.
	Source string `yaml:"source" json:"source"`
	// Retrieved is the day the version was read there (2026-12-02).
	Retrieved string `yaml:"retrieved" json:"retrieved"`
}

// ManifestFormat is a family of manifest media types.
type ManifestFormat string

// Manifest formats.
const (
	// FormatDocker is Docker image manifest v2 schema 2 (and the Docker
	// manifest list for indexes).
	FormatDocker ManifestFormat = "docker"
	// FormatOCI is the OCI image manifest (and OCI image index).
	FormatOCI ManifestFormat = "oci"
)

// Size is a number of bytes, written in matrix files as 10GB, 9.5GB or
// 500MB (decimal units, as providers state their limits) or a plain number
// of bytes. JSON carries the number of bytes.
type Size int64

// ParseSize reads 10GB, 9.5 GB, 500MB, 1.5TB, 2GiB or a number of bytes.
func ParseSize(s string) (Size, error) {
	t := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	units := []struct {
		suffix string
		mult   float64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = rest, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit, such as 10GB or 500MB", s)
	}
	return Size(f * mult), nil
}

func (s Size) String() string {
	switch {
	case s == 0:
		return "none"
	case s >= 1e9:
		return strconv.FormatFloat(float64(s)/1e9, 'f', -1, 64) + " GB"
	case s >= 1e6:
		return strconv.FormatFloat(float64(s)/1e6, 'f', -1, 64) + " MB"
	}
	return strconv.FormatInt(int64(s), 10) + " B"
}

// UnmarshalYAML implements yaml.Unmarshaler, keeping the line for errors.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a size such as 10GB, got %s", n.Line, kindName(n.Kind))
	}
	if n.Value == "" || n.Tag == "!!null" {
		*s = 0
		return nil
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = v
	return nil
}

// targetKinds are the accepted values of the enumerated target fields.
var (
	targetFormats      = []ManifestFormat{FormatDocker, FormatOCI}
	targetCompressions = []Compression{CompressionGzip, CompressionZstd, CompressionEstargz, CompressionUncompressed}
	targetUsers        = []string{"", "root", "non-root"}
	targetSizeOf       = []string{"", "compressed", "uncompressed"}
	targetFactKeys     = []string{"driver", "gpus", "platforms", "media_types", "index", "attestations", "compressions", "max_size", "registry", "runtime", "fabric", "container_toolkit"}
)

// validateTarget returns what is wrong with one targets: row.
func (db *DB) validateTarget(t Target) []string {
	var bad []string
	if t.Name == "" || strings.ContainsAny(t.Name, " \t") || strings.Count(t.Name, "/") > 1 {
		bad = append(bad, fmt.Sprintf("target name %q: want provider/fleet (sagemaker/p5) or one word", t.Name))
	}
	if !t.Driver.IsZero() {
		if _, err := ParseDriver(t.Driver.String()); err != nil {
			bad = append(bad, fmt.Sprintf("target %s: %v", t.Name, err))
		}
	}
	for _, g := range t.GPUs {
		if _, err := db.LookupGPU(g); err != nil {
			bad = append(bad, fmt.Sprintf("target %s: GPU %q is not a row of the GPU table (gpuimg matrix list gpus)", t.Name, g))
		}
	}
	for _, p := range t.Platforms {
		if os, arch, ok := strings.Cut(p, "/"); !ok || os == "" || arch == "" {
			bad = append(bad, fmt.Sprintf("target %s: platform %q: want os/arch such as linux/amd64", t.Name, p))
		}
	}
	for _, m := range t.MediaTypes {
		if !slices.Contains(targetFormats, m) {
			bad = append(bad, fmt.Sprintf("target %s: media type %q: want docker or oci", t.Name, m))
		}
	}
	for _, c := range t.Compressions {
		if !slices.Contains(targetCompressions, c) {
			bad = append(bad, fmt.Sprintf("target %s: compression %q: want gzip, zstd, estargz or uncompressed", t.Name, c))
		}
	}
	if !slices.Contains(targetSizeOf, t.SizeOf) {
		bad = append(bad, fmt.Sprintf("target %s: size_of %q: want compressed or uncompressed", t.Name, t.SizeOf))
	}
	if t.MaxSize > 0 && t.SizeOf == "" {
		bad = append(bad, fmt.Sprintf("target %s: max_size needs size_of (compressed or uncompressed)", t.Name))
	}
	if t.Runtime != nil && (t.Runtime.UID < 0 || t.Runtime.UID > 0 && t.Runtime.User != "non-root") {
		bad = append(bad, fmt.Sprintf("target %s: runtime uid %d: want a positive UID with user: non-root", t.Name, t.Runtime.UID))
	}
	if t.Runtime != nil && !slices.Contains(targetUsers, t.Runtime.User) {
		bad = append(bad, fmt.Sprintf("target %s: runtime user %q: want root or non-root", t.Name, t.Runtime.User))
	}
	if t.Fabric != "" {
		if _, err := db.Fabric(t.Fabric); err != nil {
			bad = append(bad, fmt.Sprintf("target %s: fabric %q is not a row of fabrics: (gpuimg matrix list fabrics)", t.Name, t.Fabric))
		}
	}
	if ct := t.ContainerToolkit; ct != nil {
		if ct.Version.IsZero() {
			bad = append(bad, fmt.Sprintf("target %s: container_toolkit needs version (1.19.1)", t.Name))
		}
		if _, ok := db.Sources[ct.Source]; !ok {
			bad = append(bad, fmt.Sprintf("target %s: container_toolkit names source %q, which no file defines under sources:", t.Name, ct.Source))
		}
		if _, err := time.Parse(time.DateOnly, ct.Retrieved); err != nil {
			bad = append(bad, fmt.Sprintf("target %s: container_toolkit retrieved %q: want the day it was read, as 2026-12-02", t.Name, ct.Retrieved))
		}
	}
	for _, k := range t.Unconfirmed {
		if !slices.Contains(targetFactKeys, k) {
			bad = append(bad, fmt.Sprintf("target %s: unconfirmed %q is not a target key (%s)", t.Name, k, strings.Join(targetFactKeys, ", ")))
		}
	}
	return bad
}

// Target returns the targets: row with this name (case-insensitive). An
// unknown name is an error wrapping ErrUnknownTarget that suggests the
// nearest names.
func (db *DB) Target(name string) (Target, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	for _, t := range db.Targets {
		if strings.ToLower(t.Name) == want {
			return t, nil
		}
	}
	type scored struct {
		name string
		d    int
	}
	var near []scored
	for _, t := range db.Targets {
		d := editDistance(want, strings.ToLower(t.Name))
		if p := strings.ToLower(t.Provider()); p == want || strings.HasPrefix(strings.ToLower(t.Name), want) {
			d = 0
		}
		near = append(near, scored{t.Name, d})
	}
	slices.SortStableFunc(near, func(a, b scored) int { return a.d - b.d })
	var names []string
	for _, n := range near {
		if len(names) == 3 || (len(names) > 0 && n.d > near[0].d+2) {
			break
		}
		names = append(names, n.name)
	}
	if len(names) == 0 {
		return Target{}, fmt.Errorf("%w %q: the matrix has no targets; add one under targets: in a --matrix-file", ErrUnknownTarget, name)
	}
	return Target{}, fmt.Errorf("%w %q: did you mean %s? See gpuimg matrix list targets", ErrUnknownTarget, name, strings.Join(names, ", "))
}

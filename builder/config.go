package builder

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/client"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// A build's settings come from four places; the first that gives a
// setting wins: the command line (Flags), the environment (Env: only
// BUILDKIT_HOST and SOURCE_DATE_EPOCH), gpuimg.yaml (Config), defaults.
// Merge applies that one rule to every setting.

// Source is where a setting's value came from.
type Source string

// The sources, in order of precedence.
const (
	FromFlag    Source = "the command line"
	FromEnv     Source = "the environment"
	FromFile    Source = "gpuimg.yaml"
	FromDefault Source = "the default"
)

// Env is the part of the environment a build reads, as the caller took
// it (the library never reads the environment itself).
type Env struct {
	// BuildkitHost is $BUILDKIT_HOST: the daemon when no flag names one.
	BuildkitHost string
	// SourceDateEpoch is $SOURCE_DATE_EPOCH: the build's timestamps when
	// no flag gives them.
	SourceDateEpoch string
	// StateHome ($XDG_STATE_HOME), Home (the user's home directory) and
	// TempDir place the local buildkitd's state (StateDir).
	StateHome, Home, TempDir string
}

// Flags are a build's settings as given on the command line (or by a
// program). Given says which were set explicitly, by gpuimg.yaml key
// ("cuda", "matrix_files", "pip", "tag", "platforms", "registry_mirrors",
// "push", …) or, for settings gpuimg.yaml lacks, "builder" and
// "source_date_epoch"; the others hold their default and lose to the
// environment and gpuimg.yaml. A nil Given counts every non-zero value as
// given.
type Flags struct {
	// Stack are the resolver's inputs as written, by matrix.Field (each
	// field's Given key is its Key), not yet parsed.
	Stack matrix.Spec
	// MatrixFiles are extra matrix files (Given key "matrix_files").
	MatrixFiles []string
	// Extras' Pip, Requirements, Apt, Copy, Workdir, Fabric and
	// FabricSource; Env and
	// Entrypoint come as written, below.
	Extras Extras
	// EnvPairs are KEY=VALUE; each wins over gpuimg.yaml's env for its key.
	EnvPairs []string
	// Entrypoint is a JSON array ('["python","-m","app"]') or words; it
	// wins over gpuimg.yaml's whenever it is not empty.
	Entrypoint string
	// Mirrors are REGISTRY=MIRROR; given, they replace gpuimg.yaml's.
	Mirrors []string

	Tags               []string
	Push               bool
	Platforms          images.Platforms
	PipIndexURL        string
	PipExtraIndexURLs  []string
	PipTrustedHosts    []string
	PipFindLinks       []string
	PythonMirror       string
	CacheFrom, CacheTo []string
	Builder            string
	SourceDateEpoch    string
	// Compression is the layers' compression: gzip, zstd or estargz
	// (matrix.WrittenCompressions).
	Compression matrix.Compression
	// LargeWheel is the installed size from which a distribution gets a
	// layer of its own, as matrix.ParseSize reads it ("50MB").
	LargeWheel string
	// NoTorchCompile leaves out torch.compile's C compiler and Python
	// headers (Definition.NoTorchCompile); its Given key is
	// "torch_compile" (the flag --torch-compile=false).
	NoTorchCompile bool
	// Provenance is Request.Provenance as given: "" none, "auto" or a
	// builder id (Given key "provenance").
	Provenance string

	// Settings only flags give.
	ContextDir       string
	Outputs, Secrets []string
	NoCache          bool
	// NoChecks leaves out the build's proof (Request.NoChecks).
	NoChecks     bool
	ProgressMode string

	Given func(key string) bool
}

// Settings are a build's settings after Merge.
type Settings struct {
	// Stack is what to resolve, as written (Stack.Constraints parses it);
	// the caller resolves it into Request.Stack with MatrixFiles' matrix.
	Stack       matrix.Spec
	MatrixFiles []string
	// Request is the build without its stack, Progress writer, Source and
	// Revision (GitInfo).
	Request Request
	// Builder is the BuildKit daemon's address; "" starts a local one.
	Builder string
	// Sources names where each merged setting came from, by the keys of
	// Flags.Given (and "env", "entrypoint").
	Sources map[string]Source
}

// Merge merges the command line, the environment and gpuimg.yaml (nil:
// none) into a build's settings: for each setting, the first source that
// gives it wins (see Source). Errors name the setting, the source of the
// bad value and how to fix it; a conflict between settings names every
// source involved.
func Merge(f Flags, env Env, file *Config) (*Settings, error) {
	if file == nil {
		file = &Config{}
	}
	m := &merger{given: f.Given, src: map[string]Source{}}
	s := &Settings{Sources: m.src}
	for _, fl := range matrix.SpecFields() {
		s.Stack[fl] = m.str(fl.Key(), f.Stack[fl], file.Stack[fl])
	}
	s.MatrixFiles = m.list("matrix_files", f.MatrixFiles, file.MatrixFile)
	ex := Extras{
		Pip: m.list("pip", f.Extras.Pip, file.Pip), Requirements: m.str("requirements", f.Extras.Requirements, file.Requirements),
		Apt: m.list("apt", f.Extras.Apt, file.Apt), Copy: m.list("copy", f.Extras.Copy, file.Copy),
		Dnf:     m.list("dnf", f.Extras.Dnf, file.Dnf),
		Workdir: m.str("workdir", f.Extras.Workdir, file.Workdir),
		Fabric:  m.str("fabric", f.Extras.Fabric, file.Fabric), FabricSource: m.str("fabric_source", f.Extras.FabricSource, file.FabricSource),
	}
	var err error
	if ex.Env, err = mergeEnv(f.EnvPairs, file.Env, m); err != nil {
		return nil, err
	}
	if ex.Entrypoint, err = entrypoint(f.Entrypoint, file.Entrypoint, m); err != nil {
		return nil, err
	}
	if err := ex.Validate(); err != nil {
		return nil, err
	}
	r := Request{
		Extras: ex, ContextDir: f.ContextDir, Tags: m.list("tag", f.Tags, file.Tag),
		Platforms: pick(m, "platforms", f.Platforms, file.Platforms),
		NoCache:   f.NoCache, NoChecks: f.NoChecks, ProgressMode: f.ProgressMode,
		PipIndexURL:       m.str("pip_index_url", f.PipIndexURL, file.PipIndexURL),
		PipExtraIndexURLs: m.list("pip_extra_index_url", f.PipExtraIndexURLs, file.PipExtraIndexURLs),
		PipTrustedHosts:   m.list("pip_trusted_host", f.PipTrustedHosts, file.PipTrustedHosts),
		PipFindLinks:      m.list("pip_find_links", f.PipFindLinks, file.PipFindLinks),
		PythonMirror:      m.str("python_mirror", f.PythonMirror, file.PythonMirror),
		Compression:       matrix.Compression(m.str("compression", string(f.Compression), string(file.Compression))),
		Provenance:        m.str("provenance", f.Provenance, file.Provenance),
	}
	// BuildKit's options, parsed here once.
	if r.Outputs, err = ParseOutputs(f.Outputs); err != nil {
		return nil, fmt.Errorf("--output: %w", err)
	}
	if r.Secrets, err = ParseSecrets(f.Secrets); err != nil {
		return nil, fmt.Errorf("--secret: %w", err)
	}
	if r.CacheFrom, err = ParseCacheImports(m.list("cache_from", f.CacheFrom, file.CacheFrom)); err != nil {
		return nil, fmt.Errorf("%w (set by %s)", err, m.src["cache_from"])
	}
	if r.CacheTo, err = ParseCacheExports(m.list("cache_to", f.CacheTo, file.CacheTo)); err != nil {
		return nil, fmt.Errorf("%w (set by %s)", err, m.src["cache_to"])
	}
	if err := CheckPythonMirror(r.PythonMirror); err != nil {
		return nil, fmt.Errorf("%w (set by %s)", err, m.src["python_mirror"])
	}
	if err := CheckProvenance(r.Provenance); err != nil {
		return nil, fmt.Errorf("%w (set by %s)", err, m.src["provenance"])
	}
	if err := CheckCompression(r.Compression); err != nil {
		return nil, fmt.Errorf("%w (set by %s)", err, m.src["compression"])
	}
	if lw := m.str("large_wheel", f.LargeWheel, file.LargeWheel); lw != "" {
		size, err := matrix.ParseSize(lw)
		if r.LargeWheel = int64(size); err != nil || size <= 0 {
			return nil, fmt.Errorf("large wheel size %q (from %s): give a size such as 50MB", lw, m.src["large_wheel"])
		}
	}
	// torch_compile is on unless the command line or gpuimg.yaml turns it off.
	switch m.src["torch_compile"] = m.source("torch_compile", f.NoTorchCompile, file.TorchCompile != nil); m.src["torch_compile"] {
	case FromFlag:
		r.NoTorchCompile = f.NoTorchCompile
	case FromFile:
		r.NoTorchCompile = !*file.TorchCompile
	}
	// An unset flag holds false, its default.
	m.src["push"] = m.source("push", f.Push, file.Push)
	r.Push = f.Push || m.src["push"] == FromFile
	if r.Mirrors, err = mirrors(f.Mirrors, file, m); err != nil {
		return nil, err
	}
	s.Builder = m.withEnv("builder", f.Builder, env.BuildkitHost)
	sde := m.withEnv("source_date_epoch", f.SourceDateEpoch, env.SourceDateEpoch)
	if sde != "" {
		n, err := strconv.ParseInt(sde, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("source date epoch %q (from %s) is not a Unix time: give seconds since 1970, e.g. $(git log -1 --format=%%ct)", sde, m.src["source_date_epoch"])
		}
		r.SourceDateEpoch = &n
	}
	switch r.ProgressMode {
	case "", "auto", "plain", "tty", "rawjson", "quiet":
	default:
		return nil, fmt.Errorf("progress mode %q: use auto, plain, tty, rawjson or quiet", r.ProgressMode)
	}
	if r.Push && len(r.Tags) == 0 {
		return nil, fmt.Errorf("push (set by %s) needs a tag, and neither the command line nor gpuimg.yaml gives one: add -t REGISTRY/REPO:TAG, or tag: in gpuimg.yaml", m.src["push"])
	}
	s.Request = r
	return s, nil
}

// merger applies the precedence rule and records each setting's source.
type merger struct {
	given func(string) bool
	src   map[string]Source
}

// flag says whether the command line gives key (nonZero: its value is not
// the zero value, for a nil Given).
func (m *merger) flag(key string, nonZero bool) bool {
	if m.given == nil {
		return nonZero
	}
	return m.given(key)
}

func (m *merger) source(key string, flag, file bool) Source {
	switch {
	case m.flag(key, flag):
		return FromFlag
	case file:
		return FromFile
	}
	return FromDefault
}

func (m *merger) str(key, flag, file string) string {
	m.src[key] = m.source(key, flag != "", file != "")
	if m.src[key] == FromFile {
		return file
	}
	return flag
}

func (m *merger) list(key string, flag, file []string) []string {
	return pick(m, key, flag, file)
}

// pick is merger.list for a list of any type.
func pick[T any](m *merger, key string, flag, file []T) []T {
	m.src[key] = m.source(key, len(flag) > 0, len(file) > 0)
	if m.src[key] == FromFile {
		return file
	}
	return flag
}

// withEnv is a setting gpuimg.yaml lacks: the flag when given or not
// empty, else the environment's value.
func (m *merger) withEnv(key, flag, env string) string {
	switch {
	case m.flag(key, flag != "") || flag != "":
		m.src[key] = FromFlag
		return flag
	case env != "":
		m.src[key] = FromEnv
		return env
	}
	m.src[key] = FromDefault
	return ""
}

// mergeEnv is gpuimg.yaml's env with the command line's pairs over it, key
// by key.
func mergeEnv(pairs []string, file map[string]string, m *merger) (map[string]string, error) {
	env := maps.Clone(file)
	if env == nil {
		env = map[string]string{}
	}
	flagEnv, err := ParseEnv(pairs)
	if err != nil {
		return nil, err
	}
	maps.Copy(env, flagEnv)
	m.src["env"] = m.source("env", len(pairs) > 0, len(file) > 0)
	return env, nil
}

// entrypoint is the command line's (a JSON array or words) when given,
// else gpuimg.yaml's.
func entrypoint(flag string, file []string, m *merger) ([]string, error) {
	switch {
	case strings.HasPrefix(strings.TrimSpace(flag), "["):
		m.src["entrypoint"] = FromFlag
		var ep []string
		if err := json.Unmarshal([]byte(flag), &ep); err != nil {
			return nil, fmt.Errorf("entrypoint %s: %w: write it as a JSON array: '[\"python\",\"-m\",\"app\"]'", flag, err)
		}
		return ep, nil
	case flag != "":
		m.src["entrypoint"] = FromFlag
		return strings.Fields(flag), nil
	}
	m.src["entrypoint"] = m.source("entrypoint", false, len(file) > 0)
	return file, nil
}

// mirrors are the command line's when given, else gpuimg.yaml's.
func mirrors(flag []string, file *Config, m *merger) (images.Mirrors, error) {
	out, err := images.ParseMirrors(flag)
	if err != nil {
		return nil, err
	}
	m.src["registry_mirrors"] = m.source("registry_mirrors", len(flag) > 0, len(file.RegistryMirrors) > 0)
	if m.src["registry_mirrors"] != FromFile {
		return out, nil
	}
	for reg, mirror := range file.RegistryMirrors {
		more, err := images.ParseMirrors([]string{reg + "=" + mirror})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file.name(), err)
		}
		maps.Copy(out, more)
	}
	return out, nil
}

// StateDir is where the local buildkitd keeps its state: dir when given,
// else $XDG_STATE_HOME/gpuimg, else ~/.local/state/gpuimg.
func StateDir(dir string, env Env) string {
	switch {
	case dir != "":
		return dir
	case env.StateHome != "":
		return filepath.Join(env.StateHome, "gpuimg")
	case env.Home != "":
		return filepath.Join(env.Home, ".local", "state", "gpuimg")
	}
	return filepath.Join(env.TempDir, "gpuimg-state")
}

// GitInfo reads the origin URL and HEAD commit of dir's git checkout, for
// the OCI source and revision labels; empty outside a checkout.
func GitInfo(ctx context.Context, dir string) (source, revision string) {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "config", "--get", "remote.origin.url").Output()
	if err == nil {
		source = strings.TrimSpace(string(out))
	}
	out, err = exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err == nil {
		revision = strings.TrimSpace(string(out))
	}
	return source, revision
}

// A build asks BuildKit's image exporters for one of
// matrix.WrittenCompressions: zstd (the default: decompresses several
// times faster than gzip and is smaller; containerd ≥ 1.5, Docker ≥ 23,
// podman, CRI-O), gzip (every runtime pulls it, Debian 12's Docker 20.10
// included) or estargz (gzip that stargz-snapshotter can pull lazily, and
// that every runtime can still pull whole).

// DefaultCompression is the layer compression of pushed images and OCI
// outputs when a build names none (docs/startup.md measures why). A
// type=docker output, which is for docker load, gets gzip, and so does a
// build for a target that does not take zstd (CompressionFor).
const DefaultCompression = matrix.CompressionZstd

// CheckCompression accepts "" (the default, DefaultCompression) and
// matrix.WrittenCompressions.
func CheckCompression(c matrix.Compression) error {
	if c == "" || c.Written() {
		return nil
	}
	return fmt.Errorf("compression %q: use zstd, gzip or estargz", c)
}

// ForTarget sets the compression of a build for target t when no
// setting named one (Sources["compression"] is FromDefault):
// CompressionFor(t), gzip for a target that takes no zstd layers.
func (s *Settings) ForTarget(t *matrix.Target) {
	if s.Sources["compression"] == FromDefault {
		s.Request.Compression = CompressionFor(t)
	}
}

// CompressionFor is the compression a build for target t (nil: none)
// uses when it names none: "" (DefaultCompression), or gzip when t does
// not take zstd layers: its compressions leave zstd out, or it takes
// Docker manifests only, whose schema has no zstd layer type.
func CompressionFor(t *matrix.Target) matrix.Compression {
	if t == nil {
		return ""
	}
	if len(t.Compressions) > 0 && !slices.Contains(t.Compressions, matrix.CompressionZstd) {
		return matrix.CompressionGzip
	}
	if len(t.MediaTypes) > 0 && !slices.Contains(t.MediaTypes, matrix.FormatOCI) {
		return matrix.CompressionGzip
	}
	return ""
}

// ImageCompression is the layer compression of an image pushed by a build
// that asks for c: c, or DefaultCompression for "".
func ImageCompression(c matrix.Compression) matrix.Compression {
	return compressionOf(c, client.ExporterImage)
}

// compressionOf is the compression an exporter of type typ writes when
// the build asks for c: c, or for "" DefaultCompression, but "" (BuildKit's
// own default, gzip) for the Docker exporter.
func compressionOf(c matrix.Compression, typ string) matrix.Compression {
	switch {
	case c != "":
		return c
	case typ == client.ExporterDocker:
		return ""
	}
	return DefaultCompression
}

// exporterCompression sets an image, OCI or Docker exporter's compression
// attributes for c ("" is the default: DefaultCompression, but gzip for
// the Docker exporter, whose archives are for docker load): compression
// and force-compression=true (so layers BuildKit already holds in another
// compression, the base image's above all, are recompressed too), and
// oci-mediatypes=true for zstd and estargz, which Docker's media types
// cannot express. The Docker exporter with no compression named keeps
// BuildKit's defaults (gzip, Docker media types).
func exporterCompression(attrs map[string]string, c matrix.Compression, typ string) {
	if c = compressionOf(c, typ); c == "" {
		return
	}
	attrs["compression"] = string(c)
	attrs["force-compression"] = "true"
	if c != matrix.CompressionGzip {
		attrs["oci-mediatypes"] = "true"
	}
}

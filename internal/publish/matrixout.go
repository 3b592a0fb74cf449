package publish

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/builder"
)

// GitHubMaxJobs is the most jobs a GitHub Actions matrix may generate in
// one workflow run ("A matrix will generate a maximum of 256 jobs per
// workflow run", docs.github.com, workflow syntax: jobs.<job_id>.strategy.matrix).
const GitHubMaxJobs = 256

// ErrTooManyJobs is wrapped by GitHubMatrix when a plan has more variants
// than GitHubMaxJobs.
var ErrTooManyJobs = errors.New("more variants than a GitHub Actions matrix allows")

// GitHubMatrix is a plan as a GitHub Actions strategy.matrix, for
// fromJSON: {"include": [...]}, one entry per variant with its name, tag,
// inputs and template fields (cuda, cuda_short, python, os, flavor and the
// frameworks, all strings). More than GitHubMaxJobs variants is an error
// wrapping ErrTooManyJobs.
func GitHubMatrix(p *Plan) (map[string][]map[string]string, error) {
	if n := len(p.Variants); n > GitHubMaxJobs {
		return nil, fmt.Errorf("%w: %d variants, GitHub runs at most %d jobs per matrix", ErrTooManyJobs, n, GitHubMaxJobs)
	}
	include := make([]map[string]string, 0, len(p.Variants))
	for _, v := range p.Variants {
		e := Fields(v.Stack, v.Axes)
		e["name"], e["tag"], e["inputs"] = v.Name, v.Tag, v.Inputs
		include = append(include, e)
	}
	return map[string][]map[string]string{"include": include}, nil
}

// BakeFile is a Docker Bake file in its JSON form (docker/buildx bake:
// File, Group, Target), with the fields gpuimg sets.
type BakeFile struct {
	Group  map[string]BakeGroup   `json:"group"`
	Target map[string]*BakeTarget `json:"target"`
}

// BakeGroup is a group of targets.
type BakeGroup struct {
	Targets []string `json:"targets"`
}

// BakeTarget is one variant's build. Strings are escaped for bake's HCL
// interpolation ("${" as "$${", "%{" as "%%{"), as buildx itself writes
// them.
type BakeTarget struct {
	Context          string            `json:"context"`
	Contexts         map[string]string `json:"contexts,omitempty"`
	Dockerfile       string            `json:"dockerfile,omitempty"`
	DockerfileInline string            `json:"dockerfile-inline,omitempty"`
	Tags             []string          `json:"tags"`
	Platforms        []string          `json:"platforms,omitempty"`
	Labels           map[string]string `json:"labels"`
	Args             map[string]string `json:"args,omitempty"`
	CacheFrom        []string          `json:"cache-from"`
	CacheTo          []string          `json:"cache-to"`
}

var bakeNameRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// BakeTargetName is the bake target of a variant: its name with every
// character bake does not allow in a target name ([a-zA-Z0-9_-]) as "_".
func BakeTargetName(variant string) string { return bakeNameRE.ReplaceAllString(variant, "_") }

// Bake is a plan as a Docker Bake file: group "default" with one target
// per variant, in the plan's order, each with the Dockerfile gpuimg
// generates (FROM the pinned base when opts has it), the context directory
// ".", the variant's tag, the platforms, the labels a gpuimg build sets
// (the stack label, the version, the base when pinned) plus InputsLabel,
// SOURCE_DATE_EPOCH when the base is pinned, and a registry cache per
// variant in the repository (REPO:buildcache-TARGET).
//
// The context must hold what gpuimg adds to a build context (the
// gpuimg/ directory with verify.py); copy sources come from the named
// context "user", also ".". BakeContexts writes those contexts.
func Bake(p *Plan, f *File, opts ExpandOptions) (*BakeFile, error) {
	return bake(p, f, opts, nil)
}

// BakeContexts is Bake with each target's build context written: into
// dir/TARGET, the Dockerfile (ending in the target's labels as LABEL
// lines) and every file it mounts (builder.StandaloneContext; the
// requirements file read from srcDir, the publish file's context). Each
// target names its directory as its context and its Dockerfile there, in
// place of dockerfile-inline, and copy sources come from srcDir. Paths
// are relative to dir: bake runs in dir (docker buildx bake -f
// docker-bake.json there).
func BakeContexts(p *Plan, f *File, opts ExpandOptions, dir, srcDir string) (*BakeFile, error) {
	user, err := relDir(dir, srcDir)
	if err != nil {
		return nil, err
	}
	return bake(p, f, opts, func(name string, t *BakeTarget, df string, labels map[string]string) error {
		req := builder.Request{ContextDir: srcDir, Extras: f.Build}
		files, err := builder.StandaloneContext(req, &builder.Plan{Dockerfile: df, Labels: labels})
		if err != nil {
			return fmt.Errorf("bake target %s: %w", name, err)
		}
		if err := builder.WriteContext(filepath.Join(dir, name), files); err != nil {
			return fmt.Errorf("bake target %s: %w", name, err)
		}
		t.Context, t.Dockerfile, t.DockerfileInline = name, "Dockerfile", ""
		if t.Contexts != nil {
			t.Contexts[builder.UserContext] = user
		}
		return nil
	})
}

// relDir is dir's path to target, "." for the same directory.
func relDir(dir, target string) (string, error) {
	from, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	to, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	return filepath.Rel(from, to)
}

// bakeWriter writes target name's build context (its unescaped
// Dockerfile and labels) and points t at it; nil writes none.
type bakeWriter func(name string, t *BakeTarget, df string, labels map[string]string) error

func bake(p *Plan, f *File, opts ExpandOptions, write bakeWriter) (*BakeFile, error) {
	out := &BakeFile{Group: map[string]BakeGroup{"default": {Targets: []string{}}}, Target: map[string]*BakeTarget{}}
	for _, v := range p.Variants {
		name := BakeTargetName(v.Name)
		if _, dup := out.Target[name]; dup {
			return nil, fmt.Errorf("bake target %q names two variants; make the tag template tell them apart with more than punctuation", name)
		}
		t, df, labels, err := bakeTarget(p, f, opts, v, name)
		if err != nil {
			return nil, err
		}
		if write != nil {
			if err := write(name, t, df, labels); err != nil {
				return nil, err
			}
		}
		out.Target[name] = t
		g := out.Group["default"]
		g.Targets = append(g.Targets, name)
		out.Group["default"] = g
	}
	return out, nil
}

// bakeTarget is variant v's bake target (named name), with its Dockerfile
// and labels as they are before escaping.
func bakeTarget(p *Plan, f *File, opts ExpandOptions, v Variant, name string) (*BakeTarget, string, map[string]string, error) {
	df, err := Dockerfile(v.Stack, f.Build, opts)
	if err != nil {
		return nil, "", nil, fmt.Errorf("bake target %s: %w", name, err)
	}
	b, pinned := opts.Bases[v.Stack.BaseImage]
	epoch := builder.Epoch(b, nil)
	labels, err := builder.Labels(v.Stack, b, epoch)
	if err != nil {
		return nil, "", nil, err
	}
	labels[InputsLabel] = v.Inputs
	var args map[string]string
	if pinned {
		args = map[string]string{"SOURCE_DATE_EPOCH": strconv.FormatInt(epoch, 10)}
	}
	cache := "type=registry,ref=" + p.Repository + ":buildcache-" + name
	t := &BakeTarget{
		Context:          ".",
		DockerfileInline: bakeEscape(df),
		Tags:             []string{v.Tag},
		Platforms:        f.Platforms.Strings(),
		Labels:           escapeAll(labels),
		Args:             escapeAll(args),
		CacheFrom:        []string{cache},
		CacheTo:          []string{cache + ",mode=max"},
	}
	if len(f.Build.Copy) > 0 {
		t.Contexts = map[string]string{builder.UserContext: "."}
	}
	return t, df, labels, nil
}

// bakeEscape keeps bake from interpolating s: bake reads a JSON file's
// strings as HCL templates.
func bakeEscape(s string) string {
	return strings.NewReplacer("${", "$${", "%{", "%%{").Replace(s)
}

func escapeAll(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = bakeEscape(v)
	}
	return out
}

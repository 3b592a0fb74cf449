package builder

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/cli/cli/config"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/cmd/buildctl/build"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/session/auth/authprovider"
	"github.com/moby/buildkit/session/secrets/secretsprovider"
	"github.com/moby/buildkit/util/progress/progressui"
	"github.com/tonistiigi/fsutil"
	"golang.org/x/sync/errgroup"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// Request is one build. It is a plain struct, like BuildKit's SolveOpt.
type Request struct {
	Stack  matrix.Stack
	Extras Extras
	// ContextDir is the directory --copy sources and the requirements file
	// are relative to. Default: the current directory.
	ContextDir string
	// Platforms to build ("linux/amd64"); several give a multi-platform
	// index. Default: the daemon's platform.
	Platforms []string
	// Tags are image names; with Push they are pushed to their registries.
	Tags []string
	Push bool
	// Outputs are extra outputs in BuildKit's syntax (type=oci,dest=F …).
	Outputs []string
	// CacheFrom and CacheTo are cache imports/exports in BuildKit's syntax.
	CacheFrom, CacheTo []string
	// Secrets are BuildKit secrets: id=ID,src=FILE or id=ID,env=VAR.
	Secrets []string
	// Mirrors are registry mirrors, used to pin the base image; the daemon
	// must use the same ones (a local daemon started by gpuimg does).
	Mirrors images.Mirrors
	// InsecureRegistries are pushed to over plain HTTP (loopback always is).
	InsecureRegistries []string
	// Registry is how gpuimg itself reaches registries to pin the base
	// image (credentials, CA file, insecure registries, retries).
	Registry []images.Option
	// Pip index settings; when any is set, every pip step (frameworks
	// included) uses them through a generated pip.conf secret.
	PipIndexURL       string
	PipExtraIndexURLs []string
	PipTrustedHosts   []string
	// SourceDateEpoch fixes timestamps; nil means the base image's
	// creation time, so the same inputs give the same image.
	SourceDateEpoch *int64
	// Source, Revision fill org.opencontainers.image.source/revision.
	Source, Revision string
	// NoCache ignores BuildKit's cache for every step. Index settings are
	// not part of the cache key, so use it after an index changed what it
	// serves for a pinned version.
	NoCache bool
	// Progress receives BuildKit's progress display; nil discards it.
	Progress     io.Writer
	ProgressMode string // auto, plain, tty, rawjson, quiet (default auto)
}

// Plan is a build ready to run: the pinned base, the generated Dockerfile
// and the labels.
type Plan struct {
	Base            images.Base       `json:"base"`
	Dockerfile      string            `json:"dockerfile"`
	Labels          map[string]string `json:"labels"`
	SourceDateEpoch int64             `json:"source_date_epoch"`
}

// Result is what a build produced.
type Result struct {
	// Digest is the image (or index) digest, when an image was exported.
	Digest string       `json:"digest,omitempty"`
	Tags   []string     `json:"tags,omitempty"`
	Pushed bool         `json:"pushed"`
	Base   images.Base  `json:"base"`
	Stack  matrix.Stack `json:"stack"`
	// Duration is the wall time of the solve.
	Duration time.Duration `json:"duration_ns"`
	// CachedSteps of TotalSteps Dockerfile steps were answered from
	// BuildKit's cache.
	CachedSteps int `json:"cached_steps"`
	TotalSteps  int `json:"total_steps"`
}

func (r *Request) pipMirror() bool {
	return r.PipIndexURL != "" || len(r.PipExtraIndexURLs) > 0 || len(r.PipTrustedHosts) > 0
}

func (r *Request) pipConf() []byte {
	var b strings.Builder
	b.WriteString("[global]\n")
	if r.PipIndexURL != "" {
		fmt.Fprintf(&b, "index-url = %s\n", r.PipIndexURL)
	}
	if len(r.PipExtraIndexURLs) > 0 {
		fmt.Fprintf(&b, "extra-index-url = %s\n", strings.Join(r.PipExtraIndexURLs, "\n    "))
	}
	if len(r.PipTrustedHosts) > 0 {
		fmt.Fprintf(&b, "trusted-host = %s\n", strings.Join(r.PipTrustedHosts, "\n    "))
	}
	return []byte(b.String())
}

func secretIDs(specs []string) ([]string, error) {
	var ids []string
	for _, s := range specs {
		id := ""
		for f := range strings.SplitSeq(s, ",") {
			k, v, _ := strings.Cut(f, "=")
			if k == "id" {
				id = v
			}
		}
		if id == "" {
			return nil, fmt.Errorf("secret %q: want id=ID,src=FILE or id=ID,env=VAR", s)
		}
		if id == SecretPipMirror {
			return nil, fmt.Errorf("secret id %s is reserved for gpuimg's pip mirror settings", id)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func parsePlatform(p string) (*v1.Platform, error) {
	pl, err := v1.ParsePlatform(p)
	if err != nil {
		return nil, fmt.Errorf("platform %q: %w", p, err)
	}
	return pl, nil
}

// Prepare pins the base image and renders the build without running it
// (this is what --dockerfile-only prints).
func Prepare(ctx context.Context, req Request) (*Plan, error) {
	ids, err := secretIDs(req.Secrets)
	if err != nil {
		return nil, err
	}
	var platform *v1.Platform
	if len(req.Platforms) > 0 {
		if platform, err = parsePlatform(req.Platforms[0]); err != nil {
			return nil, err
		}
	}
	base, err := images.PinBase(ctx, req.Stack.BaseImage, req.Mirrors, append(slices.Clip(req.Registry), images.WithPlatform(platform))...)
	if err != nil {
		return nil, err
	}
	hasReq := req.Extras.Requirements != ""
	df, err := Dockerfile(Definition{
		Stack: req.Stack, Base: base.From, Extras: req.Extras,
		PipMirror: req.pipMirror(), Secrets: ids, HasRequirements: hasReq,
	})
	if err != nil {
		return nil, err
	}
	epoch := Epoch(base, req.SourceDateEpoch)
	labels, err := Labels(req.Stack, base, epoch)
	if err != nil {
		return nil, err
	}
	if req.Source != "" {
		labels["org.opencontainers.image.source"] = req.Source
	}
	if req.Revision != "" {
		labels["org.opencontainers.image.revision"] = req.Revision
	}
	return &Plan{Base: base, Dockerfile: df, Labels: labels, SourceDateEpoch: epoch}, nil
}

// Epoch is a build's SOURCE_DATE_EPOCH: explicit when set, else the base
// image's creation time; never negative.
func Epoch(base images.Base, explicit *int64) int64 {
	epoch := base.Created.Unix()
	if explicit != nil {
		epoch = *explicit
	}
	return max(epoch, 0)
}

// Labels are the labels gpuimg puts on an image of stack s: its version
// (s.Tag()) and the stack label, and, when the base is pinned
// (base.Digest set), the base's name and digest and the created time at
// epoch.
func Labels(s matrix.Stack, base images.Base, epoch int64) (map[string]string, error) {
	stackJSON, err := s.LabelValue()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.version": s.Tag(),
		matrix.StackLabel:                  stackJSON,
	}
	if base.Digest != "" {
		labels["org.opencontainers.image.created"] = time.Unix(epoch, 0).UTC().Format(time.RFC3339)
		labels["org.opencontainers.image.base.name"] = base.Name
		labels["org.opencontainers.image.base.digest"] = base.Digest
	}
	return labels, nil
}

// PlainHTTP says whether BuildKit must push ref over plain HTTP (its
// exporter's registry.insecure): a loopback registry, or one of the
// request's insecure registries (images.PlainHTTP decides). A reference
// that does not parse is not plain HTTP; the push reports it.
func (r *Request) PlainHTTP(ref string) bool {
	ok, err := images.PlainHTTP(ref, append(slices.Clip(r.Registry), images.WithInsecureRegistries(r.InsecureRegistries...))...)
	return err == nil && ok
}

// Build runs the plan on BuildKit: the generated Dockerfile through the
// Dockerfile frontend, with the requested outputs, cache and secrets.
func Build(ctx context.Context, c *client.Client, req Request, plan *Plan) (*Result, error) {
	if len(req.Tags) > 0 && !req.Push && len(req.Outputs) == 0 {
		return nil, fmt.Errorf("--tag without --push keeps nothing (gpuimg's buildkitd has no local image store); add --push, or --output type=oci,dest=FILE")
	}
	tmp, err := os.MkdirTemp("", "gpuimg-build-")
	if err != nil {
		return nil, fmt.Errorf("create build context: %w", err)
	}
	defer os.RemoveAll(tmp)
	files := map[string][]byte{"Dockerfile": []byte(plan.Dockerfile), ctxVerify: verifyPy}
	ctxDir := req.ContextDir
	if ctxDir == "" {
		ctxDir = "."
	}
	if req.Extras.Requirements != "" {
		p := req.Extras.Requirements
		if !filepath.IsAbs(p) {
			p = filepath.Join(ctxDir, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read requirements: %w", err)
		}
		files[ctxRequirements] = b
	}
	for name, b := range files {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, fmt.Errorf("write build context: %w", err)
		}
	}
	for _, cp := range req.Extras.Copy {
		src, _, _ := strings.Cut(cp, ":")
		if _, err := os.Stat(filepath.Join(ctxDir, src)); err != nil {
			return nil, fmt.Errorf("copy %s: %w", cp, err)
		}
	}
	localCtx, err := fsutil.NewFS(tmp)
	if err != nil {
		return nil, err
	}
	mounts := map[string]fsutil.FS{"context": localCtx, "dockerfile": localCtx}
	attrs := map[string]string{
		"filename":                    "Dockerfile",
		"build-arg:SOURCE_DATE_EPOCH": strconv.FormatInt(plan.SourceDateEpoch, 10),
	}
	if len(req.Extras.Copy) > 0 {
		userCtx, err := fsutil.NewFS(ctxDir)
		if err != nil {
			return nil, fmt.Errorf("context directory %s: %w", ctxDir, err)
		}
		mounts[UserContext] = userCtx
		attrs["context:"+UserContext] = "local:" + UserContext
	}
	if req.NoCache {
		attrs["no-cache"] = ""
	}
	if len(req.Platforms) > 0 {
		attrs["platform"] = strings.Join(req.Platforms, ",")
	}
	for k, v := range plan.Labels {
		attrs["label:"+k] = v
	}

	// File outputs are written under a temporary name and renamed when the
	// build succeeds, so a failed build leaves no half-written archive.
	outputs, renames := stageOutputs(req.Outputs)
	defer func() {
		for tmp := range renames {
			_ = os.Remove(tmp) // left only if the build failed
		}
	}()
	exports, err := build.ParseOutput(outputs)
	if err != nil {
		return nil, fmt.Errorf("--output: %w", err)
	}
	if len(req.Tags) > 0 {
		e := client.ExportEntry{Type: client.ExporterImage, Attrs: map[string]string{"name": strings.Join(req.Tags, ",")}}
		if req.Push {
			e.Attrs["push"] = "true"
			for _, t := range req.Tags {
				if req.PlainHTTP(t) {
					e.Attrs["registry.insecure"] = "true"
				}
			}
		}
		exports = append(exports, e)
	}
	for i := range exports {
		switch exports[i].Type {
		case client.ExporterImage, client.ExporterOCI, client.ExporterDocker:
			exports[i].Attrs["rewrite-timestamp"] = "true"
		}
	}
	cacheTo, err := build.ParseExportCache(req.CacheTo)
	if err != nil {
		return nil, fmt.Errorf("--cache-to: %w", err)
	}
	cacheFrom, err := build.ParseImportCache(req.CacheFrom)
	if err != nil {
		return nil, fmt.Errorf("--cache-from: %w", err)
	}

	// Secrets: the user's, plus the generated pip.conf.
	var sources []secretsprovider.Source
	for _, s := range req.Secrets {
		src := secretsprovider.Source{}
		for f := range strings.SplitSeq(s, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "id":
				src.ID = v
			case "src", "source":
				src.FilePath = v
			case "env":
				src.Env = v
			default:
				return nil, fmt.Errorf("secret %q: unknown key %q (use id, src, env)", s, k)
			}
		}
		if src.FilePath == "" && src.Env == "" {
			src.Env = src.ID
		}
		sources = append(sources, src)
	}
	if req.pipMirror() {
		p := filepath.Join(tmp, "..", filepath.Base(tmp)+".pip.conf")
		if err := os.WriteFile(p, req.pipConf(), 0o600); err != nil {
			return nil, fmt.Errorf("write pip.conf secret: %w", err)
		}
		defer os.Remove(p)
		sources = append(sources, secretsprovider.Source{ID: SecretPipMirror, FilePath: p})
	}
	store, err := secretsprovider.NewStore(sources)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	dockerConfig := config.LoadDefaultConfigFile(io.Discard)
	attach := []session.Attachable{
		authprovider.NewDockerAuthProvider(authprovider.DockerAuthProviderConfig{AuthConfigProvider: authprovider.LoadAuthConfig(dockerConfig)}),
		secretsprovider.NewSecretProvider(store),
	}

	opt := client.SolveOpt{
		Frontend:      "dockerfile.v0",
		FrontendAttrs: attrs,
		LocalMounts:   mounts,
		Exports:       exports,
		CacheExports:  cacheTo,
		CacheImports:  cacheFrom,
		Session:       attach,
	}
	mode := req.ProgressMode
	if mode == "" {
		mode = string(progressui.AutoMode)
	}
	out := req.Progress
	if out == nil {
		out, mode = io.Discard, string(progressui.QuietMode)
	}
	display, err := progressui.NewDisplay(out, progressui.DisplayMode(mode))
	if err != nil {
		return nil, fmt.Errorf("progress %s: %w", mode, err)
	}
	ch := make(chan *client.SolveStatus)    // closed by Solve
	shown := make(chan *client.SolveStatus) // closed by the counter
	start := time.Now()
	var resp *client.SolveResponse
	steps := map[string]struct{ done, cached bool }{} // Dockerfile steps by vertex digest
	eg, ectx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		var err error
		resp, err = c.Solve(ectx, nil, opt, ch)
		return err
	})
	eg.Go(func() error {
		defer close(shown)
		for st := range ch {
			for _, v := range st.Vertexes {
				// A step is cached when BuildKit says so in any of its
				// updates: one answered from an imported cache is reported
				// CACHED, then again (not cached) as its layer is pulled.
				if isStep(v.Name) {
					step := steps[v.Digest.String()]
					step.cached = step.cached || v.Cached
					step.done = step.done || (v.Completed != nil && v.Error == "")
					steps[v.Digest.String()] = step
				}
			}
			select {
			case shown <- st:
			case <-ectx.Done(): // the display stopped; keep draining Solve's channel
			}
		}
		return nil
	})
	eg.Go(func() error {
		_, err := display.UpdateFrom(context.WithoutCancel(ectx), shown)
		return err
	})
	if err := eg.Wait(); err != nil {
		return nil, fmt.Errorf("build %s: %w", plan.Labels["org.opencontainers.image.version"], err)
	}
	for tmp, dest := range renames {
		if err := os.Rename(tmp, dest); err != nil {
			return nil, fmt.Errorf("output %s: %w", dest, err)
		}
	}
	res := &Result{Tags: req.Tags, Pushed: req.Push && len(req.Tags) > 0, Base: plan.Base, Stack: req.Stack, Duration: time.Since(start)}
	for _, st := range steps {
		if st.done {
			res.TotalSteps++
			if st.cached {
				res.CachedSteps++
			}
		}
	}
	if resp != nil {
		res.Digest = resp.ExporterResponse["containerimage.digest"]
	}
	return res, nil
}

// dockerfileStep matches the names BuildKit's Dockerfile frontend gives
// the steps of a Dockerfile: "[2/7] RUN …", "[stage-1 3/5] COPY …",
// "[linux/arm64 2/7] RUN …". Its other vertices ("[internal] load
// metadata for …", "[auth] …", "[context user] load …", "exporting to
// image") are not steps.
var dockerfileStep = regexp.MustCompile(`^\[(?:[^\]]* )?[0-9]+/[0-9]+\] `)

// isStep says whether a solve status vertex is a Dockerfile step.
func isStep(name string) bool { return dockerfileStep.MatchString(name) }

// stageOutputs points file outputs (type=oci|docker|tar with dest=FILE) at
// a temporary name beside FILE and returns temporary → final names.
func stageOutputs(outputs []string) ([]string, map[string]string) {
	renames := map[string]string{}
	staged := make([]string, len(outputs))
	for i, o := range outputs {
		staged[i] = o
		fields := strings.Split(o, ",")
		typ, dest := "", ""
		for _, f := range fields {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "type":
				typ = v
			case "dest":
				dest = v
			}
		}
		if (typ != "oci" && typ != "docker" && typ != "tar") || dest == "" || dest == "-" {
			continue
		}
		tmp := filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".gpuimg-partial")
		for j, f := range fields {
			if strings.HasPrefix(f, "dest=") {
				fields[j] = "dest=" + tmp
			}
		}
		staged[i] = strings.Join(fields, ",")
		renames[tmp] = dest
	}
	return staged, renames
}

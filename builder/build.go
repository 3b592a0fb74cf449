package builder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/buildkit/client"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/session/auth/authprovider"
	"github.com/moby/buildkit/session/secrets/secretsprovider"
	"github.com/moby/buildkit/util/progress/progressui"
	"github.com/tonistiigi/fsutil"
	"golang.org/x/sync/errgroup"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/matrix"
)

// Request is one build. It is a plain struct, like BuildKit's SolveOpt.
type Request struct {
	Stack  matrix.Stack
	Extras Extras
	// ContextDir is the directory --copy sources and the requirements file
	// are relative to. Default: the current directory.
	ContextDir string
	// Platforms to build (linux/amd64); several give a multi-platform
	// index. Default: the daemon's platform.
	Platforms images.Platforms
	// Tags are image names; with Push they are pushed to their registries.
	Tags []string
	Push bool
	// Outputs are extra outputs (ParseOutputs).
	Outputs []Output
	// PushByDigest pushes the image to this repository by digest only,
	// untagged (publish writes the tag once the image passed its
	// validation), with Annotations on its manifest and, when several
	// platforms are built, on its index.
	PushByDigest string
	Annotations  map[string]string
	// CacheFrom and CacheTo are cache imports and exports (ParseCache).
	CacheFrom, CacheTo []client.CacheOptionsEntry
	// Secrets are the user's BuildKit secrets (ParseSecrets), mounted in
	// the pip steps.
	Secrets []secretsprovider.Source
	// Mirrors are registry mirrors, used to pin the base image; the daemon
	// must use the same ones (a local daemon started by gpuimg does).
	Mirrors images.Mirrors
	// Registry is how gpuimg reaches registries, to pin the base image
	// and to tell BuildKit which registries it pushes to over plain HTTP
	// (PlainHTTP): credentials, CA file, insecure registries, retries.
	Registry []images.Option
	// Pip index settings; when any is set, every pip step (frameworks
	// included) uses them through a generated pip.conf secret.
	PipIndexURL       string
	PipExtraIndexURLs []string
	PipTrustedHosts   []string
	// PipFindLinks replace the find-links pages of the frameworks
	// (matrix.Framework.FindLinks, JAX's before 0.4.30): a mirror of them.
	PipFindLinks []string
	// PythonMirror replaces python-build-standalone's release URL
	// (matrix.StandalonePythonURL) for a stack whose Python is a
	// standalone CPython; the archive's name and sha256 stay. It is in
	// the image's history: CheckPythonMirror refuses credentials.
	PythonMirror string
	// SourceDateEpoch fixes timestamps; nil means the base image's
	// creation time, so the same inputs give the same image.
	SourceDateEpoch *int64
	// Source, Revision fill org.opencontainers.image.source/revision.
	Source, Revision string
	// NoCache ignores BuildKit's cache for every step. Index settings are
	// not part of the cache key, so use it after an index changed what it
	// serves for a pinned version.
	NoCache bool
	// Compression is the layers' compression in image, OCI and Docker
	// outputs: zstd, gzip or estargz (matrix.WrittenCompressions).
	// Default ("") zstd, and gzip for type=docker outputs
	// (exporterCompression).
	Compression matrix.Compression
	// LargeWheel is the installed size from which a distribution gets a
	// layer of its own (LayerPlan). Default: DefaultLargeWheel.
	LargeWheel int64
	// NoChecks leaves out the build's proof (StageCheckEnv, StageCheck:
	// library closure and framework imports, run inside the image). The
	// image is the same; the build is faster and unproven. Default:
	// checked.
	NoChecks bool
	// NoTorchCompile leaves out torch.compile's C compiler and Python
	// headers, which a stack whose torch brings triton gets by default
	// (Definition.NoTorchCompile).
	NoTorchCompile bool
	// Provenance asks BuildKit for SLSA v1 provenance (attest:provenance,
	// mode=max), stored in the pushed index as an attestation manifest:
	// "" none, ProvenanceAuto the default builder id (DefaultBuilderID),
	// else the builder id (CheckProvenance). BuildKit does not sign it;
	// gpuimg sign does (images/sign.SignProvenance).
	Provenance string
	// Progress receives BuildKit's progress display; nil discards it.
	Progress     io.Writer
	ProgressMode string // auto, plain, tty, rawjson, quiet (default auto)
}

// Plan is a build ready to run: the pinned base, the generated Dockerfile
// and the labels.
type Plan struct {
	// definition is what Dockerfile was rendered from.
	definition      Definition
	Base            images.Base       `json:"base"`
	Dockerfile      string            `json:"dockerfile"`
	Labels          map[string]string `json:"labels"`
	SourceDateEpoch int64             `json:"source_date_epoch"`
}

// Result is what a build produced.
type Result struct {
	// Digest is the image (or index) digest, when an image was exported.
	Digest string   `json:"digest,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	Pushed bool     `json:"pushed"`
	// Compression is the tagged image's layer compression (zstd, gzip or
	// estargz), when the build has tags.
	Compression matrix.Compression `json:"compression,omitempty"`
	Base        images.Base        `json:"base"`
	Stack       matrix.Stack       `json:"stack"`
	// Duration is the wall time of the solve.
	Duration time.Duration `json:"duration_ns"`
	// CachedSteps of TotalSteps Dockerfile steps were answered from
	// BuildKit's cache.
	CachedSteps int `json:"cached_steps"`
	TotalSteps  int `json:"total_steps"`
	// Dockerfile is the Dockerfile that was built: the plan's, or the
	// layered one (LayeredDockerfile).
	Dockerfile string `json:"dockerfile,omitempty"`
	// Layers are the Python environment's layers of a layered build.
	Layers []Layer `json:"python_layers,omitempty"`
	// Unchanged says every tag already held an image of the build's
	// inputs (InputsLabel): nothing was solved or pushed, and Digest is
	// that image's.
	Unchanged bool `json:"unchanged,omitempty"`
}

func (r *Request) pipMirror() bool {
	return r.PipIndexURL != "" || len(r.PipExtraIndexURLs) > 0 || len(r.PipTrustedHosts) > 0 || len(r.PipFindLinks) > 0
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
	if len(r.PipFindLinks) > 0 {
		fmt.Fprintf(&b, "find-links = %s\n", strings.Join(r.PipFindLinks, "\n    "))
	}
	return []byte(b.String())
}

// secretIDs are the ids of the secrets, which the Dockerfile's pip
// steps mount; an id gpuimg uses itself is refused (checkSecretID, as
// ParseSecret does: a Request may be built without it).
func secretIDs(secrets []secretsprovider.Source) ([]string, error) {
	var ids []string
	for _, s := range secrets {
		if s.ID == "" {
			return nil, fmt.Errorf("a secret without an id (file %q, variable %q): give id=ID", s.FilePath, s.Env)
		}
		if err := checkSecretID(s.ID); err != nil {
			return nil, err
		}
		ids = append(ids, s.ID)
	}
	return ids, nil
}

// Prepare pins the base image and renders the build without running it
// (this is what --dockerfile-only prints).
func Prepare(ctx context.Context, req Request) (*Plan, error) {
	ids, err := secretIDs(req.Secrets)
	if err != nil {
		return nil, err
	}
	if err := CheckPythonMirror(req.PythonMirror); err != nil {
		return nil, err
	}
	for _, p := range req.Platforms.Strings() {
		if err := checkStandalonePlatform(req.Stack, p); err != nil {
			return nil, err
		}
	}
	var platform *v1.Platform
	if len(req.Platforms) > 0 {
		first := req.Platforms[0]
		platform = &first
	}
	base, err := images.PinBase(ctx, req.Stack.BaseImage, req.Mirrors, append(slices.Clip(req.Registry), images.WithPlatform(platform))...)
	if err != nil {
		return nil, err
	}
	hasReq := req.Extras.Requirements != ""
	def := Definition{
		Stack: req.Stack, Base: base.From, Extras: req.Extras,
		PipMirror: req.pipMirror(), PipFindLinks: len(req.PipFindLinks) > 0, Secrets: ids, HasRequirements: hasReq,
		NoChecks:       req.NoChecks,
		PythonMirror:   req.PythonMirror,
		NoTorchCompile: req.NoTorchCompile,
	}
	df, err := Dockerfile(def)
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
	return &Plan{definition: def, Base: base, Dockerfile: df, Labels: labels, SourceDateEpoch: epoch}, nil
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
	ok, err := images.PlainHTTP(ref, r.Registry...)
	return err == nil && ok
}

// ErrNotKept is wrapped by CheckKept.
var ErrNotKept = errors.New("--tag without --push keeps nothing (gpuimg's buildkitd has no local image store)")

// CheckKept refuses a request that tags an image but neither pushes it
// nor writes an output: the build would be thrown away. The CLI calls it
// before the base is pinned and a builder is dialled; Build calls it too.
func (r *Request) CheckKept() error {
	if len(r.Tags) > 0 && !r.Push && len(r.Outputs) == 0 {
		return fmt.Errorf("%w: add --push, or --output type=oci,dest=FILE", ErrNotKept)
	}
	return nil
}

// Build runs the plan on BuildKit: the generated Dockerfile through the
// Dockerfile frontend, with the requested outputs, cache and secrets.
// Its steps, in order, are run's: the build context, the exports, the
// session, the layered Dockerfile, the solve (with the proof and push
// retries) and the result.
func Build(ctx context.Context, c *client.Client, req Request, plan *Plan) (*Result, error) {
	if err := CheckCompression(req.Compression); err != nil {
		return nil, err
	}
	if req.PushByDigest != "" && len(req.Tags) > 0 {
		return nil, fmt.Errorf("a build pushed by digest to %s has no tags (%s): the tag is written after validation", req.PushByDigest, strings.Join(req.Tags, ", "))
	}
	if err := req.CheckKept(); err != nil {
		return nil, err
	}
	b := &run{c: c, req: req, plan: plan, dockerfile: plan.Dockerfile, steps: map[string]stepState{}}
	defer b.close()
	return b.run(ctx)
}

// run is one Build: what its steps share.
type run struct {
	c    *client.Client
	req  Request
	plan *Plan
	// dir holds the generated build context (the Dockerfiles, gpuimg's
	// scripts, the requirements file); removed by close.
	dir string
	opt client.SolveOpt
	// renames are the staged file outputs, temporary name → final name
	// (Output.staged); a temporary file left at close is a failed build's.
	renames map[string]string
	// cleanup runs at close, last added first.
	cleanup []func()
	// steps are the Dockerfile steps by instruction, as the first solve
	// saw them.
	steps      map[string]stepState
	dockerfile string  // the Dockerfile built: the plan's or the layered one
	layers     []Layer // the layered build's Python layers
	start      time.Time
	// inputsDigest is the build's InputsLabel value (context).
	inputsDigest string
}

func (b *run) run(ctx context.Context) (*Result, error) {
	for _, step := range []func(context.Context) error{b.context, b.exports, b.session} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	b.start = time.Now() // Duration: the solves, the layered build's plan included
	if digest, ok := b.unchanged(ctx, b.inputsDigest); ok {
		return b.skipped(digest), nil
	}
	if err := b.layer(ctx); err != nil {
		return nil, err
	}
	resp, err := b.solve(ctx)
	if err != nil {
		return nil, err
	}
	for tmp, dest := range b.renames {
		if err := os.Rename(tmp, dest); err != nil {
			return nil, fmt.Errorf("output %s: %w", dest, err)
		}
	}
	return b.result(resp), nil
}

func (b *run) close() {
	for tmp := range b.renames {
		_ = os.Remove(tmp) // left only if the build failed
	}
	for _, f := range slices.Backward(b.cleanup) {
		f()
	}
}

// version names the build in errors: the stack's tag.
func (b *run) version() string { return b.plan.Labels["org.opencontainers.image.version"] }

// context writes the generated build context and sets the solve's local
// mounts (the generated context, and the user's for --copy) and the
// frontend's attributes.
func (b *run) context(context.Context) error {
	req, plan := b.req, b.plan
	tmp, err := os.MkdirTemp("", "gpuimg-build-")
	if err != nil {
		return fmt.Errorf("create build context: %w", err)
	}
	b.dir = tmp
	b.cleanup = append(b.cleanup, func() { os.RemoveAll(tmp) })
	files, err := ContextFiles(req, plan)
	if err != nil {
		return err
	}
	ctxDir := req.ContextDir
	if ctxDir == "" {
		ctxDir = "."
	}
	for name, data := range files {
		if err := writeContextFile(tmp, name, data); err != nil {
			return err
		}
	}
	if err := checkCopySources(ctxDir, req.Extras.Copy); err != nil {
		return err
	}
	localCtx, err := fsutil.NewFS(tmp)
	if err != nil {
		return err
	}
	mounts := map[string]fsutil.FS{"context": localCtx, "dockerfile": localCtx}
	attrs := frontendAttrs(plan.SourceDateEpoch)
	if len(req.Extras.Copy) > 0 {
		userCtx, err := fsutil.NewFS(ctxDir)
		if err != nil {
			return fmt.Errorf("context directory %s: %w", ctxDir, err)
		}
		mounts[UserContext] = userCtx
		attrs["context:"+UserContext] = "local:" + UserContext
	}
	if req.NoCache {
		attrs["no-cache"] = ""
	}
	if len(req.Platforms) > 0 {
		attrs["platform"] = strings.Join(req.Platforms.Strings(), ",")
	}
	for k, v := range plan.Labels {
		attrs["label:"+k] = v
	}
	// publish labels its variant's inputs itself (Plan.Labels); a build
	// labels its own.
	if b.inputsDigest = plan.Labels[InputsLabel]; b.inputsDigest == "" {
		if b.inputsDigest, err = b.inputs(files, ctxDir); err != nil {
			return err
		}
		attrs["label:"+InputsLabel] = b.inputsDigest
	}
	if p := provenanceOpt(req.Provenance, ""); p != "" {
		attrs[provenanceAttr] = p
	}
	b.opt.Frontend = "dockerfile.v0"
	b.opt.FrontendAttrs = attrs
	b.opt.LocalMounts = mounts
	return nil
}

// ContextFiles are the files of the generated build context, by path
// inside it: the Dockerfile and every file it mounts or copies from the
// context (verify.py, plan.py, proof.py, hostlibs.json and, with
// requirements, requirements.txt).
func ContextFiles(req Request, plan *Plan) (map[string][]byte, error) {
	files := map[string][]byte{"Dockerfile": []byte(plan.Dockerfile), ctxVerify: verifyPy, ctxPlan: planPy, ctxProof: proofPy, ctxHostLibs: matrix.HostLibsJSON()}
	if req.Extras.Requirements != "" {
		p := req.Extras.Requirements
		if !filepath.IsAbs(p) {
			ctxDir := req.ContextDir
			if ctxDir == "" {
				ctxDir = "."
			}
			p = filepath.Join(ctxDir, p)
		}
		data, err := bound.ReadFile(p, "", bound.MaxUserFile)
		if err != nil {
			return nil, fmt.Errorf("read requirements: %w", err)
		}
		files[ctxRequirements] = data
	}
	return files, nil
}

// StandaloneContext is the generated build context as it builds without
// gpuimg (docker buildx build DIR, buildctl): ContextFiles, with the
// Dockerfile ending in LABEL lines for the labels a gpuimg build sets as
// frontend attributes (Plan.Labels and InputsLabel, the build's own
// inputs digest unless the plan has one). The inputs digest is taken
// over the plan's Dockerfile, without these lines, as a build takes it.
func StandaloneContext(req Request, plan *Plan) (map[string][]byte, error) {
	files, err := ContextFiles(req, plan)
	if err != nil {
		return nil, err
	}
	labels := maps.Clone(plan.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if labels[InputsLabel] == "" {
		ctxDir := req.ContextDir
		if ctxDir == "" {
			ctxDir = "."
		}
		if labels[InputsLabel], err = (&run{req: req, plan: plan}).inputs(files, ctxDir); err != nil {
			return nil, err
		}
	}
	lines, err := LabelLines(labels)
	if err != nil {
		return nil, err
	}
	files["Dockerfile"] = []byte(plan.Dockerfile + "\n# The labels gpuimg build sets, for a build without gpuimg.\n" + lines)
	return files, nil
}

// LabelLines are labels as Dockerfile LABEL instructions, one a line,
// sorted by key, each value double-quoted with '\', '"' and '$' escaped
// (LABEL expands variables). A value with a line break has no LABEL line
// and is an error.
func LabelLines(labels map[string]string) (string, error) {
	var b strings.Builder
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if strings.ContainsAny(k+v, "\r\n") || strings.ContainsAny(k, " \t=\"") {
			return "", fmt.Errorf("label %q cannot be a LABEL line (a line break, or a key with space, '=' or '\"')", k)
		}
		fmt.Fprintf(&b, "LABEL %s=\"%s\"\n", k, esc.Replace(v))
	}
	return b.String(), nil
}

// WriteContext writes build context files (StandaloneContext's) into
// dir, for docker buildx build or buildctl to build without gpuimg.
func WriteContext(dir string, files map[string][]byte) error {
	for name, data := range files {
		if err := writeContextFile(dir, name, data); err != nil {
			return err
		}
	}
	return nil
}

// writeContextFile writes one file of the generated build context.
func writeContextFile(dir, name string, data []byte) error {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write build context: %w", err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("write build context: %w", err)
	}
	return nil
}

// exports sets the solve's exports (the user's outputs, a file output
// staged under a temporary name and renamed when the build succeeds, so
// that a failed build leaves no half-written archive; the tags' image
// export; the push by digest) and its cache imports and exports.
func (b *run) exports(context.Context) error {
	req := b.req
	b.renames = map[string]string{}
	var exports []client.ExportEntry
	for _, o := range req.Outputs {
		e, partial, err := o.staged()
		if err != nil {
			return err
		}
		if partial != "" {
			b.renames[partial] = o.Dest
		}
		exports = append(exports, e)
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
	if req.PushByDigest != "" {
		e := client.ExportEntry{Type: client.ExporterImage, Attrs: map[string]string{"name": req.PushByDigest, "push-by-digest": "true", "push": "true"}}
		for k, v := range req.Annotations {
			e.Attrs["annotation."+k] = v
			if len(req.Platforms) > 1 {
				e.Attrs["annotation-index."+k] = v
			}
		}
		if req.PlainHTTP(req.PushByDigest) {
			e.Attrs["registry.insecure"] = "true"
		}
		exports = append(exports, e)
	}
	for i := range exports {
		switch exports[i].Type {
		case client.ExporterImage, client.ExporterOCI, client.ExporterDocker:
			exporterCompression(exports[i].Attrs, req.Compression, exports[i].Type)
			// The steps fix their own files' times (clampStep,
			// fixTimes); a --copy file's COPY cannot: it keeps the
			// context's times, and BuildKit keys a COPY by contents, not
			// times, and creates the destination's missing parents at
			// the build's time. So an image with --copy files is
			// exported with rewrite-timestamp, which clamps every layer's
			// times to SOURCE_DATE_EPOCH at the cost of reading them all
			// again on each export.
			if len(req.Extras.Copy) > 0 {
				exports[i].Attrs["rewrite-timestamp"] = "true"
			}
		}
	}
	b.opt.Exports = exports
	b.opt.CacheImports, b.opt.CacheExports = req.CacheFrom, req.CacheTo
	return nil
}

// session sets what the solve's session serves: registry credentials
// from the Docker config, and the secrets (the user's, and the generated
// pip.conf when pip settings are given).
func (b *run) session(context.Context) error {
	req := b.req
	sources := slices.Clone(req.Secrets)
	if req.pipMirror() {
		// Beside the context directory, not in it: the context is sent
		// to the daemon, a secret is not.
		p := filepath.Join(filepath.Dir(b.dir), filepath.Base(b.dir)+".pip.conf")
		if err := os.WriteFile(p, req.pipConf(), 0o600); err != nil {
			return fmt.Errorf("write pip.conf secret: %w", err)
		}
		b.cleanup = append(b.cleanup, func() { os.Remove(p) })
		sources = append(sources, secretsprovider.Source{ID: SecretPipMirror, FilePath: p})
	}
	store, err := secretsprovider.NewStore(sources)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	dockerConfig := config.LoadDefaultConfigFile(io.Discard)
	b.opt.Session = []session.Attachable{
		authprovider.NewDockerAuthProvider(authprovider.DockerAuthProviderConfig{AuthConfigProvider: authprovider.LoadAuthConfig(dockerConfig)}),
		secretsprovider.NewSecretProvider(store),
	}
	return nil
}

// layer is the layered build's first pass (layered, for a Plan from
// Prepare): it solves the plan stage (the frameworks' pip installs, as
// in the plain Dockerfile), and points the solve at the layered
// Dockerfile made from its plan.
func (b *run) layer(ctx context.Context) error {
	if !layered(b.req) || b.plan.definition.Base == "" {
		return nil
	}
	dists, err := planDists(b.opt, func(opt client.SolveOpt) (*client.SolveResponse, error) { return solve(ctx, b.c, opt, b.req, b.steps) })
	if err != nil {
		return fmt.Errorf("build %s: plan: %s%w", b.version(), proofHint(err), err)
	}
	if b.dockerfile, err = LayeredDockerfile(b.plan.definition, dists, b.req.LargeWheel); err != nil {
		return err
	}
	b.layers = LayerPlan(dists, b.req.LargeWheel)
	if err := writeContextFile(b.dir, ctxLayered, []byte(b.dockerfile)); err != nil {
		return err
	}
	b.opt.FrontendAttrs = maps.Clone(b.opt.FrontendAttrs)
	b.opt.FrontendAttrs["filename"] = ctxLayered
	return nil
}

// solve builds and exports the image, with the proof's check stages
// beside it (for a Plan from Prepare, unless NoChecks), and solves again
// after a push that failed for a transient cause, as many times as the
// registry options' retries allow; every step is cached by then, so
// another solve only pushes.
func (b *run) solve(ctx context.Context) (*client.SolveResponse, error) {
	req := b.req
	backoff, err := images.RetryBackoff(req.Registry...)
	if err != nil {
		return nil, err
	}
	tries := max(backoff.Steps, 1)
	var checks []string
	if b.plan.definition.Base != "" && !b.plan.definition.NoChecks {
		checks = []string{StageCheckEnv, StageCheck}
	}
	for try := 1; ; try++ {
		resp, err := solve(ctx, b.c, b.opt, req, b.steps, checks...)
		if err == nil {
			return resp, nil
		}
		registry, transient := pushFailure(err)
		if registry == "" || ctx.Err() != nil {
			return nil, fmt.Errorf("build %s: %s%w", b.version(), proofHint(err), err)
		}
		if !transient || try >= tries {
			return nil, fmt.Errorf("build %s: push to %s failed (try %d of %d; no tag was written for an incomplete image): %w; check the registry, or raise --retries",
				b.version(), registry, try, tries, err)
		}
		wait := backoff.Step()
		if req.Progress != nil && req.ProgressMode != string(progressui.QuietMode) {
			fmt.Fprintf(req.Progress, "gpuimg: push to %s failed (try %d of %d), trying again in %s: %v\n", registry, try, tries, wait.Round(time.Millisecond), err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("build %s: %w", b.version(), context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// skipped is the result of a build whose tags already hold an image of
// its inputs (unchanged): nothing was solved or pushed; the progress
// says so.
func (b *run) skipped(digest string) *Result {
	req := b.req
	if req.Progress != nil && req.ProgressMode != string(progressui.QuietMode) {
		fmt.Fprintf(req.Progress, "gpuimg: %s already holds %s, built from these inputs (%s %s): nothing to build or push; --no-cache builds it again\n",
			strings.Join(req.Tags, ", "), digest, InputsLabel, b.inputsDigest)
	}
	res := b.result(nil)
	res.Digest, res.Unchanged = digest, true
	return res
}

// result is what the build produced, from the final solve's response.
func (b *run) result(resp *client.SolveResponse) *Result {
	req := b.req
	res := &Result{Tags: req.Tags, Pushed: req.Push && len(req.Tags) > 0, Base: b.plan.Base, Stack: req.Stack, Duration: time.Since(b.start),
		Dockerfile: b.dockerfile, Layers: b.layers}
	if len(req.Tags) > 0 {
		res.Compression = compressionOf(req.Compression, client.ExporterImage)
	}
	for _, st := range b.steps {
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
	return res
}

// frontendAttrs are the Dockerfile frontend's attributes every solve of a
// build shares. "cmdline" keeps the solve on the frontend built into
// buildkitd: BuildKit's Dockerfile frontend (frontend/dockerfile/builder,
// v0.33 and v0.34) forwards to the image a "# syntax=" line names only
// when its attributes have no "cmdline" (a forwarded frontend gets one),
// and the generated Dockerfiles name DockerfileSyntax for builds
// elsewhere; pulling it would fail offline and on daemons without Docker
// Hub.
func frontendAttrs(epoch int64) map[string]string {
	return map[string]string{
		"filename":                    "Dockerfile",
		"cmdline":                     DockerfileSyntax,
		"build-arg:SOURCE_DATE_EPOCH": strconv.FormatInt(epoch, 10),
	}
}

// layered says whether the build splits the Python environment into
// layers (LayeredDockerfile): when the stack has frameworks and one
// platform is built (the plan is per platform: pip resolves each
// platform's wheels, and one Dockerfile serves all of them).
func layered(req Request) bool {
	return len(req.Stack.Frameworks) > 0 && len(req.Platforms) <= 1
}

// planDists solves the plan stage of opt's Dockerfile into a temporary
// directory and reads the plan.
func planDists(opt client.SolveOpt, solve func(client.SolveOpt) (*client.SolveResponse, error)) ([]PlannedDist, error) {
	dir, err := os.MkdirTemp("", "gpuimg-plan-")
	if err != nil {
		return nil, fmt.Errorf("create plan directory: %w", err)
	}
	defer os.RemoveAll(dir)
	opt.FrontendAttrs = maps.Clone(opt.FrontendAttrs)
	opt.FrontendAttrs["target"] = StagePlan
	delete(opt.FrontendAttrs, provenanceAttr) // the plan is read, not published
	opt.Exports = []client.ExportEntry{{Type: client.ExporterLocal, OutputDir: dir}}
	opt.CacheExports = nil
	if _, err := solve(opt); err != nil {
		return nil, err
	}
	b, err := bound.ReadFile(filepath.Join(dir, PlanFile), "the build's plan", maxPlanBytes)
	if err != nil {
		return nil, fmt.Errorf("read the build's plan: %w", err)
	}
	return parsePlan(b)
}

// maxPlanBytes bounds the plan a build reads back (PlanFile: one entry
// per installed distribution, a few hundred bytes each).
const maxPlanBytes = 16 << 20

// parsePlan reads the plan stage's PlanFile (planDists bounds its size).
func parsePlan(b []byte) ([]PlannedDist, error) {
	var dists []PlannedDist
	if err := json.Unmarshal(b, &dists); err != nil {
		return nil, fmt.Errorf("read the build's plan %s: %w", PlanFile, err)
	}
	return dists, nil
}

// dockerfileStep matches the names BuildKit's Dockerfile frontend gives
// the steps of a Dockerfile: "[2/7] RUN …", "[stage-1 3/5] COPY …",
// "[linux/arm64 2/7] RUN …". Its other vertices ("[internal] load
// metadata for …", "[auth] …", "[context user] load …", "exporting to
// image") are not steps.
var dockerfileStep = regexp.MustCompile(`^\[(?:[^\]]* )?[0-9]+/[0-9]+\] `)

// isStep says whether a solve status vertex is a Dockerfile step.
func isStep(name string) bool { return dockerfileStep.MatchString(name) }

// solve runs one solve with BuildKit's progress display, and records in
// steps each completed Dockerfile step not seen before, and whether it was
// cached.
// stepState is what the solves said of one Dockerfile step.
type stepState struct {
	key          string // the step without its "[stage N/M] " prefix
	done, cached bool
}

// stepKey is a step's instruction without the position BuildKit puts
// before it: the plan's solve and the layered solve name the same step
// "[4/7] RUN …" and "[gpuimg-python 3/3] RUN …".
func stepKey(name string) string {
	if loc := dockerfileStep.FindStringIndex(name); loc != nil {
		return name[loc[1]:]
	}
	return name
}

// With checks (Dockerfile stages), the solve builds them beside opt's
// target through BuildKit's gateway, in the same session, and returns
// the target for export only when every one succeeded: a failed check
// fails the build before anything is exported, pushed or tagged, and the
// exported image is the target's own, as if there were no checks.
func solve(ctx context.Context, c *client.Client, opt client.SolveOpt, req Request, steps map[string]stepState, checks ...string) (*client.SolveResponse, error) {
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
	var resp *client.SolveResponse
	eg, ectx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		var err error
		if len(checks) == 0 {
			resp, err = c.Solve(ectx, nil, opt, ch)
		} else {
			frontend := opt.Frontend
			opt.Frontend = ""
			resp, err = c.Build(ectx, opt, "gpuimg", func(ctx context.Context, gw gateway.Client) (*gateway.Result, error) {
				return solveChecked(ctx, gw, frontend, checks)
			}, ch)
		}
		return err
	})
	seen := map[string]stepState{} // this solve's steps
	eg.Go(func() error {
		defer close(shown)
		for st := range ch {
			for _, v := range st.Vertexes {
				// A step is cached when BuildKit says so in any of its
				// updates: one answered from an imported cache is reported
				// CACHED, then again (not cached) as its layer is pulled.
				if isStep(v.Name) {
					step := seen[v.Digest.String()]
					step.key = stepKey(v.Name)
					step.cached = step.cached || v.Cached
					step.done = step.done || (v.Completed != nil && v.Error == "")
					seen[v.Digest.String()] = step
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
	err = eg.Wait()
	// A step counts as its first solve saw it: the layered solve finds
	// the plan's steps it shares (FROM, the venv) cached by the plan's
	// solve, and a retried push finds every step cached.
	for _, st := range seen {
		if _, ok := steps[st.key]; !ok {
			steps[st.key] = st
		}
	}
	return resp, err
}

// proofHint says what a failed proof step means, before BuildKit's
// message (which names only the step and its exit code).
func proofHint(err error) string {
	if !strings.Contains(err.Error(), "gpuimg-proof.py") {
		return ""
	}
	return "the image fails its proof (the \"gpuimg check:\" lines above name each file and library, or framework; nothing was exported or pushed; fix what they name, or add --no-checks to build it unproven): "
}

// solveChecked solves the frontend's default target and each check
// target at once (BuildKit runs the steps they share once), and returns
// the default target's result when every check succeeded.
func solveChecked(ctx context.Context, gw gateway.Client, frontend string, checks []string) (*gateway.Result, error) {
	opts := gw.BuildOpts().Opts // the solve's frontend attributes, cache imports included
	eg, ctx := errgroup.WithContext(ctx)
	var res *gateway.Result
	eg.Go(func() error {
		var err error
		res, err = gw.Solve(ctx, gateway.SolveRequest{Frontend: frontend, FrontendOpt: opts})
		return err
	})
	for _, target := range checks {
		eg.Go(func() error {
			o := maps.Clone(opts)
			o["target"] = target
			if _, err := gw.Solve(ctx, gateway.SolveRequest{Frontend: frontend, FrontendOpt: o, Evaluate: true}); err != nil {
				return fmt.Errorf("%s: %w", target, err)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return res, nil
}

// Why push failures are read from text: the push runs in buildkitd
// (exporter/containerimage, "failed to push REF: cause", wrapping the
// registry client's error), and only a gRPC status crosses to the client
// (util/grpcerrors.ToGRPC, BuildKit v0.33): a code, the message, and as
// typed details only BuildKit's own errors (solver/errdefs: exit codes,
// vertices, sources). The registry client's typed errors (containerd's
// remotes.ErrUnexpectedStatus with its status code, net.OpError) carry
// no gRPC code and arrive as Unknown, so the message is all there is.

// pushRE finds the image BuildKit's exporter failed to push, in the
// message that reaches the client ("failed to push REF: cause").
var pushRE = regexp.MustCompile(`failed to push ([^\s]+?):? `)

// transientPushRE matches the causes worth another try: 408, 429 and 5xx
// answers, and connections refused, reset or cut off (a registry that
// restarts); the same kinds images retries for a copy.
// A registry's JSON error body replaces the status in the message with
// its error code (toomanyrequests, unavailable).
var transientPushRE = regexp.MustCompile(`\b(408|429|5\d\d)\b|(?i:toomanyrequests|unavailable)|connection refused|connection reset|broken pipe|i/o timeout|unexpected EOF|: EOF\b`)

// pushFailure says whether a solve failed in pushing an image: the
// registry it failed to push to, and whether the cause is worth a retry.
// Registry is "" for any other failure.
func pushFailure(err error) (registry string, transient bool) {
	msg := err.Error()
	m := pushRE.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	registry, _, _ = strings.Cut(m[1], "/")
	if ref, perr := name.ParseReference(m[1]); perr == nil {
		registry = ref.Context().RegistryStr()
	}
	return registry, transientPushRE.MatchString(msg[strings.Index(msg, m[0])+len(m[0]):])
}

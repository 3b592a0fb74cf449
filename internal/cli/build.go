package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/moby/buildkit/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/bound"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
)

// BuildOptions are the flags of gpuimg build: builder.Flags, which
// builder.Merge merges with the environment and gpuimg.yaml, and the
// command's own.
type BuildOptions struct {
	ConfigFile string
	builder.Flags

	BuilderOptions
	// Registry is how gpuimg reaches registries (pinning the base image
	// by digest); it becomes builder.Request.Registry, where BuildKit's
	// pushes read the --insecure-registry list too, and configures a
	// local buildkitd.
	Registry       RegistryOptions
	DockerfileOnly bool
	// ContextOut (--context-dir) is where --dockerfile-only writes the
	// whole generated build context.
	ContextOut string
	Output     string
}

// AddFlags binds the options to flags.
func (o *BuildOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.ConfigFile, "file", "f", "", "gpuimg.yaml with the stack, extras and build settings (flags override it; default ./gpuimg.yaml when it exists)")
	fs.StringArrayVar(&o.Extras.Pip, "pip", nil, "extra pip requirement, NAME==VERSION (repeatable)")
	fs.StringVar(&o.Extras.Requirements, "requirements", "", "requirements.txt to install after the frameworks")
	fs.StringArrayVar(&o.Extras.Apt, "apt", nil, "extra OS package (apt or dnf; repeatable)")
	fs.StringArrayVar(&o.Extras.Dnf, "dnf", nil, "extra RPM package by its RPM name, as gpuimg capture of an RPM-based root writes them; needs a Rocky Linux or UBI base (repeatable)")
	fs.StringVar(&o.Extras.Fabric, "fabric", "", "add the user space of a multi-node fabric (efa, infiniband; gpuimg matrix list fabrics) in a layer of its own on the base; frameworks whose NCCL its plugin does not support are refused. infiniband: rdma-core's packages from the OS's repositories; efa: the EFA installer (--fabric-source)")
	fs.StringVar(&o.Extras.FabricSource, "fabric-source", "", "installer archive of a fabric that installs from one (efa), pinned: URL#sha256=HEX; a mirror of the archive the matrix names, or another release")
	fs.Var((*copyFlag)(&o.Extras.Copy), "copy", "copy SRC (relative to --context) to DST in the image, as SRC:DST (repeatable)")
	fs.StringArrayVar(&o.EnvPairs, "env", nil, "environment variable KEY=VALUE (repeatable)")
	fs.StringVar(&o.Extras.Workdir, "workdir", "", "working directory of the image")
	fs.StringVar(&o.Entrypoint, "entrypoint", "", `entrypoint, as a JSON array ('["python","-m","app"]') or words`)
	fs.StringVar(&o.ContextDir, "context", ".", "directory --copy and --requirements paths are relative to")
	fs.StringVar(&o.Builder, "builder", "", "BuildKit daemon address (unix://, tcp://, docker-container://, kube-pod://); default $BUILDKIT_HOST, else a local buildkitd gpuimg starts and reuses")
	o.BuilderOptions.AddFlags(fs)
	addMirrorFlags(fs, &o.Flags, &o.Registry)
	fs.StringArrayVarP(&o.Tags, "tag", "t", nil, "image name, REGISTRY/REPO:TAG (repeatable)")
	fs.BoolVar(&o.Push, "push", false, "push the tags when the build succeeds (the tag is written last, after every blob)")
	fs.StringArrayVar(&o.Outputs, "output", nil, "extra output in BuildKit's syntax: type=oci,dest=F | type=docker,dest=F | type=local,dest=DIR | type=image,name=REF,push=true (repeatable)")
	fs.Var(&o.Platforms, "platform", "target platforms, e.g. linux/amd64,linux/arm64 (several give a multi-platform index)")
	addCompressionFlag(fs, &o.Flags)
	addTorchCompileFlag(fs, &o.Flags)
	fs.StringArrayVar(&o.CacheFrom, "cache-from", nil, "cache import in BuildKit's syntax: type=registry,ref=R | type=local,src=DIR (repeatable)")
	fs.StringArrayVar(&o.CacheTo, "cache-to", nil, "cache export in BuildKit's syntax: type=registry,ref=R,mode=max | type=local,dest=DIR (repeatable)")
	fs.StringArrayVar(&o.Secrets, "secret", nil, "build secret id=ID,src=FILE or id=ID,env=VAR; ids netrc and pip.conf are put where pip reads them (repeatable)")
	fs.StringVar(&o.ProgressMode, "progress", "auto", "progress output on stderr: auto, plain, tty, rawjson or quiet")
	fs.BoolVar(&o.NoCache, "no-cache", false, "rebuild every step (pip index settings are not part of the cache key)")
	fl := fs.VarPF((*provenanceFlag)(&o.Provenance), "provenance", "",
		"ask BuildKit for SLSA v1 provenance (mode=max), stored in the image index as an attestation manifest; --provenance=URI sets its builder id (default: gpuimg and the daemon). gpuimg sign signs it")
	fl.NoOptDefVal = builder.ProvenanceAuto
	fs.BoolVar(&o.NoChecks, "no-checks", false, "leave out the build's proof (every ELF file of the venv and CUDA finds its libraries, each framework imports), which runs inside the image; the image is the same")
	fs.BoolVar(&o.DockerfileOnly, "dockerfile-only", false, "print the generated Dockerfile (base pinned by digest, ending in the image's LABEL lines) and stop")
	fs.StringVar(&o.ContextOut, "context-dir", "", "with --dockerfile-only: also write the Dockerfile and every file it mounts (plan.py, verify.py, proof.py, hostlibs.json, requirements) into DIR, for docker buildx build DIR")
	fs.StringVar(&o.SourceDateEpoch, "source-date-epoch", "", "timestamp for reproducible output (default $SOURCE_DATE_EPOCH, else the base image's creation time)")
	outputFlag(fs, &o.Output, "output-format", "text", "json")
}

func newBuildCmd() *cobra.Command {
	mo := &MatrixOptions{}
	so := &StackOptions{}
	bo := &BuildOptions{}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build a pinned GPU image on BuildKit",
		Long: `build resolves the stack (the same flags as "gpuimg matrix resolve"), pins the
base image by digest, and builds it on BuildKit: the stack's Python in a
virtual environment, the framework wheels at exact versions from their CUDA
variant's index (checked after install), then your packages and files.

The image carries CUDA_VERSION, NVIDIA_REQUIRE_CUDA (the stack's driver floor),
NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, OCI labels (created,
source, revision, version, base.name, base.digest) and dev.gpuimg.stack, the
resolved stack as JSON.

The same inputs give the same image digest: timestamps come from
SOURCE_DATE_EPOCH (default: the base image's creation time).

Without -f, ./gpuimg.yaml is read when it exists; with neither stack flags
nor a file, build asks what to build. -t needs --push or an --output.

Without --builder or BUILDKIT_HOST, gpuimg starts a local buildkitd (root and
runc needed) and reuses it; "gpuimg builder stop" stops it.`,
		Example: `  # Build and push CUDA 12.2 + PyTorch 2.3 with two extra packages
  gpuimg build --cuda 12.2 --torch 2.3 --pip numpy==1.26.4 --pip einops==0.8.0 \
    -t registry.example.com/ml/torch:2.3-cu122 --push

  # Through mirrors (metered links, or offline), on a remote buildkitd
  gpuimg build --cuda 12.2 --torch 2.3 --builder tcp://buildkitd:1234 \
    --registry-mirror docker.io=mirror.example.com --pip-index-url https://pypi.example.com/simple \
    -t registry.example.com/ml/torch:2.3-cu122 --push

  # For SageMaker p5 endpoints: the target's driver (535) and GPU (H100) pick the stack
  gpuimg build --torch latest --target sagemaker/p5 -t 123456789012.dkr.ecr.us-east-1.amazonaws.com/ml/torch:p5 --push

  # Everything in a file (./gpuimg.yaml is read without -f); see what would be built
  gpuimg build -f gpuimg.yaml --dockerfile-only

  # An OCI archive for cloud image import, with registry cache
  gpuimg build --cuda 12.4 --torch 2.5 --output type=oci,dest=torch.tar \
    --cache-from type=registry,ref=registry.example.com/ml/cache --cache-to type=registry,ref=registry.example.com/ml/cache,mode=max`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, db, c, err := bo.merge(cmd, so, mo)
			if err != nil {
				return err
			}
			if set.Request.Stack, err = db.Resolve(c); err != nil {
				return renderConflict(io.Discard, "table", err)
			}
			return runBuild(cmd.Context(), cmd.OutOrStdout(), chatter(cmd), bo, set)
		},
	}
	so.AddFlags(cmd.Flags(), true)
	mo.AddFlags(cmd.Flags())
	bo.AddFlags(cmd.Flags())
	return cmd
}

// merge merges the flags, the environment and gpuimg.yaml with
// builder.Merge (flag > environment > gpuimg.yaml > default) into the
// build's settings and the resolver's constraints.
func (o *BuildOptions) merge(cmd *cobra.Command, so *StackOptions, mo *MatrixOptions) (*builder.Settings, *matrix.DB, matrix.Constraints, error) {
	var cfg *builder.Config
	if o.ConfigFile == "" {
		// As publish reads ./publish.yaml, build reads ./gpuimg.yaml.
		if _, err := os.Stat(defaultBuildFile); err == nil {
			o.ConfigFile = defaultBuildFile
			fmt.Fprintf(chatter(cmd), "gpuimg: reading ./%s (-f FILE for another)\n", defaultBuildFile)
		}
	}
	if o.ConfigFile != "" {
		var err error
		if cfg, err = builder.LoadConfig(o.ConfigFile); err != nil {
			if isDockerfile(o.ConfigFile) {
				return nil, nil, matrix.Constraints{}, invalid(fmt.Errorf("-f %s: -f takes a gpuimg.yaml (the stack, extras and build settings), and this is a Dockerfile", o.ConfigFile),
					"write the stack as gpuimg.yaml (docs/build.md) or as flags, or build the Dockerfile with docker buildx build; gpuimg build --dockerfile-only prints the Dockerfile gpuimg generates")
			}
			return nil, nil, matrix.Constraints{}, invalid(err, "see docs/build.md for the gpuimg.yaml format")
		}
	}
	if err := o.checkOutputs(cmd.Flags()); err != nil {
		return nil, nil, matrix.Constraints{}, err
	}
	f := o.Flags
	f.Stack, f.MatrixFiles = so.Spec, mo.Files
	f.Given = func(key string) bool { return cmd.Flags().Changed(buildFlag(key)) }
	set, err := builder.Merge(f, environment(), cfg)
	if err != nil {
		return nil, nil, matrix.Constraints{}, invalid(err, "")
	}
	if err := o.checkAsked(set); err != nil {
		return nil, nil, matrix.Constraints{}, err
	}
	so.Spec, mo.Files = set.Stack, set.MatrixFiles
	c, err := so.constraints(func(fl matrix.Field) string {
		if set.Sources[fl.Key()] == builder.FromFile {
			return o.ConfigFile + ": " + fl.Key()
		}
		return "--" + fl.Key()
	})
	if err != nil {
		return nil, nil, matrix.Constraints{}, err
	}
	c = builder.Constrain(c, set.Request.Extras, set.Request.Platforms)
	db, err := mo.Load()
	if err != nil {
		return nil, nil, matrix.Constraints{}, err
	}
	// A target that takes no zstd gets gzip; an unknown one is the
	// resolver's error.
	if c.Target != "" {
		if t, err := db.Target(c.Target); err == nil {
			set.ForTarget(&t)
		}
	}
	if err := completeRequest(cmd.Context(), &set.Request, o.Registry); err != nil {
		return nil, nil, matrix.Constraints{}, err
	}
	set.Request.Progress = cmd.ErrOrStderr()
	if quiet(cmd) {
		set.Request.ProgressMode = "quiet" // -q: BuildKit's quiet mode
	}
	return set, db, c, nil
}

// defaultBuildFile is the gpuimg.yaml build reads from the working
// directory when -f is not given.
const defaultBuildFile = "gpuimg.yaml"

// checkAsked refuses, before the base is pinned and a builder dialled, a
// build that names no stack (no stack flag, no gpuimg.yaml: it would
// resolve a framework-less image nobody asked for) and one whose tags
// would be thrown away (-t without --push or an --output).
func (o *BuildOptions) checkAsked(set *builder.Settings) error {
	if set.Stack == (matrix.Spec{}) {
		return invalid(errors.New("build: no stack to build: no stack flag given and no ./gpuimg.yaml"),
			"name it with flags (gpuimg build --cuda 12.4 --torch 2.5 -t REF --push) or in a gpuimg.yaml (-f FILE; docs/build.md)")
	}
	if o.ContextOut != "" && !o.DockerfileOnly {
		return invalid(errors.New("--context-dir writes the build context of --dockerfile-only"), "add --dockerfile-only")
	}
	if o.DockerfileOnly {
		return nil
	}
	if err := set.Request.CheckKept(); err != nil {
		return invalid(err, "")
	}
	return nil
}

// checkOutputs checks -o (the result format; fs holds the flags) and
// --output (BuildKit's outputs), which docker buildx users mix up:
// buildx's -o is --output.
func (o *BuildOptions) checkOutputs(fs *pflag.FlagSet) error {
	if err := checkFormat(fs); err != nil {
		if strings.Contains(o.Output, "=") {
			return invalid(fmt.Errorf("-o %s: gpuimg's -o is --output-format, the result format on stdout (text or json)", o.Output),
				"give BuildKit outputs with --output, as docker buildx build's -o: --output "+o.Output)
		}
		return err
	}
	for _, out := range o.Outputs {
		if out == "text" || out == "json" {
			return invalid(fmt.Errorf("--output %s: --output is an extra BuildKit output (type=oci,dest=FILE …), not the result format", out),
				"for the result format on stdout use -o "+out)
		}
	}
	return nil
}

// isDockerfile says whether the file at path reads as a Dockerfile: its
// first line that is not blank is a parser directive (# syntax=,
// # escape=, # check=), or its first instruction is FROM or ARG.
func isDockerfile(path string) bool {
	b, err := bound.ReadFile(path, "", bound.MaxUserFile)
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		l := strings.TrimSpace(line)
		if l == "" {
			continue
		}
		if d, ok := strings.CutPrefix(l, "#"); ok {
			d = strings.ToLower(strings.ReplaceAll(d, " ", ""))
			if strings.HasPrefix(d, "syntax=") || strings.HasPrefix(d, "escape=") || strings.HasPrefix(d, "check=") {
				return true
			}
			continue // a comment
		}
		word := strings.ToUpper(strings.Fields(l)[0])
		return word == "FROM" || word == "ARG"
	}
	return false
}

// completeRequest fills in what a merged build request takes from outside
// builder.Merge: the registry options (insecure registries included: the
// build reads them there, for gpuimg's own pinning and BuildKit's pushes
// alike) and the context directory's git source and revision.
func completeRequest(ctx context.Context, req *builder.Request, ro RegistryOptions) error {
	var err error
	if req.Registry, err = ro.Options(); err != nil {
		return err
	}
	req.Source, req.Revision = builder.GitInfo(ctx, req.ContextDir)
	return nil
}

// provenanceFlag is --provenance[=BUILDER-ID].
type provenanceFlag string

func (p *provenanceFlag) String() string { return string(*p) }
func (p *provenanceFlag) Type() string   { return "builder-id" }
func (p *provenanceFlag) Set(v string) error {
	if err := builder.CheckProvenance(v); err != nil {
		return err
	}
	*p = provenanceFlag(v)
	return nil
}

// buildFlag is the flag of a builder.Flags.Given key: the gpuimg.yaml
// key with dashes, but for three plurals.
func buildFlag(key string) string {
	switch key {
	case "matrix_files":
		return "matrix-file"
	case "platforms":
		return "platform"
	case "registry_mirrors":
		return "registry-mirror"
	}
	return strings.ReplaceAll(key, "_", "-")
}

// environment is the part of the environment builds read.
func environment() builder.Env {
	home, _ := os.UserHomeDir()
	return builder.Env{BuildkitHost: os.Getenv("BUILDKIT_HOST"), SourceDateEpoch: os.Getenv("SOURCE_DATE_EPOCH"),
		StateHome: os.Getenv("XDG_STATE_HOME"), Home: home, TempDir: os.TempDir()}
}

func runBuild(ctx context.Context, stdout, stderr io.Writer, o *BuildOptions, set *builder.Settings) error {
	req := set.Request
	fmt.Fprintf(stderr, "gpuimg: stack %s\n", req.Stack.Summary())
	fmt.Fprintf(stderr, "gpuimg: layers %s\n", layersNote(req, set.Sources["compression"]))
	plan, err := verbs.Prepare(ctx, req)
	if err != nil {
		return invalid(err, "check the base image's registry (or --registry-mirror) is reachable")
	}
	if o.DockerfileOnly {
		files, err := builder.StandaloneContext(req, plan)
		if err != nil {
			return invalid(err, "")
		}
		if o.ContextOut != "" {
			if err := builder.WriteContext(o.ContextOut, files); err != nil {
				return invalid(fmt.Errorf("--context-dir %s: %w", o.ContextOut, err), "")
			}
		}
		_, err = stdout.Write(files["Dockerfile"])
		return err
	}
	b, err := verbs.DialBuilder(ctx, set.Builder, o.local(req, o.Registry), o.clientOpts()...)
	switch {
	case err != nil && set.Builder == "":
		return invalid(err, "")
	case err != nil:
		return invalid(err, "start buildkitd there, or drop --builder/BUILDKIT_HOST to let gpuimg start one locally")
	}
	defer b.Close()
	res, err := verbs.Build(ctx, b, req, verbs.WithPlan(plan))
	var ve *verbs.Error
	switch {
	case err == nil:
	case errors.Is(err, builder.ErrOutsideContext):
		return invalid(err, "")
	case errors.As(err, &ve) && ve.Step == verbs.Lost:
		rerun := "start it again and run the build again"
		if b.Local {
			rerun = "run the build again (gpuimg starts it again)"
		}
		return &Error{Err: fmt.Errorf("buildkitd at %s stopped during the build; no tag was written (%w)", b.Addr, ve.Err),
			Hint: rerun + ": the steps it finished are cached", Code: ExitFailed}
	default:
		return &Error{Err: err, Code: ExitFailed}
	}
	return render(stdout, o.Output, res, func() error {
		if res.Digest != "" {
			fmt.Fprintf(stdout, "digest: %s\n", res.Digest)
		}
		for _, t := range res.Tags {
			verb := "built"
			if res.Pushed {
				verb = "pushed"
			}
			fmt.Fprintf(stdout, "%s: %s\n", verb, t)
		}
		fmt.Fprintf(stdout, "base: %s@%s\n", res.Base.Name, res.Base.Digest)
		fmt.Fprintf(stdout, "stack: %s\n", res.Stack.Summary())
		return nil
	})
}

// layersNote says which compression the build's layers get and why.
func layersNote(req builder.Request, src builder.Source) string {
	switch {
	case req.Compression == "":
		return string(builder.DefaultCompression) + " (the default; --compression gzip for runtimes older than containerd 1.5 or Docker 23; --output type=docker gets gzip)"
	case src == builder.FromDefault:
		return string(req.Compression) + " (target " + req.Stack.Target + " takes no zstd layers)"
	}
	return string(req.Compression) + " (from " + string(src) + ")"
}

// BuilderOptions are how gpuimg reaches BuildKit daemons: TLS for tcp://
// addresses, and the state directory of the local one it starts.
type BuilderOptions struct {
	TLSCA, TLSCert  string
	TLSKey, TLSName string
	StateDir        string
}

// AddFlags binds the options to flags.
func (o *BuilderOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TLSCA, "builder-tls-ca", "", "CA certificate of tcp:// buildkitds")
	fs.StringVar(&o.TLSCert, "builder-tls-cert", "", "client certificate for tcp:// buildkitds")
	fs.StringVar(&o.TLSKey, "builder-tls-key", "", "client key for tcp:// buildkitds")
	fs.StringVar(&o.TLSName, "builder-tls-servername", "", "server name to verify (default: the address's host)")
	fs.StringVar(&o.StateDir, "state-dir", "", "where the local buildkitd keeps its state (default ~/.local/state/gpuimg)")
}

// addMirrorFlags binds the flags that reach registries and pip indexes
// through mirrors, shared by build and publish: --registry-mirror, the
// named registry flags (ro) and the pip index flags.
func addMirrorFlags(fs *pflag.FlagSet, f *builder.Flags, ro *RegistryOptions) {
	fs.StringArrayVar(&f.Mirrors, "registry-mirror", nil, "registry mirror REGISTRY=MIRROR, e.g. docker.io=mirror.example.com (repeatable)")
	ro.addNamedFlags(fs)
	fs.StringVar(&f.PipIndexURL, "pip-index-url", "", "pip index for every pip step, frameworks included (a mirror); kept out of the images and their history")
	fs.StringArrayVar(&f.PipExtraIndexURLs, "pip-extra-index-url", nil, "extra pip index (repeatable)")
	fs.StringArrayVar(&f.PipTrustedHosts, "pip-trusted-host", nil, "pip index host to trust without HTTPS (repeatable)")
	fs.StringArrayVar(&f.PipFindLinks, "pip-find-links", nil, "pip find-links page for every pip step, in place of a framework's own (JAX before 0.4.30 needs one; repeatable)")
	fs.StringVar(&f.PythonMirror, "python-mirror", "", "URL that replaces "+matrix.StandalonePythonURL+" for a standalone CPython (a stack whose OS packages no Python it can use); the archive's name and sha256 stay, and the URL is in the image's history")
}

// addCompressionFlag binds --compression and --large-wheel, the layer
// settings shared by build and publish.
func addCompressionFlag(fs *pflag.FlagSet, f *builder.Flags) {
	fs.StringVar(&f.LargeWheel, "large-wheel", "50MB", "installed size from which a Python distribution gets an image layer of its own (smaller ones share one layer per framework)")
	fs.StringVar((*string)(&f.Compression), "compression", "", "layer compression of the pushed or written image: zstd (default: smaller and faster to unpack; containerd 1.5+, Docker 23+, podman, CRI-O), gzip (every runtime, Docker 20.10 included; the default for --output type=docker and for a --target that takes no zstd) or estargz (lazy pulls with stargz-snapshotter)")
}

// addTorchCompileFlag binds --torch-compile (default true), shared by
// build and publish, to builder.Flags.NoTorchCompile, its negation.
func addTorchCompileFlag(fs *pflag.FlagSet, f *builder.Flags) {
	fl := fs.VarPF((*notFlag)(&f.NoTorchCompile), "torch-compile", "",
		"for a torch that brings triton (2.0 and later), install what torch.compile builds with at first use: gcc, the C library's and Python's headers (239 MB installed on Debian 12; docs/build.md); --torch-compile=false leaves them out")
	fl.NoOptDefVal = "true"
	fl.DefValue = "true"
}

// copyFlag is --copy's value: each SRC:DST is parsed by
// builder.ParseCopySpec as it is given, and kept as written in the
// extras' copies (gpuimg.yaml's copy: and the inputs digest write them
// so). It repeats as pflag's string array does.
type copyFlag []string

func (c *copyFlag) Set(s string) error {
	cp, err := builder.ParseCopySpec(s)
	if err != nil {
		return invalid(err, "")
	}
	*c = append(*c, cp.String())
	return nil
}

func (c *copyFlag) String() string { return "[" + strings.Join(*c, ",") + "]" }

// Type is pflag's name for a string array, whose syntax Set keeps.
func (c *copyFlag) Type() string { return "stringArray" }

// notFlag is a boolean flag that sets the negation of its value.
type notFlag bool

func (b *notFlag) String() string { return strconv.FormatBool(!bool(*b)) }

func (b *notFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b = notFlag(!v)
	return nil
}

func (b *notFlag) Type() string { return "bool" }

// clientOpts turns the TLS flags into BuildKit client options.
func (o *BuilderOptions) clientOpts() []client.ClientOpt {
	var opts []client.ClientOpt
	if o.TLSCA != "" || o.TLSName != "" {
		opts = append(opts, client.WithServerConfig(o.TLSName, o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		opts = append(opts, client.WithCredentials(o.TLSCert, o.TLSKey))
	}
	return opts
}

// local is the local buildkitd gpuimg starts (or reuses) when no builder
// is named: in --state-dir, with req's registry mirrors and the
// --insecure-registry list.
func (o *BuilderOptions) local(req builder.Request, ro RegistryOptions) *builder.Local {
	return &builder.Local{StateDir: builder.StateDir(o.StateDir, environment()), Mirrors: req.Mirrors, InsecureRegistries: ro.InsecureRegistries}
}

func newBuilderCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "builder",
		Short: "Manage the local buildkitd gpuimg starts for builds",
		Example: `  gpuimg builder status
  gpuimg builder stop`,
	}
	cmd.PersistentFlags().StringVar(&dir, "state-dir", "", "the local buildkitd's state directory (default ~/.local/state/gpuimg)")
	cmd.AddCommand(newBuilderStatusCmd(&dir), &cobra.Command{
		Use:   "stop",
		Short: "Stop the local buildkitd (its cache stays)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := &builder.Local{StateDir: builder.StateDir(dir, environment())}
			return l.Stop(cmd.Context())
		},
	})
	return cmd
}

// builderStatus is builder status -o json: whether the local buildkitd
// runs, its process and address when it does, and its state directory.
type builderStatus struct {
	Running  bool   `json:"running"`
	PID      int    `json:"pid,omitempty"`
	Address  string `json:"address,omitempty"`
	StateDir string `json:"state_dir"`
}

func newBuilderStatusCmd(dir *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Say whether the local buildkitd runs, and where",
		Args:    cobra.NoArgs,
		Example: "  gpuimg builder status\n  gpuimg builder status -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			l := &builder.Local{StateDir: builder.StateDir(*dir, environment())}
			st := builderStatus{StateDir: l.StateDir}
			if pid, ok := l.Running(); ok {
				st.Running, st.PID, st.Address = true, pid, l.Address()
			}
			w := cmd.OutOrStdout()
			return render(w, output, st, func() error {
				if st.Running {
					_, err := fmt.Fprintf(w, "running: pid %d at %s (state %s)\n", st.PID, st.Address, st.StateDir)
					return err
				}
				_, err := fmt.Fprintf(w, "not running (state %s); gpuimg build starts it\n", st.StateDir)
				return err
			})
		},
	}
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

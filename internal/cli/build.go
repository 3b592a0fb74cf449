package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/buildkit/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// BuildOptions are the flags of gpuimg build.
type BuildOptions struct {
	ConfigFile string
	Extras     builder.Extras
	EnvPairs   []string
	Entrypoint string
	ContextDir string

	Builder         string
	TLSCA, TLSCert  string
	TLSKey, TLSName string
	StateDir        string
	Mirrors         []string
	// RegistryOptions reach the base image's registry; its insecure
	// registries are also BuildKit's.
	RegistryOptions
	PipIndexURL       string
	PipExtraIndexURLs []string
	PipTrustedHosts   []string

	Tags            []string
	Push            bool
	Outputs         []string
	Platforms       []string
	CacheFrom       []string
	CacheTo         []string
	Secrets         []string
	Progress        string
	DockerfileOnly  bool
	NoCache         bool
	SourceDateEpoch string
	Output          string
}

// AddFlags binds the options to flags.
func (o *BuildOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.ConfigFile, "file", "f", "", "gpuimg.yaml with the stack, extras and build settings (flags override it)")
	fs.StringArrayVar(&o.Extras.Pip, "pip", nil, "extra pip requirement, NAME==VERSION (repeatable)")
	fs.StringVar(&o.Extras.Requirements, "requirements", "", "requirements.txt to install after the frameworks")
	fs.StringArrayVar(&o.Extras.Apt, "apt", nil, "extra OS package (apt or dnf; repeatable)")
	fs.StringArrayVar(&o.Extras.Copy, "copy", nil, "copy SRC (relative to --context) to DST in the image, as SRC:DST (repeatable)")
	fs.StringArrayVar(&o.EnvPairs, "env", nil, "environment variable KEY=VALUE (repeatable)")
	fs.StringVar(&o.Extras.Workdir, "workdir", "", "working directory of the image")
	fs.StringVar(&o.Entrypoint, "entrypoint", "", `entrypoint, as a JSON array ('["python","-m","app"]') or words`)
	fs.StringVar(&o.ContextDir, "context", ".", "directory --copy and --requirements paths are relative to")
	fs.StringVar(&o.Builder, "builder", "", "BuildKit daemon address (unix://, tcp://, docker-container://, kube-pod://); default $BUILDKIT_HOST, else a local buildkitd gpuimg starts and reuses")
	fs.StringVar(&o.TLSCA, "builder-tls-ca", "", "CA certificate of a tcp:// buildkitd")
	fs.StringVar(&o.TLSCert, "builder-tls-cert", "", "client certificate for a tcp:// buildkitd")
	fs.StringVar(&o.TLSKey, "builder-tls-key", "", "client key for a tcp:// buildkitd")
	fs.StringVar(&o.TLSName, "builder-tls-servername", "", "server name to verify (default: the address's host)")
	fs.StringVar(&o.StateDir, "state-dir", "", "where the local buildkitd keeps its state (default ~/.local/state/gpuimg)")
	fs.StringArrayVar(&o.Mirrors, "registry-mirror", nil, "registry mirror REGISTRY=MIRROR, e.g. docker.io=mirror.example.com (repeatable)")
	o.RegistryOptions.addNamedFlags(fs)
	fs.StringVar(&o.PipIndexURL, "pip-index-url", "", "pip index for every pip step, frameworks included (a mirror); kept out of the image and its history")
	fs.StringArrayVar(&o.PipExtraIndexURLs, "pip-extra-index-url", nil, "extra pip index (repeatable)")
	fs.StringArrayVar(&o.PipTrustedHosts, "pip-trusted-host", nil, "pip index host to trust without HTTPS (repeatable)")
	fs.StringArrayVarP(&o.Tags, "tag", "t", nil, "image name, REGISTRY/REPO:TAG (repeatable)")
	fs.BoolVar(&o.Push, "push", false, "push the tags when the build succeeds (the tag is written last, after every blob)")
	fs.StringArrayVar(&o.Outputs, "output", nil, "extra output in BuildKit's syntax: type=oci,dest=F | type=docker,dest=F | type=local,dest=DIR | type=image,name=REF,push=true (repeatable)")
	fs.StringSliceVar(&o.Platforms, "platform", nil, "target platforms, e.g. linux/amd64,linux/arm64 (several give a multi-platform index)")
	fs.StringArrayVar(&o.CacheFrom, "cache-from", nil, "cache import in BuildKit's syntax: type=registry,ref=R | type=local,src=DIR (repeatable)")
	fs.StringArrayVar(&o.CacheTo, "cache-to", nil, "cache export in BuildKit's syntax: type=registry,ref=R,mode=max | type=local,dest=DIR (repeatable)")
	fs.StringArrayVar(&o.Secrets, "secret", nil, "build secret id=ID,src=FILE or id=ID,env=VAR; ids netrc and pip.conf are put where pip reads them (repeatable)")
	fs.StringVar(&o.Progress, "progress", "auto", "progress output on stderr: auto, plain, tty, rawjson or quiet")
	fs.BoolVar(&o.NoCache, "no-cache", false, "rebuild every step (pip index settings are not part of the cache key)")
	fs.BoolVar(&o.DockerfileOnly, "dockerfile-only", false, "print the generated Dockerfile (base pinned by digest) and stop")
	fs.StringVar(&o.SourceDateEpoch, "source-date-epoch", "", "timestamp for reproducible output (default $SOURCE_DATE_EPOCH, else the base image's creation time)")
	fs.StringVarP(&o.Output, "output-format", "o", "text", "result format on stdout: text or json")
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

Without --builder or BUILDKIT_HOST, gpuimg starts a local buildkitd (root and
runc needed) and reuses it; "gpuimg builder stop" stops it.`,
		Example: `  # Build and push CUDA 12.2 + PyTorch 2.3 with two extra packages
  gpuimg build --cuda 12.2 --torch 2.3 --pip numpy==1.26.4 --pip einops==0.8.0 \
    -t registry.example.com/ml/torch:2.3-cu122 --push

  # Through mirrors (metered links, or offline), on a remote buildkitd
  gpuimg build --cuda 12.2 --torch 2.3 --builder tcp://buildkitd:1234 \
    --registry-mirror docker.io=mirror.example.com --pip-index-url https://pypi.example.com/simple \
    -t registry.example.com/ml/torch:2.3-cu122 --push

  # Everything in a file; see what would be built
  gpuimg build -f gpuimg.yaml --dockerfile-only

  # An OCI archive for cloud image import, with registry cache
  gpuimg build --cuda 12.4 --torch 2.5 --output type=oci,dest=torch.tar \
    --cache-from type=registry,ref=registry.example.com/ml/cache --cache-to type=registry,ref=registry.example.com/ml/cache,mode=max`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, db, c, err := bo.request(cmd, so, mo)
			if err != nil {
				return err
			}
			if req.Registry, err = bo.RegistryOptions.Options(); err != nil {
				return err
			}
			stack, err := db.Resolve(c)
			if err != nil {
				return renderConflict(io.Discard, "table", err)
			}
			req.Stack = stack
			return runBuild(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), bo, req)
		},
	}
	so.AddFlags(cmd.Flags(), true)
	mo.AddFlags(cmd.Flags())
	bo.AddFlags(cmd.Flags())
	return cmd
}

// request merges flags, environment and the config file (in that order of
// precedence) into a build request and the resolver's constraints.
func (o *BuildOptions) request(cmd *cobra.Command, so *StackOptions, mo *MatrixOptions) (builder.Request, *matrix.DB, matrix.Constraints, error) {
	var req builder.Request
	fs := cmd.Flags()
	changed := fs.Changed
	cfg := &builder.Config{}
	if o.ConfigFile != "" {
		var err error
		if cfg, err = builder.LoadConfig(o.ConfigFile); err != nil {
			return req, nil, matrix.Constraints{}, invalid(err, "see docs/build.md for the gpuimg.yaml format")
		}
	}
	pickS := func(flag string, v *string, fromCfg string) {
		if !changed(flag) && fromCfg != "" {
			*v = fromCfg
		}
	}
	pickL := func(flag string, v *[]string, fromCfg []string) {
		if !changed(flag) && len(fromCfg) > 0 {
			*v = fromCfg
		}
	}
	pickS("cuda", &so.CUDA, cfg.CUDA)
	pickS("cudnn", &so.CuDNN, cfg.CuDNN)
	pickS("torch", &so.Torch, cfg.Torch)
	pickS("tensorflow", &so.TensorFlow, cfg.TensorFlow)
	pickS("jax", &so.JAX, cfg.JAX)
	pickS("python", &so.Python, cfg.Python)
	pickS("os", &so.OS, cfg.OS)
	pickS("flavor", &so.Flavor, cfg.Flavor)
	pickS("gpu", &so.GPU, cfg.GPU)
	pickS("driver", &so.Driver, cfg.Driver)
	pickL("matrix-file", &mo.Files, cfg.MatrixFile)
	pickL("pip", &o.Extras.Pip, cfg.Pip)
	pickS("requirements", &o.Extras.Requirements, cfg.Requirements)
	pickL("apt", &o.Extras.Apt, cfg.Apt)
	pickL("copy", &o.Extras.Copy, cfg.Copy)
	pickS("workdir", &o.Extras.Workdir, cfg.Workdir)
	pickL("tag", &o.Tags, cfg.Tag)
	pickL("platform", &o.Platforms, cfg.Platforms)
	pickS("pip-index-url", &o.PipIndexURL, cfg.PipIndexURL)
	pickL("pip-extra-index-url", &o.PipExtraIndexURLs, cfg.PipExtraIndexURLs)
	pickL("pip-trusted-host", &o.PipTrustedHosts, cfg.PipTrustedHosts)
	pickL("cache-from", &o.CacheFrom, cfg.CacheFrom)
	pickL("cache-to", &o.CacheTo, cfg.CacheTo)
	if !changed("push") && cfg.Push {
		o.Push = true
	}
	env := map[string]string{}
	for k, v := range cfg.Env {
		env[k] = v
	}
	flagEnv, err := builder.ParseEnv(o.EnvPairs)
	if err != nil {
		return req, nil, matrix.Constraints{}, invalid(err, "")
	}
	for k, v := range flagEnv {
		env[k] = v
	}
	o.Extras.Env = env
	switch {
	case o.Entrypoint != "" && strings.HasPrefix(strings.TrimSpace(o.Entrypoint), "["):
		if err := json.Unmarshal([]byte(o.Entrypoint), &o.Extras.Entrypoint); err != nil {
			return req, nil, matrix.Constraints{}, invalid(fmt.Errorf("--entrypoint: %w", err), `write it as a JSON array: '["python","-m","app"]'`)
		}
	case o.Entrypoint != "":
		o.Extras.Entrypoint = strings.Fields(o.Entrypoint)
	default:
		o.Extras.Entrypoint = cfg.Entrypoint
	}
	if err := o.Extras.Validate(); err != nil {
		return req, nil, matrix.Constraints{}, invalid(err, "")
	}
	if !changed("builder") && o.Builder == "" {
		o.Builder = os.Getenv("BUILDKIT_HOST")
	}
	mirrors, err := images.ParseMirrors(o.Mirrors)
	if err != nil {
		return req, nil, matrix.Constraints{}, invalid(err, "")
	}
	for reg, m := range cfg.RegistryMirrors {
		if _, ok := mirrors[reg]; !ok && !changed("registry-mirror") {
			more, err := images.ParseMirrors([]string{reg + "=" + m})
			if err != nil {
				return req, nil, matrix.Constraints{}, invalid(fmt.Errorf("%s: %w", o.ConfigFile, err), "")
			}
			for k, v := range more {
				mirrors[k] = v
			}
		}
	}
	var epoch *int64
	sde := o.SourceDateEpoch
	if !changed("source-date-epoch") && sde == "" {
		sde = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if sde != "" {
		n, err := strconv.ParseInt(sde, 10, 64)
		if err != nil || n < 0 {
			return req, nil, matrix.Constraints{}, invalid(fmt.Errorf("source date epoch %q is not a Unix time", sde), "give seconds since 1970, e.g. $(git log -1 --format=%ct)")
		}
		epoch = &n
	}
	switch o.Progress {
	case "auto", "plain", "tty", "rawjson", "quiet":
	default:
		return req, nil, matrix.Constraints{}, invalid(fmt.Errorf("--progress %q", o.Progress), "use auto, plain, tty, rawjson or quiet")
	}
	if err := checkOutput(o.Output, "text", "json"); err != nil {
		return req, nil, matrix.Constraints{}, err
	}
	if o.Push && len(o.Tags) == 0 {
		return req, nil, matrix.Constraints{}, invalid(errors.New("--push needs --tag"), "add -t REGISTRY/REPO:TAG")
	}
	c, err := so.Constraints()
	if err != nil {
		return req, nil, matrix.Constraints{}, err
	}
	db, err := mo.Load()
	if err != nil {
		return req, nil, matrix.Constraints{}, err
	}
	source, revision := gitInfo(o.ContextDir)
	req = builder.Request{
		Extras: o.Extras, ContextDir: o.ContextDir, Platforms: o.Platforms,
		Tags: o.Tags, Push: o.Push, Outputs: o.Outputs, CacheFrom: o.CacheFrom, CacheTo: o.CacheTo,
		Secrets: o.Secrets, Mirrors: mirrors, InsecureRegistries: o.InsecureRegistries,
		PipIndexURL: o.PipIndexURL, PipExtraIndexURLs: o.PipExtraIndexURLs, PipTrustedHosts: o.PipTrustedHosts,
		SourceDateEpoch: epoch, Source: source, Revision: revision, NoCache: o.NoCache,
		Progress: cmd.ErrOrStderr(), ProgressMode: o.Progress,
	}
	return req, db, c, nil
}

// gitInfo reads the origin URL and HEAD commit of the context directory,
// for the OCI source and revision labels; empty outside a git checkout.
func gitInfo(dir string) (source, revision string) {
	out, err := exec.Command("git", "-C", dir, "config", "--get", "remote.origin.url").Output()
	if err == nil {
		source = strings.TrimSpace(string(out))
	}
	out, err = exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err == nil {
		revision = strings.TrimSpace(string(out))
	}
	return source, revision
}

func stateDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "gpuimg")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "gpuimg-state")
	}
	return filepath.Join(home, ".local", "state", "gpuimg")
}

func runBuild(ctx context.Context, stdout, stderr io.Writer, o *BuildOptions, req builder.Request) error {
	fmt.Fprintf(stderr, "gpuimg: stack %s\n", req.Stack.Summary())
	plan, err := builder.Prepare(ctx, req)
	if err != nil {
		return invalid(err, "check the base image's registry (or --registry-mirror) is reachable")
	}
	if o.DockerfileOnly {
		_, err := io.WriteString(stdout, plan.Dockerfile)
		return err
	}
	var cl *client.Client
	if o.Builder == "" {
		local := &builder.Local{StateDir: stateDir(o.StateDir), Mirrors: req.Mirrors, InsecureRegistries: o.InsecureRegistries}
		if cl, err = local.Ensure(ctx); err != nil {
			return invalid(err, "")
		}
	} else if cl, err = builder.Connect(ctx, o.Builder, o.clientOpts()...); err != nil {
		return invalid(err, "start buildkitd there, or drop --builder/BUILDKIT_HOST to let gpuimg start one locally")
	}
	defer cl.Close()
	res, err := builder.Build(ctx, cl, req, plan)
	if err != nil {
		return &Error{Err: err, Code: ExitFailed}
	}
	if o.Output == "json" {
		return writeJSON(stdout, res)
	}
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
}

// clientOpts turns the TLS flags into BuildKit client options.
func (o *BuildOptions) clientOpts() []client.ClientOpt {
	var opts []client.ClientOpt
	if o.TLSCA != "" || o.TLSName != "" {
		opts = append(opts, client.WithServerConfig(o.TLSName, o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		opts = append(opts, client.WithCredentials(o.TLSCert, o.TLSKey))
	}
	return opts
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
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Say whether the local buildkitd runs, and where",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := &builder.Local{StateDir: stateDir(dir)}
			if pid, ok := l.Running(); ok {
				fmt.Fprintf(cmd.OutOrStdout(), "running: pid %d at %s (state %s)\n", pid, l.Address(), l.StateDir)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "not running (state %s); gpuimg build starts it\n", l.StateDir)
			return nil
		},
	}, &cobra.Command{
		Use:   "stop",
		Short: "Stop the local buildkitd (its cache stays)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := &builder.Local{StateDir: stateDir(dir)}
			return l.Stop(cmd.Context())
		},
	})
	return cmd
}

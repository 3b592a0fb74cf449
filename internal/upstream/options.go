package upstream

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/images"
)

// Source is one upstream a run reads.
type Source string

// The sources Update knows, in the order it reads them.
const (
	// SourceTorch is PyTorch's all-variants wheel index (torch,
	// torchvision, torchaudio pages) and each wheel's core metadata.
	SourceTorch Source = "torch"
	// SourceTorchPyPI is PyPI's simple page for torch (PEP 503) and the
	// core metadata (PEP 658/714) of each release's Linux x86_64 wheel:
	// which CUDA variant plain "pip install torch==X" gets.
	SourceTorchPyPI Source = "torch-pypi"
	// SourceJAX is PyPI's JSON API for jax and its jax-cudaNN-plugin wheels.
	SourceJAX Source = "jax"
	// SourceTensorFlow is PyPI's JSON API for tensorflow and its
	// [and-cuda] extra's nvidia-* pins.
	SourceTensorFlow Source = "tensorflow"
	// SourceCUDA is NVIDIA's redistrib_X.Y.Z.json manifests.
	SourceCUDA Source = "cuda"
	// SourceCuDNN is cuDNN's redistrib_X.Y.Z.json manifests.
	SourceCuDNN Source = "cudnn"
	// SourceNCCL is NVIDIA's NCCL redist directory (vX.Y.Z/ listings of
	// nccl_X.Y.Z-1+cudaA.B builds).
	SourceNCCL Source = "nccl"
	// SourceImages is the tags of NVIDIA's CUDA image repository and the
	// config env of each new release's images.
	SourceImages Source = "images"
)

// Sources lists every source in reading order.
var Sources = []Source{SourceTorch, SourceTorchPyPI, SourceJAX, SourceTensorFlow, SourceCUDA, SourceCuDNN, SourceNCCL, SourceImages}

// ParseSources reads a comma-separated list such as "torch,cuda".
func ParseSources(s string) ([]Source, error) {
	var out []Source
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(strings.ToLower(f))
		if f == "" {
			continue
		}
		if !slices.Contains(Sources, Source(f)) {
			return nil, fmt.Errorf("unknown upstream source %q (known: %s)", f, joinSources(Sources))
		}
		if !slices.Contains(out, Source(f)) {
			out = append(out, Source(f))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no upstream source named in %q (known: %s)", s, joinSources(Sources))
	}
	return out, nil
}

func joinSources(ss []Source) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

// Default upstream locations.
const (
	DefaultTorchIndexURL  = "https://download.pytorch.org/whl"
	DefaultPyPIURL        = "https://pypi.org"
	DefaultCUDARedistURL  = "https://developer.download.nvidia.com/compute/cuda/redist"
	DefaultCuDNNRedistURL = "https://developer.download.nvidia.com/compute/cudnn/redist"
	DefaultNCCLRedistURL  = "https://developer.download.nvidia.com/compute/redist/nccl"
)

// Option configures Update.
type Option func(*options) error

type options struct {
	client        *http.Client
	remote        []images.Option
	mirrors       images.Mirrors
	imageRepoName string
	torchURL      string
	pypiURL       string
	cudaURL       string
	cudnnURL      string
	ncclURL       string
	archs         ArchScanner
	sources       []Source
	now           func() time.Time
	progress      func(Source, string)
	userAgent     string
}

func makeOptions(opts []Option) (*options, error) {
	o := &options{
		client:        http.DefaultClient,
		imageRepoName: DefaultCUDAImageRepo,
		torchURL:      DefaultTorchIndexURL,
		pypiURL:       DefaultPyPIURL,
		cudaURL:       DefaultCUDARedistURL,
		cudnnURL:      DefaultCuDNNRedistURL,
		ncclURL:       DefaultNCCLRedistURL,
		sources:       Sources,
		now:           time.Now,
		progress:      func(Source, string) {},
		userAgent:     "gpuimg-matrix-update",
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func baseURL(what, s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s %q is not an http(s) URL", what, s)
	}
	return strings.TrimRight(s, "/"), nil
}

// WithHTTPClient sets the client every request goes through (proxies,
// TLS, timeouts). The default is http.DefaultClient.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("nil HTTP client")
		}
		o.client = c
		return nil
	}
}

// WithTorchIndexURL sets the base of PyTorch's wheel index: BASE/torch/
// is the all-variants page and BASE/cuXYZ the per-variant index rows
// point pip at. The default is DefaultTorchIndexURL.
func WithTorchIndexURL(s string) Option {
	return func(o *options) (err error) { o.torchURL, err = baseURL("torch index URL", s); return err }
}

// WithPyPIURL sets the PyPI host whose JSON API (BASE/pypi/NAME/json)
// and simple pages (BASE/simple/NAME/, with PEP 658 core metadata) are
// read. The default is DefaultPyPIURL.
func WithPyPIURL(s string) Option {
	return func(o *options) (err error) { o.pypiURL, err = baseURL("PyPI URL", s); return err }
}

// WithCUDARedistURL sets the directory holding redistrib_X.Y.Z.json
// manifests; its listing names them. The default is DefaultCUDARedistURL.
func WithCUDARedistURL(s string) Option {
	return func(o *options) (err error) { o.cudaURL, err = baseURL("CUDA redist URL", s); return err }
}

// WithCuDNNRedistURL sets the directory holding cuDNN's
// redistrib_X.Y.Z.json manifests. The default is DefaultCuDNNRedistURL.
func WithCuDNNRedistURL(s string) Option {
	return func(o *options) (err error) { o.cudnnURL, err = baseURL("cuDNN redist URL", s); return err }
}

// WithNCCLRedistURL sets NVIDIA's NCCL redist directory, whose vX.Y.Z/
// subdirectories hold the builds. The default is DefaultNCCLRedistURL.
func WithNCCLRedistURL(s string) Option {
	return func(o *options) (err error) { o.ncclURL, err = baseURL("NCCL redist URL", s); return err }
}

// WithSources limits the sources read. The default is all of Sources.
func WithSources(ss ...Source) Option {
	return func(o *options) error {
		if len(ss) == 0 {
			return fmt.Errorf("no upstream source selected")
		}
		for _, s := range ss {
			if !slices.Contains(Sources, s) {
				return fmt.Errorf("unknown upstream source %q", s)
			}
		}
		o.sources = ss
		return nil
	}
}

// WithClock sets the clock whose date rows record as "retrieved". The
// default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) error { o.now = now; return nil }
}

// WithProgress receives one line per step of each source (what is being
// read). It is called from Update's goroutine only. The default discards.
func WithProgress(fn func(src Source, msg string)) Option {
	return func(o *options) error {
		if fn != nil {
			o.progress = fn
		}
		return nil
	}
}

// WithRegistry sets how the images source reaches registries: mirrors
// (docker.io=HOST) to read through instead of the registry itself, and the
// images options (credentials, CA file, insecure registries, retries). The
// default is no mirror and images' defaults (Docker's credentials).
func WithRegistry(mirrors images.Mirrors, opts ...images.Option) Option {
	return func(o *options) error { o.remote, o.mirrors = opts, mirrors; return nil }
}

// WithCUDAImageRepo sets the repository whose tags the images source
// lists. The default is DefaultCUDAImageRepo.
func WithCUDAImageRepo(repo string) Option {
	return func(o *options) error {
		if repo == "" {
			return fmt.Errorf("empty CUDA image repository")
		}
		o.imageRepoName = repo
		return nil
	}
}

// ArchScanner reads a shared library's bytes to their end and returns the
// GPU architectures it holds SASS and PTX for. gpuimg's is the fat-binary
// scanner of validate (validate.ScanFatbin), which the caller passes in:
// the matrix packages do not import validate.
type ArchScanner func(r io.Reader) (sass, ptx []string, err error)

// WithWheelArchs makes the torch source read each new variant's compiled
// architectures from its wheel's torch/lib/libtorch_cuda.so with scan,
// fetching through HTTP range requests only the zip's end records, its
// central directory and that one member (wheelarchs.go). The default
// (nil) copies the list of the nearest older release's variant for the
// same CUDA, with a note saying so.
func WithWheelArchs(scan ArchScanner) Option {
	return func(o *options) error { o.archs = scan; return nil }
}

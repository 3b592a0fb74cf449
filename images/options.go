package images

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Option configures how a verb of this package reaches registries and what
// it does: every verb that touches a registry (Open, PinBase, Copy, Export,
// Convert, List, Delete, Attach, Referrers, Promote) takes the same options,
// and ignores those that do not apply to it. Options may be given in any
// order; conflicting ones are rejected once all are applied.
type Option func(*options) error

// options is what the Options set; makeOptions fills in the defaults.
type options struct {
	keychain      authn.Keychain
	transport     http.RoundTripper
	insecureAll   bool
	insecureHosts map[string]bool
	caFile        string
	backoff       remote.Backoff
	retries       *int
	userAgent     string
	platform      *v1.Platform
	jobs          int
	progress      *progressSink
	dryRun        bool
	readOnce      bool
	noReferrers   bool
	tempDir       string
	prioritized   []string
	headerTimeout time.Duration
	stallTimeout  time.Duration
	layerCheck    LayerCheck

	// rt is the transport with the TLS settings applied (CA file,
	// insecure hosts) under the bounds on redirects and waits
	// (boundedTransport); ggcr's remote adds retries, the user agent and
	// authentication on top.
	rt http.RoundTripper
}

// Defaults, in one place.
const (
	defaultJobs      = 4
	defaultUserAgent = "gpuimg"
)

// defaultBackoff tries 6 times over about 8 s.
var defaultBackoff = remote.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 6}

// retryStatusCodes are the answers worth trying again when checking for
// blobs: 408, 429 and 5xx that say "later", not "never" (remote's own list
// is the same plus 499 and 522).
var retryStatusCodes = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}

func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		keychain:  authn.DefaultKeychain,
		transport: remote.DefaultTransport,
		backoff:   defaultBackoff,
		userAgent: defaultUserAgent,
		jobs:      defaultJobs,

		headerTimeout: defaultHeaderTimeout,
		stallTimeout:  defaultStallTimeout,
	}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.retries != nil {
		o.backoff.Steps = *o.retries + 1
	}
	rt, err := o.tlsTransport()
	if err != nil {
		return nil, err
	}
	o.rt = &boundedTransport{next: rt, header: o.headerTimeout, stall: o.stallTimeout}
	return o, nil
}

// WithKeychain sets where credentials come from. The default is Docker's
// config.json and credential helpers (authn.DefaultKeychain), as written by
// docker login.
func WithKeychain(k authn.Keychain) Option {
	return func(o *options) error {
		if k == nil {
			return errors.New("registry options: nil keychain")
		}
		o.keychain = k
		return nil
	}
}

// WithTransport replaces the HTTP transport under retries, the user agent
// and authentication. WithCAFile and WithInsecure need it to be an
// *http.Transport, which they clone. The default is
// go-containerregistry's remote.DefaultTransport.
func WithTransport(t http.RoundTripper) Option {
	return func(o *options) error {
		if t == nil {
			return errors.New("registry options: nil transport")
		}
		o.transport = t
		return nil
	}
}

// WithInsecure lets gpuimg reach every registry over plain HTTP and accept
// any TLS certificate. The default is off: HTTPS with verified
// certificates, except that loopback registries may use plain HTTP.
func WithInsecure(insecure bool) Option {
	return func(o *options) error {
		o.insecureAll = insecure
		return nil
	}
}

// WithInsecureRegistries lets gpuimg reach the named registries (host or
// host:port, as in image references; a bare host covers every port) over
// plain HTTP and accept any TLS certificate from them. Calls add up. The
// default is none.
func WithInsecureRegistries(hosts ...string) Option {
	return func(o *options) error {
		for _, h := range hosts {
			h = strings.TrimSpace(h)
			if h == "" || strings.Contains(h, "/") {
				return fmt.Errorf("insecure registry %q: want a host or host:port", h)
			}
			if o.insecureHosts == nil {
				o.insecureHosts = map[string]bool{}
			}
			o.insecureHosts[canonicalRegistry(h)] = true
		}
		return nil
	}
}

// WithCAFile trusts the PEM certificates in file in addition to the
// system's roots (a private registry's CA). The default is the system's
// roots only.
func WithCAFile(file string) Option {
	return func(o *options) error {
		o.caFile = file
		return nil
	}
}

// WithRetryBackoff sets how transient failures (connection resets,
// timeouts, 408, 429, 5xx) are retried; Steps counts the tries, so 1 does
// not retry. The default tries 6 times, waiting 250 ms, then twice as long
// each time (about 8 s in all).
func WithRetryBackoff(b remote.Backoff) Option {
	return func(o *options) error {
		if b.Steps < 1 {
			return fmt.Errorf("retry backoff: %d steps; give 1 (no retries) or more", b.Steps)
		}
		o.backoff = b
		return nil
	}
}

// WithRetries sets how often a transient failure is retried after the
// first try, with the backoff's waits; 0 does not retry. It overrides the
// Steps of WithRetryBackoff whatever the order. The default is 5.
func WithRetries(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("retries %d: give 0 or more", n)
		}
		o.retries = &n
		return nil
	}
}

// WithUserAgent sets the product that requests name in User-Agent, before
// go-containerregistry's own ("gpuimg/v1.2.0 go-containerregistry/v0.22.1").
// The default is "gpuimg".
func WithUserAgent(ua string) Option {
	return func(o *options) error {
		o.userAgent = ua
		return nil
	}
}

// WithPlatform selects one platform of a multi-platform index: Copy copies
// only that image (a new digest), the other verbs read it; nil keeps the
// default. The default is none: Copy and Export keep a whole index, and
// verbs that need one image (Open, PinBase, Convert, Export as
// docker-archive) take linux/amd64.
func WithPlatform(p *v1.Platform) Option {
	return func(o *options) error {
		o.platform = p
		return nil
	}
}

// WithJobs sets how many blobs move at once per destination. The default
// is 4.
func WithJobs(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("jobs %d: give a positive number", n)
		}
		o.jobs = n
		return nil
	}
}

// WithProgress hands fn how far the long reads and writes have come:
// the layers of an image Open opened (validate, sbom, export and
// convert read them all) and every push (Copy, Import, Convert), one
// call at a time. The default is silent.
func WithProgress(fn func(Progress)) Option {
	sink := newProgressSink(fn) // one sum, however many times the options are made
	return func(o *options) error {
		o.progress = sink
		return nil
	}
}

// WithDryRun makes Copy say what would move without writing anything. The
// default is off.
func WithDryRun(dryRun bool) Option {
	return func(o *options) error {
		o.dryRun = dryRun
		return nil
	}
}

// WithReadSourceOnce makes Copy download each source blob once, into a
// temporary spool under the temporary directory, and upload it to every
// destination from there: one read of the source instead of one per
// destination (for metered or slow links to the source), at the cost of
// local disk and of overlapping less work. The default is off: each
// destination streams from the source directly.
func WithReadSourceOnce(once bool) Option {
	return func(o *options) error {
		o.readOnce = once
		return nil
	}
}

// WithReferrers says whether Copy carries the referrers of each manifest
// it copies along (signatures, attestations, SBOMs, validation reports:
// copyReferrers). The default is on.
func WithReferrers(on bool) Option {
	return func(o *options) error {
		o.noReferrers = !on
		return nil
	}
}

// WithTempDir sets where unpacked archives (Open), recompressed layers
// (Convert) and spooled blobs (Copy) go. The default is os.TempDir().
func WithTempDir(dir string) Option {
	return func(o *options) error {
		o.tempDir = dir
		return nil
	}
}

// WithPrioritizedFiles lists files (paths in the image, such as
// usr/bin/python3.13, as a start trace records them) that Convert to
// eStargz puts first in each layer that has them, followed by the prefetch
// landmark, so that stargz-snapshotter fetches them before the container
// starts. Files a layer does not have are skipped. Other compressions
// ignore it. The default is none: no layer is prefetched.
func WithPrioritizedFiles(files ...string) Option {
	return func(o *options) error {
		o.prioritized = append(o.prioritized, files...)
		return nil
	}
}

// insecure says whether a registry (host[:port]) may be reached over plain
// HTTP with unverified TLS.
func (o *options) insecure(host string) bool {
	if o.insecureAll {
		return true
	}
	host = canonicalRegistry(host)
	if o.insecureHosts[host] {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		return o.insecureHosts[h]
	}
	return false
}

// parse parses a registry reference (docker:// allowed). Loopback
// registries and insecure ones may be reached over plain HTTP.
func (o *options) parse(s string) (name.Reference, error) {
	s = strings.TrimPrefix(s, "docker://")
	ref, err := name.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", bound.Quote(s), bound.Short(err))
	}
	if host := ref.Context().RegistryStr(); o.insecure(host) || IsLoopback(host) {
		ref, err = name.ParseReference(s, name.Insecure)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", bound.Quote(s), bound.Short(err))
		}
	}
	return ref, nil
}

// platformOr is the platform asked for, or def.
func (o *options) platformOr(def v1.Platform) v1.Platform {
	if o.platform != nil {
		return *o.platform
	}
	return def
}

var linuxAMD64 = v1.Platform{OS: "linux", Architecture: "amd64"}

// remote is the go-containerregistry options for one operation.
func (o *options) remote(ctx context.Context, extra ...remote.Option) []remote.Option {
	opts := []remote.Option{
		remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain), remote.WithTransport(o.rt),
		remote.WithRetryBackoff(o.backoff), remote.WithUserAgent(o.userAgent), remote.WithJobs(o.jobs),
	}
	if o.platform != nil {
		opts = append(opts, remote.WithPlatform(*o.platform))
	}
	return append(opts, extra...)
}

// client is an authenticated HTTP client for one repository, with the same
// transport, retries and user agent as remote's, for requests remote has
// no call for (HEAD of a blob).
func (o *options) client(ctx context.Context, repo name.Repository, scopes ...string) (*http.Client, error) {
	auth, err := o.keychain.Resolve(repo.Registry)
	if err != nil {
		return nil, err
	}
	rt := transport.NewRetry(o.rt, transport.WithRetryBackoff(o.backoff), transport.WithRetryPredicate(transient),
		transport.WithRetryStatusCodes(retryStatusCodes...))
	rt = transport.NewUserAgent(rt, o.userAgent)
	rt, err = transport.NewWithContext(ctx, repo.Registry, auth, rt, scopes)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt}, nil
}

// tlsTransport applies the CA file and the insecure registries to the
// transport.
func (o *options) tlsTransport() (http.RoundTripper, error) {
	if o.caFile == "" && !o.insecureAll && len(o.insecureHosts) == 0 {
		return o.transport, nil
	}
	ht, ok := o.transport.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("registry options: a CA file or insecure registries need an *http.Transport to set TLS on, not %T; configure TLS on your transport instead", o.transport)
	}
	secure := ht.Clone()
	if secure.TLSClientConfig == nil {
		secure.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if o.caFile != "" {
		pem, err := bound.ReadFile(o.caFile, "", bound.MaxUserFile)
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", o.caFile)
		}
		secure.TLSClientConfig.RootCAs = pool
	}
	if o.insecureAll {
		secure.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // asked for with --insecure
		return secure, nil
	}
	if len(o.insecureHosts) == 0 {
		return secure, nil
	}
	unverified := secure.Clone()
	unverified.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // asked for with --insecure-registry
	return &hostTransport{o: o, secure: secure, unverified: unverified}, nil
}

// hostTransport skips TLS verification for the insecure registries only.
type hostTransport struct {
	o                  *options
	secure, unverified http.RoundTripper
}

func (h *hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.o.insecure(r.URL.Host) {
		return h.unverified.RoundTrip(r)
	}
	return h.secure.RoundTrip(r)
}

// PlainHTTP reports whether the registry of ref (a registry reference) may
// be reached over plain HTTP: a loopback registry, or an insecure one
// (WithInsecure, WithInsecureRegistries). A container engine told to pull
// the same image needs to be told the same.
func PlainHTTP(ref string, opts ...Option) (bool, error) {
	o, r, err := prepare(ref, opts)
	if err != nil {
		return false, err
	}
	host := r.Context().RegistryStr()
	return o.insecure(host) || IsLoopback(host), nil
}

// prepare applies opts and parses ref with them: the first step of every
// verb that names a registry image.
func prepare(ref string, opts []Option) (*options, name.Reference, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, nil, err
	}
	if lr, err := ParseRef(ref); err == nil && lr.Transport != Registry {
		// Not a registry name that happens to contain a colon.
		return nil, nil, fmt.Errorf("%s names a local image (%s:), and this works on registry images; images copy, export, convert and import and validate read local ones", ref, lr.Transport)
	}
	r, err := o.parse(ref)
	if err != nil {
		return nil, nil, err
	}
	return o, r, nil
}

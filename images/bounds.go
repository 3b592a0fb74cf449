package images

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Bounds on what a registry can make gpuimg spend (docs/faults.md lists
// them with their flags). go-containerregistry follows redirects without
// Go's limit of 10 and waits for a registry as long as the context lets
// it; boundedTransport, under its retries and authentication, restores
// both.
const (
	// maxRedirects is how many redirects one request may follow, Go's own
	// limit (net/http.Client without CheckRedirect).
	maxRedirects = 10
	// defaultHeaderTimeout is how long a registry may take to start its
	// answer once the request is sent.
	defaultHeaderTimeout = 60 * time.Second
	// defaultStallTimeout is how long a request may go without a byte
	// sent, or an answer without 1 KiB received.
	defaultStallTimeout = 60 * time.Second
)

// ErrRegistryStalled is wrapped by the errors of requests a registry
// never answered, or whose answer (or upload) stopped moving, for longer
// than the bound.
var ErrRegistryStalled = errors.New("the registry stopped answering")

// ErrBound is wrapped by the errors of inputs that exceed one of the
// bounds of docs/faults.md (sizes, counts, redirects): the input is
// refused, not read further.
var ErrBound = bound.ErrBound

// WithResponseHeaderTimeout sets how long a registry may take to start
// answering a request once it is sent (0: no limit). The default is 60 s.
func WithResponseHeaderTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("response header timeout %s: give 0 (none) or more", d)
		}
		o.headerTimeout = d
		return nil
	}
}

// WithStallTimeout sets how long a request body being sent may go without
// a byte taken, or an answer being read without 1 KiB coming (0: no
// limit); time the caller spends between reads of an answer does not
// count once 1 KiB has come. The default is 60 s.
func WithStallTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("stall timeout %s: give 0 (none) or more", d)
		}
		o.stallTimeout = d
		return nil
	}
}

// boundedTransport limits redirects and bounds each request's waits with
// a watchdog.
type boundedTransport struct {
	next          http.RoundTripper
	header, stall time.Duration
	configs       sync.Map // digests of the configs of manifests read
}

func (b *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if n := redirects(req); n >= maxRedirects {
		return nil, fmt.Errorf("%s %s: %w: stopped after %d redirects (the registry redirects in a loop; the limit is fixed)", req.Method, req.URL.Redacted(), ErrBound, n)
	}
	if b.header <= 0 && b.stall <= 0 {
		resp, err := b.next.RoundTrip(req)
		if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		return b.capSmall(req, resp)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{cancel: cancel, url: req.URL.Redacted()}
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &sendBody{ReadCloser: req.Body, w: w, b: b}
		w.arm(b.stall, "no byte of the request was taken")
	} else {
		w.arm(b.header, "no answer")
	}
	resp, err := b.next.RoundTrip(req)
	w.disarm()
	if err != nil {
		err = w.explain(err)
		cancel(err)
		return nil, err
	}
	resp.Body = &recvBody{ReadCloser: resp.Body, w: w, stall: b.stall}
	if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		return b.capSmall(req, resp)
	}
	return resp, nil
}

// capSmall bounds the answers that are read into memory whole: a
// manifest or index, and a config blob (one a manifest read through this
// transport named), at bound.MaxManifest (4 MiB, as containers/image). A
// manifest is read here, so its config is known when it is fetched.
func (b *boundedTransport) capSmall(req *http.Request, resp *http.Response) (*http.Response, error) {
	u := originalURL(req)
	var what string
	switch dir, last := path.Split(u.Path); {
	case strings.HasSuffix(dir, "/manifests/"):
		what = "manifest " + last
	case strings.HasSuffix(dir, "/blobs/") && b.isConfig(last):
		what = "config " + last
	default:
		return resp, nil
	}
	what += " at " + u.Host
	if resp.ContentLength > bound.MaxManifest {
		resp.Body.Close()
		return nil, bound.TooBig(what, resp.ContentLength, bound.MaxManifest)
	}
	if strings.HasPrefix(what, "config ") {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: bound.MaxManifest, what: what}
		return resp, nil
	}
	raw, err := bound.ReadAll(resp.Body, what, bound.MaxManifest)
	resp.Body.Close()
	if errors.Is(err, bound.ErrBound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	var m struct {
		Config struct{ Digest string } `json:"config"`
	}
	if json.Unmarshal(raw, &m) == nil && m.Config.Digest != "" {
		b.configs.Store(m.Config.Digest, true)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	return resp, nil
}

func (b *boundedTransport) isConfig(digest string) bool {
	_, ok := b.configs.Load(digest)
	return ok
}

// originalURL is the URL asked for before any redirect.
func originalURL(req *http.Request) *url.URL {
	for req.Response != nil && req.Response.Request != nil {
		req = req.Response.Request
	}
	return req.URL
}

// cappedBody fails once more than left bytes have come.
type cappedBody struct {
	io.ReadCloser
	left int64
	what string
}

func (c *cappedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, bound.TooBig(c.what, bound.MaxManifest-c.left, bound.MaxManifest)
	}
	return n, err
}

// redirects counts the redirects that led to req (net/http sets
// req.Response on each request a redirect made).
func redirects(req *http.Request) int {
	n := 0
	for r := req.Response; r != nil && r.Request != nil && n <= maxRedirects; r = r.Request.Response {
		n++
	}
	return n
}

// watchdog cancels one request when its timer fires, remembering why.
type watchdog struct {
	mu     sync.Mutex
	t      *time.Timer
	cancel context.CancelCauseFunc
	url    string
	why    error
}

// arm starts (or restarts) the timer; d <= 0 leaves it stopped. why
// says what did not happen in time.
func (w *watchdog) arm(d time.Duration, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Stop()
	}
	if d <= 0 {
		return
	}
	w.t = time.AfterFunc(d, func() {
		w.mu.Lock()
		w.why = fmt.Errorf("%s: %w: %s in %s; raise --registry-header-timeout or --registry-stall-timeout if the registry is only slow",
			w.url, ErrRegistryStalled, why, d)
		w.mu.Unlock()
		w.cancel(w.why)
	})
}

func (w *watchdog) disarm() { w.arm(0, "") }

// explain replaces the error of a request the watchdog cancelled with the
// reason.
func (w *watchdog) explain(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.why != nil && err != nil && !errors.Is(err, io.EOF) {
		return w.why
	}
	return err
}

// sendBody is a request body: the stall timer runs while the transport
// writes what it read, and the header timer starts at its end.
type sendBody struct {
	io.ReadCloser
	w *watchdog
	b *boundedTransport
}

func (s *sendBody) Read(p []byte) (int, error) {
	s.w.disarm()
	n, err := s.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		s.w.arm(s.b.header, "no answer")
	} else {
		s.w.arm(s.b.stall, "no byte of the request was taken")
	}
	return n, err
}

// recvBody is an answer's body: the stall timer runs while Reads wait
// for the registry, and stops each time stallProgress bytes have come (or
// the end), so a registry that trickles a byte now and then stalls too.
type recvBody struct {
	io.ReadCloser
	w     *watchdog
	stall time.Duration
	armed bool
	moved int
}

// stallProgress is how many bytes must come within the stall timeout.
const stallProgress = 1024

func (r *recvBody) Read(p []byte) (int, error) {
	if !r.armed {
		r.w.arm(r.stall, "less than 1 KiB of the answer came")
		r.armed = true
	}
	n, err := r.ReadCloser.Read(p)
	r.moved += n
	if r.moved >= stallProgress || err != nil {
		r.w.disarm()
		r.armed, r.moved = false, 0
	}
	return n, r.w.explain(err)
}

func (r *recvBody) Close() error {
	r.w.disarm()
	err := r.ReadCloser.Close()
	r.w.cancel(context.Canceled)
	return err
}

package testenv

import (
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// FaultProxy is a reverse proxy on 127.0.0.1 in front of a real server (a
// registry, a pip index) that lets a test fail, hold or count chosen
// requests while everything else reaches the server unchanged. The Host
// header is passed on, so a registry's upload locations point back at the
// proxy.
type FaultProxy struct {
	// Host is the proxy's host:port; URL is http://Host.
	Host, URL string

	srv  *http.Server
	mu   sync.Mutex
	rule Rule
}

// Rule sees each request first. It returns true when it answered the
// request itself (a fault), false to pass it on. Rules run concurrently.
type Rule func(w http.ResponseWriter, r *http.Request) bool

// StartFaultProxy starts a proxy in front of target (http://host:port).
// Close stops it.
func StartFaultProxy(target string) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{Host: l.Addr().String(), URL: "http://" + l.Addr().String()}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		rule := p.rule
		p.mu.Unlock()
		if rule != nil && rule(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// SetRule sets the rule for the requests that follow; nil passes all on.
func (p *FaultProxy) SetRule(r Rule) {
	p.mu.Lock()
	p.rule = r
	p.mu.Unlock()
}

// Close stops the proxy and cuts its open connections.
func (p *FaultProxy) Close() error {
	err := p.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Hold is a rule's answer that keeps a request open until the client
// gives up (its context ends), release is closed, or max passes; then it
// fails the request with 503. It sends r on held, if not nil, without
// blocking, and returns whether the client gave up.
func Hold(w http.ResponseWriter, r *http.Request, held chan<- *http.Request, release <-chan struct{}, max time.Duration) (clientGone bool) {
	if held != nil {
		select {
		case held <- r:
		default:
		}
	}
	select {
	case <-r.Context().Done():
		return true
	case <-release:
	case <-time.After(max):
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	return false
}

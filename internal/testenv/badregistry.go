package testenv

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Misbehavior is how a BadRegistry misbehaves.
type Misbehavior string

// The misbehaviors of docs/faults.md's registry rows.
const (
	// RedirectLoop answers every blob request with a redirect to the same
	// blob (a new query each time, so the URLs differ).
	RedirectLoop Misbehavior = "redirect-loop"
	// SelfPagination answers /tags/list with one tag and a Link
	// rel="next" to the same page.
	SelfPagination Misbehavior = "self-pagination"
	// EndlessPages answers /tags/list with a Link to a new page each time.
	EndlessPages Misbehavior = "endless-pages"
	// EndlessTags streams a tag list that never ends.
	EndlessTags Misbehavior = "endless-tags"
	// NoHeaders accepts every request but /v2/ and never answers.
	NoHeaders Misbehavior = "no-headers"
	// Trickle answers every request but /v2/ with 200 and one byte every
	// 200 ms, without end.
	Trickle Misbehavior = "trickle"
	// EndlessBlobs answers every blob GET with 200 and bytes without end
	// and without a Content-Length (a config declared as 50 GiB and
	// streamed, or a layer declared as 1 TiB).
	EndlessBlobs Misbehavior = "endless-blobs"
	// ChunkedBlobs serves blobs as the good registry does, but chunked,
	// without a Content-Length (so a manifest's declared size is all a
	// client knows).
	ChunkedBlobs Misbehavior = "chunked-blobs"
	// ServerErrors answers every request but /v2/ with 500.
	ServerErrors Misbehavior = "500s"
)

// BadRegistry is an in-process registry (go-containerregistry's) on
// 127.0.0.1 that misbehaves one way: tests push images to it, switch the
// misbehavior on (Set) and check that gpuimg gives up within its bounds.
// Held requests end when the client goes, or after a minute.
type BadRegistry struct {
	// Host is host:port.
	Host string

	srv      *http.Server
	mode     atomic.Value // Misbehavior
	requests atomic.Int64
}

// StartBadRegistry starts a registry that behaves until Set. Close stops it.
func StartBadRegistry() (*BadRegistry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &BadRegistry{Host: l.Addr().String()}
	b.mode.Store(Misbehavior(""))
	good := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	b.srv = &http.Server{Handler: b.handler(good), ReadHeaderTimeout: 10 * time.Second}
	go b.srv.Serve(l) //nolint:errcheck // ends with Close
	return b, nil
}

// Set switches the misbehavior ("" behaves).
func (b *BadRegistry) Set(m Misbehavior) { b.mode.Store(m) }

// Requests is how many requests the registry saw while misbehaving.
func (b *BadRegistry) Requests() int64 { return b.requests.Load() }

// Close stops the registry, dropping held requests.
func (b *BadRegistry) Close() error { return b.srv.Close() }

func (b *BadRegistry) handler(good http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := b.mode.Load().(Misbehavior)
		if m == "" || r.URL.Path == "/v2/" {
			good.ServeHTTP(w, r)
			return
		}
		b.requests.Add(1)
		if m == ChunkedBlobs && strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			good.ServeHTTP(chunked{w}, r)
			return
		}
		if !misbehave(m, w, r) {
			good.ServeHTTP(w, r)
		}
	})
}

// misbehave answers r as m would; false passes it to the good registry.
func misbehave(m Misbehavior, w http.ResponseWriter, r *http.Request) bool {
	tags := strings.HasSuffix(r.URL.Path, "/tags/list")
	switch m {
	case RedirectLoop:
		if !strings.Contains(r.URL.Path, "/blobs/") {
			return false
		}
		http.Redirect(w, r, fmt.Sprintf("%s?n=%d", r.URL.Path, time.Now().UnixNano()), http.StatusTemporaryRedirect)
	case SelfPagination, EndlessPages:
		if !tags {
			return false
		}
		next := r.URL.Path
		if m == EndlessPages {
			next = fmt.Sprintf("%s?last=t%d", r.URL.Path, time.Now().UnixNano())
		}
		w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", next))
		fmt.Fprint(w, `{"name":"x","tags":["t"]}`)
	case EndlessTags:
		if !tags {
			return false
		}
		endless(w, r, `{"name":"x","tags":["t"`, `,"t"`, 0)
	case EndlessBlobs:
		if !strings.Contains(r.URL.Path, "/blobs/") || r.Method != http.MethodGet {
			return false
		}
		endless(w, r, "", "\x00", 0)
	case NoHeaders:
		hold(r, time.Minute)
	case Trickle:
		endless(w, r, "", "{", 200*time.Millisecond)
	case ServerErrors:
		http.Error(w, "internal error", http.StatusInternalServerError)
	default:
		return false
	}
	return true
}

// endless writes head, then item every gap, until the client goes or a
// minute (or 1 GiB) has passed.
func endless(w http.ResponseWriter, r *http.Request, head, item string, gap time.Duration) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, head) //nolint:errcheck // the client may go
	chunk := strings.Repeat(item, 1+4096/len(item))
	if gap > 0 {
		chunk = item
	}
	deadline := time.Now().Add(time.Minute)
	for sent := 0; sent < 1<<30 && time.Now().Before(deadline); sent += len(chunk) {
		if _, err := io.WriteString(w, chunk); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(gap):
		}
	}
}

// hold keeps r unanswered until its client goes or max passes.
func hold(r *http.Request, max time.Duration) {
	select {
	case <-r.Context().Done():
	case <-time.After(max):
	}
}

// chunked drops Content-Length, so the answer is sent chunked.
type chunked struct{ http.ResponseWriter }

func (c chunked) WriteHeader(code int) {
	c.Header().Del("Content-Length")
	c.ResponseWriter.WriteHeader(code)
}

func (c chunked) Write(p []byte) (int, error) {
	c.Header().Del("Content-Length")
	return c.ResponseWriter.Write(p)
}

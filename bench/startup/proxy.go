package main

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Link is the network between a node and a registry, as the proxy models
// it:
//
//   - one shared bottleneck of Rate bytes per second from the registry to
//     the node (a token bucket with a burst of 10 ms of traffic, at least
//     one 32 KiB chunk), shared by every connection, as one NIC or one
//     long-haul path is;
//   - a one-way delay of RTT/2 on every chunk in each direction, so a
//     request and its response cost one RTT, as on a real path;
//   - one RTT more before a new connection carries data (the TCP
//     handshake).
//
// It does not model TCP slow start, loss or per-connection windows:
// every connection gets its share of Rate at once.
type Link struct {
	Name string
	Rate float64 // bytes per second, registry → node
	RTT  time.Duration
}

// chunk is what the proxy forwards at a time.
const chunk = 32 << 10

// bucket is a token bucket of rate bytes per second. Its burst (10 ms of
// traffic) absorbs the sleeps' overshoot, which at 1 Gbit/s is as long as
// a chunk takes.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// take waits until n bytes may pass.
func (b *bucket) take(n int) {
	b.mu.Lock()
	now := time.Now()
	b.tokens = min(b.tokens+now.Sub(b.last).Seconds()*b.rate, b.burst)
	b.last = now
	b.tokens -= float64(n)
	wait := time.Duration(0)
	if b.tokens < 0 {
		wait = time.Duration(-b.tokens / b.rate * float64(time.Second))
	}
	b.mu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
}

// Proxy forwards TCP connections from a loopback port to target through
// a Link. Safe for concurrent use.
type Proxy struct {
	ln      net.Listener
	target  string
	link    Link
	down    *bucket
	bytes   atomic.Int64 // registry → node, all connections
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	nconn   int
	fetches []*Fetch // every request seen, in order of arrival (under mu)
	start   time.Time
}

// Fetch is one HTTP request that went through the proxy and its response:
// when it was sent, when its response's first and last byte reached the
// node, and how many bytes the response carried. It attributes the
// response bytes of a connection to the last request sent on it (Go's
// HTTP/1.1 clients do not pipeline).
type Fetch struct {
	Conn      int           `json:"conn"`
	Method    string        `json:"method"`
	Path      string        `json:"path"`
	Sent      time.Duration `json:"sent"` // since the proxy started
	FirstByte time.Duration `json:"first_byte"`
	LastByte  time.Duration `json:"last_byte"`
	Bytes     int64         `json:"bytes"`
}

// StartProxy listens on 127.0.0.1 and forwards to target through link.
func StartProxy(target string, link Link) (*Proxy, error) {
	if link.Rate <= 0 {
		return nil, fmt.Errorf("proxy %s: rate must be positive", link.Name)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", link.Name, err)
	}
	p := &Proxy{ln: ln, target: target, link: link, down: &bucket{rate: link.Rate, burst: max(chunk, link.Rate/100), last: time.Now()}, conns: map[net.Conn]struct{}{}, start: time.Now()}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Bytes is how many bytes went from the registry to the node so far.
func (p *Proxy) Bytes() int64 { return p.bytes.Load() }

// Fetches returns a copy of the requests seen since the proxy started
// whose request was sent at or after since (a time from Since).
func (p *Proxy) Fetches(since time.Duration) []Fetch {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Fetch
	for _, f := range p.fetches {
		if f.Sent >= since {
			out = append(out, *f)
		}
	}
	return out
}

// Since is the time since the proxy started, the clock of Fetch.
func (p *Proxy) Since() time.Duration { return time.Since(p.start) }

// Close stops accepting, closes every connection and waits for them.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.handle(c) })
	}
}

func (p *Proxy) handle(client net.Conn) {
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	defer client.Close()
	time.Sleep(p.link.RTT) // the handshake
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	defer server.Close()
	p.mu.Lock()
	p.nconn++
	cl := &connLog{p: p, id: p.nconn}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client, nil, nil, cl.request); done <- struct{}{} }()
	go func() { p.pipe(client, server, p.down, &p.bytes, cl.response); done <- struct{}{} }()
	<-done
	// One side finished: close both so the other copy ends too.
	client.Close()
	server.Close()
	<-done
}

type stamped struct {
	b  []byte
	at time.Time
}

// connLog records the requests of one proxied connection (see Fetch).
type connLog struct {
	p   *Proxy
	id  int
	cur *Fetch
}

// request notes a chunk from the node: a new request if it starts with
// an HTTP method.
func (c *connLog) request(b []byte) {
	line, _, _ := strings.Cut(string(b[:min(len(b), 512)]), "\r\n")
	f := strings.Fields(line)
	if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/") {
		return
	}
	c.p.mu.Lock()
	c.cur = &Fetch{Conn: c.id, Method: f[0], Path: f[1], Sent: time.Since(c.p.start)}
	c.p.fetches = append(c.p.fetches, c.cur)
	c.p.mu.Unlock()
}

// response notes a chunk delivered to the node.
func (c *connLog) response(b []byte) {
	c.p.mu.Lock()
	if f := c.cur; f != nil {
		now := time.Since(c.p.start)
		if f.Bytes == 0 {
			f.FirstByte = now
		}
		f.LastByte = now
		f.Bytes += int64(len(b))
	}
	c.p.mu.Unlock()
}

// pipe copies src to dst, each chunk first through bucket (if any) and
// then delayed by RTT/2; it counts the bytes into n and hands each chunk
// to note when it is delivered (for the request log).
func (p *Proxy) pipe(dst, src net.Conn, b *bucket, n *atomic.Int64, note func([]byte)) {
	q := make(chan stamped, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, chunk)
			k, err := src.Read(buf)
			if k > 0 {
				if b != nil {
					b.take(k)
				}
				q <- stamped{buf[:k], time.Now().Add(p.link.RTT / 2)}
			}
			if err != nil {
				return
			}
		}
	}()
	for s := range q {
		if d := time.Until(s.at); d > 0 {
			time.Sleep(d)
		}
		// Noted before the write, so that a reader who has the bytes
		// finds them in the log.
		if note != nil {
			note(s.b)
		}
		if _, err := dst.Write(s.b); err != nil {
			for range q { // drain so the reader ends
			}
			return
		}
		if n != nil {
			n.Add(int64(len(s.b)))
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// echoServer serves size bytes to every connection after reading one byte.
func sizedServer(t *testing.T, size int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				one := make([]byte, 1)
				if _, err := io.ReadFull(c, one); err != nil {
					return
				}
				_, _ = c.Write(bytes.Repeat([]byte{'x'}, size))
			}()
		}
	}()
	return ln.Addr().String()
}

// fetch connects through the proxy, sends one byte and reads to EOF.
func fetch(t *testing.T, addr string) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, c)
	if err != nil {
		t.Fatal(err)
	}
	return int(n), time.Since(start)
}

func TestProxyLink(t *testing.T) {
	const size = 1 << 20
	target := sizedServer(t, size)
	tests := []struct {
		name     string
		link     Link
		min, max time.Duration
	}{
		// 1 MiB at 8 MiB/s is 125 ms; handshake + request + response is 2 RTT.
		{"rate", Link{Name: "8MiB/s", Rate: 8 << 20, RTT: time.Millisecond}, 120 * time.Millisecond, 400 * time.Millisecond},
		{"rtt", Link{Name: "rtt", Rate: 1 << 30, RTT: 100 * time.Millisecond}, 200 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := StartProxy(target, tt.link)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			n, d := fetch(t, p.Addr())
			if n != size || p.Bytes() != size {
				t.Fatalf("got %d bytes, proxy counted %d, want %d", n, p.Bytes(), size)
			}
			if d < tt.min || d > tt.max {
				t.Errorf("took %v, want %v to %v", d, tt.min, tt.max)
			}
		})
	}
}

// TestProxySharedRate checks that connections share one bottleneck: two
// fetches at once take as long as both bytes at the link's rate.
func TestProxySharedRate(t *testing.T) {
	const size = 1 << 20
	p, err := StartProxy(sizedServer(t, size), Link{Name: "8MiB/s", Rate: 8 << 20, RTT: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	done := make(chan struct{})
	for range 2 {
		go func() { fetch(t, p.Addr()); done <- struct{}{} }()
	}
	<-done
	<-done
	if d := time.Since(start); d < 240*time.Millisecond {
		t.Errorf("2 MiB at 8 MiB/s over two connections took %v, want at least 250ms", d)
	}
}

// TestProxyFetchLog checks the request log: two requests on one
// keep-alive connection are two fetches with their paths, their response
// bytes and times in order.
func TestProxyFetchLog(t *testing.T) {
	body := bytes.Repeat([]byte{'b'}, 1<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		_, _ = w.Write(body)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	p, err := StartProxy(ln.Addr().String(), Link{Name: "8MiB/s", Rate: 8 << 20, RTT: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	since := p.Since()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for _, path := range []string{"/v2/", "/v2/x/blobs/sha256:aa"} {
		resp, err := client.Get("http://" + p.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	got := p.Fetches(since)
	if len(got) != 2 {
		t.Fatalf("got %d fetches %+v, want 2", len(got), got)
	}
	tests := []struct {
		path     string
		minBytes int64
	}{{"/v2/", 1}, {"/v2/x/blobs/sha256:aa", int64(len(body))}}
	for i, tt := range tests {
		f := got[i]
		if f.Method != "GET" || f.Path != tt.path || f.Bytes < tt.minBytes || f.Bytes > tt.minBytes+1024 {
			t.Errorf("fetch %d = %+v, want GET %s with %d bytes and headers", i, f, tt.path, tt.minBytes)
		}
		if f.Sent > f.FirstByte || f.FirstByte > f.LastByte {
			t.Errorf("fetch %d times out of order: %+v", i, f)
		}
	}
	if got[0].Conn != got[1].Conn {
		t.Errorf("keep-alive requests on connections %d and %d, want one", got[0].Conn, got[1].Conn)
	}
	// 1 MiB at 8 MiB/s is 125 ms, less the bucket's burst (10 ms of traffic).
	if d := got[1].LastByte - got[1].FirstByte; d < 90*time.Millisecond {
		t.Errorf("blob took %v from first to last byte, want the link's rate (about 115ms)", d)
	}
}

package images_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

type env struct {
	a, b, c *testenv.Registry
}

func startRegistries(t *testing.T) *env {
	t.Helper()
	testenv.Require(t, "starts real registries", testenv.Slow)
	ctx := t.Context()
	tools, err := testenv.BuildTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.EnsurePackages(ctx, "skopeo"); err != nil {
		t.Fatal(err)
	}
	e := &env{}
	for _, r := range []**testenv.Registry{&e.a, &e.b, &e.c} {
		reg, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(reg.Stop)
		*r = reg
	}
	return e
}

func push(t *testing.T, ref string, tg remote.Taggable) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	switch x := tg.(type) {
	case v1.Image:
		must(t, remote.Write(r, x))
		d, _ := x.Digest()
		return d.String()
	case v1.ImageIndex:
		must(t, remote.WriteIndex(r, x))
		d, _ := x.Digest()
		return d.String()
	}
	t.Fatal("unknown taggable")
	return ""
}

// skopeoDigest is the digest of ref's manifest as skopeo, an independent
// client, reads it.
func skopeoDigest(t *testing.T, ref string) string {
	t.Helper()
	out, err := exec.Command("skopeo", "inspect", "--raw", "--tls-verify=false", "docker://"+ref).Output()
	if err != nil {
		t.Fatalf("skopeo inspect --raw %s: %v", ref, err)
	}
	sum := sha256.Sum256(out)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCopyToManyRegistries(t *testing.T) {
	e := startRegistries(t)
	img, err := random.Image(512<<10, 5)
	must(t, err)
	idx, err := random.Index(256<<10, 2, 3)
	must(t, err)
	imgDigest := push(t, e.a.Host+"/ml/torch:nightly", img)
	idxDigest := push(t, e.a.Host+"/ml/multi:nightly", idx)

	for _, tt := range []struct{ src, repo, digest string }{{"/ml/torch:nightly", "/ml/torch:stable", imgDigest}, {"/ml/multi:nightly", "/ml/multi:stable", idxDigest}} {
		dsts := []string{e.b.Host + tt.repo, e.c.Host + tt.repo}
		var progress images.Progress
		res, err := images.Copy(t.Context(), e.a.Host+tt.src, dsts, images.WithProgress(func(p images.Progress) { progress = p }))
		must(t, err)
		if progress.Total == 0 || progress.Bytes != progress.Total {
			t.Errorf("progress of both destinations at the end: %+v", progress)
		}
		for i, d := range dsts {
			if got := skopeoDigest(t, d); got != tt.digest {
				t.Errorf("%s: skopeo reads %s, source is %s", d, got, tt.digest)
			}
			if res.Destinations[i].Present != 0 || res.Destinations[i].Blobs == 0 {
				t.Errorf("first copy to %s: %+v", d, res.Destinations[i])
			}
		}
		again, err := images.Copy(t.Context(), e.a.Host+tt.src, dsts)
		must(t, err)
		for _, d := range again.Destinations {
			if d.Present != d.Blobs {
				t.Errorf("second copy to %s moved blobs again: %+v", d.Ref, d)
			}
		}
	}

	// Within one registry, a new repository gets the blobs too (mounted).
	_, err = images.Copy(t.Context(), e.b.Host+"/ml/torch:stable", []string{e.b.Host + "/other/torch:1"})
	must(t, err)
	if got := skopeoDigest(t, e.b.Host+"/other/torch:1"); got != imgDigest {
		t.Errorf("same-registry copy: %s", got)
	}

	// A dry run writes nothing and counts the bytes.
	res, err := images.Copy(t.Context(), e.a.Host+"/ml/torch:nightly", []string{e.b.Host + "/dry/torch:1"}, images.WithDryRun(true))
	must(t, err)
	if !res.DryRun || res.Destinations[0].Bytes < 5*512<<10 {
		t.Errorf("dry run: %+v", res.Destinations[0])
	}
	r, _ := name.ParseReference(e.b.Host+"/dry/torch:1", name.Insecure)
	if _, err := remote.Head(r); err == nil {
		t.Error("a dry run wrote a tag")
	}
}

// faultProxy sits in front of a registry and injects faults into the
// requests: resets, 500s, 429s with Retry-After, stalls.
type faultProxy struct {
	srv       *http.Server
	Host      string
	n         atomic.Int64
	faults    atomic.Int64
	onUpload  func(n int64)       // called after each completed blob upload (PUT)
	onRequest func(*http.Request) // called for every request, before faults
	uploads   atomic.Int64
	block     atomic.Bool // stall every request from now on
}

func newFaultProxy(t *testing.T, target string, inject bool) *faultProxy {
	t.Helper()
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	fp := &faultProxy{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	fp.Host = l.Addr().String()
	fp.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for fp.block.Load() {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		if fp.onRequest != nil {
			fp.onRequest(r)
		}
		n := fp.n.Add(1)
		if inject && n > 2 {
			switch {
			case n%9 == 3:
				fp.faults.Add(1)
				http.Error(w, "injected", http.StatusInternalServerError)
				return
			case n%17 == 5:
				fp.faults.Add(1)
				w.Header().Set("Retry-After", "1")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			case n%23 == 7:
				fp.faults.Add(1)
				if hj, ok := w.(http.Hijacker); ok {
					conn, _, err := hj.Hijack()
					if err == nil {
						if tc, ok := conn.(*net.TCPConn); ok {
							_ = tc.SetLinger(0) // RST, not FIN
						}
						conn.Close()
						return
					}
				}
			case n%13 == 4:
				fp.faults.Add(1)
				time.Sleep(300 * time.Millisecond)
			}
		}
		rp.ServeHTTP(w, r)
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/") && fp.onUpload != nil {
			fp.onUpload(fp.uploads.Add(1))
		}
	})}
	go func() { _ = fp.srv.Serve(l) }()
	t.Cleanup(func() { fp.block.Store(false); fp.srv.Close() })
	return fp
}

func TestCopyThroughFaults(t *testing.T) {
	e := startRegistries(t)
	img, err := random.Image(256<<10, 8)
	must(t, err)
	digest := push(t, e.a.Host+"/ml/torch:nightly", img)
	fp := newFaultProxy(t, e.b.Host, true)
	res, err := images.Copy(t.Context(), e.a.Host+"/ml/torch:nightly", []string{fp.Host + "/ml/torch:stable"})
	if err != nil {
		t.Fatalf("copy through %d injected faults: %v", fp.faults.Load(), err)
	}
	if fp.faults.Load() < 3 {
		t.Fatalf("only %d faults injected: the test proves little", fp.faults.Load())
	}
	if got := skopeoDigest(t, e.b.Host+"/ml/torch:stable"); got != digest || res.Destinations[0].Digest != digest {
		t.Errorf("digest after faults: skopeo %s, source %s", got, digest)
	}
}

func TestInterruptedCopyLeavesNoTag(t *testing.T) {
	e := startRegistries(t)
	img, err := random.Image(256<<10, 8)
	must(t, err)
	digest := push(t, e.a.Host+"/ml/torch:nightly", img)
	fp := newFaultProxy(t, e.b.Host, false)
	ctx, cancel := context.WithCancelCause(t.Context())
	fp.onUpload = func(n int64) {
		if n == 3 {
			fp.block.Store(true)
			cancel(errors.New("interrupted by the test after 3 blobs"))
		}
	}
	_, err = images.Copy(ctx, e.a.Host+"/ml/torch:nightly", []string{fp.Host + "/ml/torch:stable"}, images.WithJobs(1))
	if err == nil {
		t.Fatal("the interrupted copy reported success")
	}
	fp.block.Store(false)
	r, _ := name.ParseReference(e.b.Host+"/ml/torch:stable", name.Insecure)
	if _, err := remote.Head(r); err == nil {
		t.Fatal("an interrupted copy left a tag")
	}
	res, err := images.Copy(t.Context(), e.a.Host+"/ml/torch:nightly", []string{e.b.Host + "/ml/torch:stable"})
	must(t, err)
	if res.Destinations[0].Present < 3 {
		t.Errorf("the rerun did not reuse the blobs already copied: %+v", res.Destinations[0])
	}
	if got := skopeoDigest(t, e.b.Host+"/ml/torch:stable"); got != digest {
		t.Errorf("after the rerun: %s, want %s", got, digest)
	}
}

// TestCopyAuthTLS copies to a registry behind TLS (a CA the test makes)
// and htpasswd authentication.
func TestCopyAuthTLS(t *testing.T) {
	e := startRegistries(t)
	ctx := t.Context()
	dir := t.TempDir()
	certs, err := testenv.WriteCerts(dir)
	must(t, err)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.DefaultCost)
	must(t, err)
	htpasswd := filepath.Join(dir, "htpasswd")
	must(t, os.WriteFile(htpasswd, []byte("ci:"+string(hash)+"\n"), 0o600))
	tools, err := testenv.BuildTools(ctx)
	must(t, err)
	secure, err := testenv.StartRegistry(ctx, tools.Registry, filepath.Join(dir, "reg"), testenv.RegistryOptions{TLSCert: certs["server"], TLSKey: certs["server-key"], Htpasswd: htpasswd})
	must(t, err)
	t.Cleanup(secure.Stop)

	img, err := random.Image(128<<10, 2)
	must(t, err)
	digest := push(t, e.a.Host+"/ml/torch:nightly", img)
	rt := caTransport(t, certs["ca"])
	dst := secure.Host + "/ml/torch:stable"

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials
	_, err = images.Copy(ctx, e.a.Host+"/ml/torch:nightly", []string{dst}, images.WithTransport(rt))
	if !errors.Is(err, images.ErrUnauthorized) || !strings.Contains(err.Error(), "docker login "+secure.Host) {
		t.Fatalf("without credentials: %v", err)
	}

	cfgDir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))
	must(t, os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, secure.Host, auth)), 0o600))
	t.Setenv("DOCKER_CONFIG", cfgDir)
	res, err := images.Copy(ctx, e.a.Host+"/ml/torch:nightly", []string{dst}, images.WithTransport(rt))
	must(t, err)
	if res.Destinations[0].Digest != digest {
		t.Errorf("digest %s, want %s", res.Destinations[0].Digest, digest)
	}
	// The CLI's --ca-file reaches the same registry; without it TLS fails.
	var stdout, stderr strings.Builder
	if code := cli.Main(ctx, []string{"images", "ls", secure.Host + "/ml/torch", "--ca-file", certs["ca"]}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "stable") {
		t.Errorf("images ls --ca-file: exit %d %s %s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := cli.Main(ctx, []string{"images", "ls", secure.Host + "/ml/torch"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "certificate") {
		t.Errorf("images ls without the CA: exit %d %q", code, stderr.String())
	}
	out, err := exec.Command("skopeo", "inspect", "--raw", "--cert-dir", certDir(t, certs["ca"]), "--creds", "ci:s3cret", "docker://"+dst).Output()
	must(t, err)
	if sum := sha256.Sum256(out); "sha256:"+hex.EncodeToString(sum[:]) != digest {
		t.Errorf("skopeo over TLS reads another manifest")
	}
}

func caTransport(t *testing.T, caFile string) http.RoundTripper {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	must(t, err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("bad CA")
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr
}

// certDir lays the CA out as skopeo's --cert-dir wants it.
func certDir(t *testing.T, caFile string) string {
	t.Helper()
	d := t.TempDir()
	b, err := os.ReadFile(caFile)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(d, "ca.crt"), b, 0o644))
	return d
}

// TestCopyReadsTheSourceOnce copies to two registries with ReadSourceOnce
// and counts how often each layer was downloaded from the source.
func TestCopyReadsTheSourceOnce(t *testing.T) {
	e := startRegistries(t)
	img, err := random.Image(256<<10, 4)
	must(t, err)
	digest := push(t, e.a.Host+"/ml/torch:nightly", img)
	var mu sync.Mutex
	gets := map[string]int{}
	fp := newFaultProxy(t, e.a.Host, false)
	fp.onRequest = func(r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			mu.Lock()
			gets[r.URL.Path]++
			mu.Unlock()
		}
	}
	src := fp.Host + "/ml/torch:nightly"
	_, err = images.Copy(t.Context(), src, []string{e.b.Host + "/ml/torch:stable", e.c.Host + "/ml/torch:stable"}, images.WithReadSourceOnce(true))
	must(t, err)
	layers, _ := img.Layers()
	for _, l := range layers {
		d, _ := l.Digest()
		mu.Lock()
		n := gets["/v2/ml/torch/blobs/"+d.String()]
		mu.Unlock()
		if n != 1 {
			t.Errorf("layer %s was downloaded %d times for two destinations, want once", d, n)
		}
	}
	for _, h := range []string{e.b.Host, e.c.Host} {
		if got := skopeoDigest(t, h+"/ml/torch:stable"); got != digest {
			t.Errorf("%s: %s, want %s", h, got, digest)
		}
	}
}

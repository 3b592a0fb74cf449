package images_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
)

// TestCAFile reaches a TLS registry whose certificate is trusted only
// through the CA file, or not verified at all when it is insecure.
func TestCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	must(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	img, err := random.Image(1024, 1)
	must(t, err)
	ref, err := name.ParseReference(host + "/ml/torch:1")
	must(t, err)
	must(t, remote.Write(ref, img, remote.WithTransport(srv.Client().Transport)))

	for _, tt := range []struct {
		name    string
		opts    []images.Option
		wantErr string
	}{
		{"system roots only", nil, "certificate"},
		{"CA file", []images.Option{images.WithCAFile(caFile)}, ""},
		{"insecure registry", []images.Option{images.WithInsecureRegistries(host)}, ""},
		{"insecure registry, any port", []images.Option{images.WithInsecureRegistries("127.0.0.1")}, ""},
		{"another insecure registry", []images.Option{images.WithInsecureRegistries("registry.example.com")}, "certificate"},
		{"insecure", []images.Option{images.WithInsecure(true)}, ""},
		{"not insecure", []images.Option{images.WithInsecure(false)}, "certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tags, err := images.List(t.Context(), host+"/ml/torch", append(tt.opts, images.WithRetries(0))...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("list: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			must(t, err)
			if len(tags) != 1 || tags[0].Tag != "1" {
				t.Errorf("tags %+v", tags)
			}
			// Open and PinBase reach it the same way.
			o, err := images.Open(t.Context(), images.Ref{Transport: images.Registry, Name: host + "/ml/torch:1"}, tt.opts...)
			must(t, err)
			o.Close()
			_, err = images.PinBase(t.Context(), host+"/ml/torch:1", nil, tt.opts...)
			must(t, err)
		})
	}

	notPEM := filepath.Join(dir, "not.pem")
	must(t, os.WriteFile(notPEM, []byte("hello"), 0o644))
	for _, tt := range []struct {
		opts    []images.Option
		wantErr string
	}{
		{[]images.Option{images.WithCAFile(notPEM)}, "holds no PEM certificate"},
		{[]images.Option{images.WithCAFile(filepath.Join(dir, "missing.pem"))}, "read CA file"},
		{[]images.Option{images.WithCAFile(caFile), images.WithTransport(roundTripper(http.DefaultTransport.RoundTrip))}, "need an *http.Transport"},
	} {
		if _, err := images.List(t.Context(), host+"/ml/torch", tt.opts...); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("list: %v, want an error with %q", err, tt.wantErr)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// flaky answers 503 to the first n manifest requests, then passes them on.
type flaky struct {
	n, failed atomic.Int64
}

func (f *flaky) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") && f.n.Add(-1) >= 0 {
			f.failed.Add(1)
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestRetries reads through a registry that answers 503 twice: every verb
// retries, and with no retries fails.
func TestRetries(t *testing.T) {
	fast := images.WithRetryBackoff(remote.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3})
	img, err := random.Image(1024, 1)
	must(t, err)
	dst := newRegistry(t, nil)
	verbs := map[string]func(ctx context.Context, ref string, opts ...images.Option) error{
		"open": func(ctx context.Context, ref string, opts ...images.Option) error {
			o, err := images.Open(ctx, images.Ref{Transport: images.Registry, Name: ref}, opts...)
			if err == nil {
				o.Close()
			}
			return err
		},
		"pin base": func(ctx context.Context, ref string, opts ...images.Option) error {
			_, err := images.PinBase(ctx, ref, nil, opts...)
			return err
		},
		"copy": func(ctx context.Context, ref string, opts ...images.Option) error {
			_, err := images.Copy(ctx, ref, []string{dst + "/ml/torch:1"}, opts...)
			return err
		},
		"export": func(ctx context.Context, ref string, opts ...images.Option) error {
			_, err := images.Export(ctx, ref, filepath.Join(t.TempDir(), "out"), images.FormatOCI, opts...)
			return err
		},
		"delete": func(ctx context.Context, ref string, opts ...images.Option) error {
			_, err := images.Delete(ctx, ref, opts...)
			return err
		},
	}
	for name, verb := range verbs {
		for _, tt := range []struct {
			retries int
			ok      bool
		}{{2, true}, {0, false}} {
			t.Run(fmt.Sprintf("%s with %d retries", name, tt.retries), func(t *testing.T) {
				var f flaky
				f.n.Store(2)
				reg := newRegistry(t, f.wrap)
				ref := reg + "/ml/torch:1"
				f.n.Store(0)
				push(t, ref, img)
				f.n.Store(2)
				err := verb(t.Context(), ref, fast, images.WithRetries(tt.retries))
				if tt.ok && err != nil {
					t.Fatalf("with %d retries: %v", tt.retries, err)
				}
				if !tt.ok && (err == nil || !strings.Contains(err.Error(), "503")) {
					t.Fatalf("without retries: %v; want the 503", err)
				}
				if f.failed.Load() == 0 {
					t.Fatal("the registry never answered 503: the test proves nothing")
				}
			})
		}
	}
}

// TestUserAgent checks that every request of a copy, including the blob
// checks gpuimg sends itself, names the user agent.
func TestUserAgent(t *testing.T) {
	for _, tt := range []struct {
		opts []images.Option
		want string
	}{
		{nil, "gpuimg go-containerregistry"},
		{[]images.Option{images.WithUserAgent("gpuimg/v1.2.3")}, "gpuimg/v1.2.3 go-containerregistry"},
	} {
		var src, dst recorder
		a := newRegistry(t, src.wrap)
		b := newRegistry(t, dst.wrap)
		img, err := random.Image(1024, 2)
		must(t, err)
		push(t, a+"/ml/torch:1", img)
		n := len(src.requests())
		_, err = images.Copy(t.Context(), a+"/ml/torch:1", []string{b + "/ml/torch:1"}, tt.opts...)
		must(t, err)
		heads := 0
		for _, r := range append(src.requests()[n:], dst.requests()...) {
			if !strings.HasPrefix(r.UserAgent, tt.want) {
				t.Errorf("%s %s: User-Agent %q, want %q…", r.Method, r.Path, r.UserAgent, tt.want)
			}
			if r.Method == http.MethodHead && strings.Contains(r.Path, "/blobs/") {
				heads++
			}
		}
		if heads == 0 {
			t.Error("no blob checks seen")
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tt := range []struct {
		opt     images.Option
		wantErr string
	}{
		{images.WithJobs(0), "jobs 0"},
		{images.WithRetries(-1), "retries -1"},
		{images.WithRetryBackoff(remote.Backoff{Duration: time.Second}), "0 steps"},
		{images.WithInsecureRegistries("registry.example.com/ml"), "want a host"},
		{images.WithInsecureRegistries(""), "want a host"},
		{images.WithKeychain(nil), "nil keychain"},
		{images.WithTransport(nil), "nil transport"},
	} {
		for verb, err := range map[string]error{
			"list": func() error { _, err := images.List(t.Context(), "registry.example.com/ml/torch", tt.opt); return err }(),
			"open": func() error {
				_, err := images.Open(t.Context(), images.Ref{Transport: images.OCI, Name: t.TempDir()}, tt.opt)
				return err
			}(),
		} {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: %v, want an error with %q", verb, err, tt.wantErr)
			}
		}
	}
}

func TestPlainHTTP(t *testing.T) {
	for _, tt := range []struct {
		ref  string
		opts []images.Option
		want bool
	}{
		{"registry.example.com/ml/torch:1", nil, false},
		{"localhost:5000/ml/torch:1", nil, true},
		{"127.0.0.1:5000/ml/torch:1", nil, true},
		{"registry.example.com/ml/torch:1", []images.Option{images.WithInsecure(true)}, true},
		{"registry.example.com/ml/torch:1", []images.Option{images.WithInsecureRegistries("registry.example.com")}, true},
		{"registry.example.com:5000/ml/torch:1", []images.Option{images.WithInsecureRegistries("registry.example.com")}, true},
		{"registry.example.com/ml/torch:1", []images.Option{images.WithInsecureRegistries("registry.example.com:5000")}, false},
		{"registry.example.com/ml/torch:1", []images.Option{images.WithInsecureRegistries("other.example.com")}, false},
		{"nvidia/cuda:12.2.2-base-ubuntu22.04", []images.Option{images.WithInsecureRegistries("docker.io")}, true},
	} {
		got, err := images.PlainHTTP(tt.ref, tt.opts...)
		must(t, err)
		if got != tt.want {
			t.Errorf("PlainHTTP(%s) = %v, want %v", tt.ref, got, tt.want)
		}
	}
	if _, err := images.PlainHTTP("Not A Ref"); err == nil {
		t.Error("a bad reference was accepted")
	}
}

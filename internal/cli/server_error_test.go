package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRegistryServerErrorHint: a registry that answers 500 to every try
// is reported as a server error with the number of tries, not as a wrong
// reference or credentials.
func TestRegistryServerErrorHint(t *testing.T) {
	var manifests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			manifests.Add(1)
		}
		if r.URL.Path == "/v2/" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/ml/model:v1"
	for _, args := range [][]string{{"validate", ref, "--retries", "2"}, {"sbom", ref, "--retries", "2"}} {
		manifests.Store(0)
		_, stderr, code := run(t, args...)
		if code != ExitInvalid {
			t.Errorf("%v: exit %d, want %d", args, code, ExitInvalid)
		}
		for _, want := range []string{"server error (HTTP 500)", "gpuimg tried 3 times"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, stderr)
			}
		}
		if strings.Contains(stderr, "check the reference") {
			t.Errorf("%v: blames the reference:\n%s", args, stderr)
		}
		if n := manifests.Load(); n != 3 {
			t.Errorf("%v: the manifest was asked for %d times, and the message says 3", args, n)
		}
	}
}

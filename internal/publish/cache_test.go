package publish

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/moby/buildkit/client"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/matrix"
)

func TestCacheGroups(t *testing.T) {
	v := func(name, base, py string) Variant {
		return Variant{Name: name, Stack: matrix.Stack{BaseImage: base, Python: py}}
	}
	got := cacheGroups([]Variant{
		v("a", "cuda:12.1", "3.11"), v("b", "cuda:12.2", "3.11"), v("c", "cuda:12.1", "3.11"),
		v("d", "cuda:12.1", "3.12"), v("e", "cuda:12.1", "3.11"),
	})
	want := map[string][]string{
		"a": {"a", "c", "e"}, "c": {"c", "a", "e"}, "e": {"e", "a", "c"},
		"b": {"b"}, "d": {"d"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cacheGroups = %v, want %v", got, want)
	}
}

func TestVariantCaches(t *testing.T) {
	long := strings.Repeat("x", 130)
	for _, tc := range []struct {
		name        string
		from, to    []string
		group       []string
		has         []string // the registry caches that exist
		wantImports []string
		wantExports []string
	}{
		{
			name:        "registry cache: an export of its own, imports of its group",
			from:        []string{"type=registry,ref=r.example/ml/cache:buildcache"},
			to:          []string{"type=registry,ref=r.example/ml/cache:buildcache,mode=max"},
			group:       []string{"2.3.1-cu122", "2.2.2-cu122"},
			wantImports: []string{"type=registry,ref=r.example/ml/cache:buildcache-2.3.1-cu122", "type=registry,ref=r.example/ml/cache:buildcache-2.2.2-cu122"},
			wantExports: []string{"type=registry,ref=r.example/ml/cache:buildcache-2.3.1-cu122,mode=max"},
		},
		{
			name:        "its own cache exists: imported alone",
			from:        []string{"type=registry,ref=r.example/ml/cache:buildcache", "type=local,src=/cache"},
			to:          []string{"type=registry,ref=r.example/ml/cache:buildcache,mode=max"},
			group:       []string{"2.3.1-cu122", "2.2.2-cu122"},
			has:         []string{"r.example/ml/cache:buildcache-2.3.1-cu122", "r.example/ml/cache:buildcache-2.2.2-cu122"},
			wantImports: []string{"type=registry,ref=r.example/ml/cache:buildcache-2.3.1-cu122", "type=local,src=/cache"},
			wantExports: []string{"type=registry,ref=r.example/ml/cache:buildcache-2.3.1-cu122,mode=max"},
		},
		{
			name:        "only a group mate's cache exists: the group's",
			from:        []string{"type=registry,ref=r.example/ml/cache:buildcache"},
			group:       []string{"2.3.1-cu122", "2.2.2-cu122"},
			has:         []string{"r.example/ml/cache:buildcache-2.2.2-cu122"},
			wantImports: []string{"type=registry,ref=r.example/ml/cache:buildcache-2.3.1-cu122", "type=registry,ref=r.example/ml/cache:buildcache-2.2.2-cu122"},
		},
		{
			name:        "no tag, a registry port",
			from:        []string{"ref=localhost:5000/cache,type=registry"},
			to:          []string{"type=registry,ref=localhost:5000/cache"},
			group:       []string{"v1"},
			wantImports: []string{"ref=localhost:5000/cache:buildcache-v1,type=registry"},
			wantExports: []string{"type=registry,ref=localhost:5000/cache:buildcache-v1"},
		},
		{
			name:        "other kinds and digests pass as they are",
			from:        []string{"type=local,src=/cache", "type=registry,ref=r.example/c@sha256:0123"},
			to:          []string{"type=local,dest=/cache", "type=inline"},
			group:       []string{"v1", "v2"},
			wantImports: []string{"type=local,src=/cache", "type=registry,ref=r.example/c@sha256:0123", "type=registry,ref=r.example/c@sha256:0123"},
			wantExports: []string{"type=local,dest=/cache", "type=inline"},
		},
		{
			name:        "a tag over 128 characters is shortened with a hash",
			to:          []string{"type=registry,ref=r.example/c:bc"},
			group:       []string{long},
			wantExports: []string{"type=registry,ref=r.example/c:bc-3afbb132863c57f0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := cacheImports(t, tc.from...), cacheExports(t, tc.to...)
			imports, exports := variantCaches(from, to, tc.group, func(e client.CacheOptionsEntry) bool {
				ref, _ := registryCacheRef(e)
				return slices.Contains(tc.has, ref)
			})
			if want := cacheImports(t, tc.wantImports...); !reflect.DeepEqual(imports, want) {
				t.Errorf("imports %+v\nwant    %+v", imports, want)
			}
			if want := cacheExports(t, tc.wantExports...); !reflect.DeepEqual(exports, want) {
				t.Errorf("exports %+v\nwant    %+v", exports, want)
			}
			if len(from) > 0 && from[0].Attrs["ref"] != cacheImports(t, tc.from...)[0].Attrs["ref"] {
				t.Errorf("variantCaches changed the run's own entry: %+v", from[0])
			}
			for _, e := range append(imports, exports...) {
				if ref, ok := registryCacheRef(e); ok {
					if i := strings.LastIndex(ref, ":"); i > 0 && len(ref)-i-1 > 128 {
						t.Errorf("%s: tag over 128 characters", ref)
					}
				}
			}
		})
	}
}

func cacheImports(t *testing.T, specs ...string) []client.CacheOptionsEntry {
	t.Helper()
	e, err := builder.ParseCacheImports(specs)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cacheExports(t *testing.T, specs ...string) []client.CacheOptionsEntry {
	t.Helper()
	e, err := builder.ParseCacheExports(specs)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCacheExists lists a cache repository on a real (in-process)
// registry: once for all the variants of a run, whatever they ask, and a
// registry that does not answer says no.
func TestCacheExists(t *testing.T) {
	var lists atomic.Int32
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/tags/list") {
			lists.Add(1)
		}
		reg.ServeHTTP(w, req)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/ml/cache:buildcache-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	has := (&runner{}).cacheExists(t.Context())
	entry := func(ref string) string { return "type=registry,ref=" + ref + ",mode=max" }
	for _, tc := range []struct {
		entry string
		want  bool
	}{
		{entry(host + "/ml/cache:buildcache-a"), true},
		{entry(host + "/ml/cache:buildcache-b"), false},
		{entry(host + "/ml/cache:buildcache-a"), true},
		{"type=local,src=/tmp/x", false},
		{entry("127.0.0.1:1/ml/cache:buildcache-a"), false},
	} {
		if got := has(cacheExports(t, tc.entry)[0]); got != tc.want {
			t.Errorf("cacheExists(%q) = %v, want %v", tc.entry, got, tc.want)
		}
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("the cache repository's tags were listed %d times, want once", n)
	}
	for entry, want := range map[string]bool{
		"type=registry,ref=r/c:t,registry.insecure=true":  true,
		"type=registry,ref=r/c:t,registry.insecure=false": false,
		"type=registry,ref=r/c:t":                         false,
	} {
		if got := cacheInsecure(cacheImports(t, entry)[0]); got != want {
			t.Errorf("cacheInsecure(%q) = %v", entry, got)
		}
	}
}

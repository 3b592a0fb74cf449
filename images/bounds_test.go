package images_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestMisbehavingRegistry runs each registry misbehavior of
// docs/faults.md against the verb it hangs or floods: each must end,
// within its time limit, with an error naming the bound.
func TestMisbehavingRegistry(t *testing.T) {
	bad, err := testenv.StartBadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Close() })
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref := bad.Host + "/hostile/img:v1"
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	// A manifest declaring a config of 50 GiB (EndlessBlobs streams it).
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	m = m.DeepCopy()
	m.Config.Size = 50 << 30
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(tag.Context().Tag("big"), rawManifest(raw)); err != nil {
		t.Fatal(err)
	}
	good := newRegistry(t, nil)
	opts := []images.Option{
		images.WithRetries(0), images.WithResponseHeaderTimeout(time.Second),
		images.WithStallTimeout(time.Second), images.WithReferrers(false),
	}
	tags := func(ctx context.Context) error {
		_, err := images.Tags(ctx, bad.Host+"/hostile/img", opts...)
		return err
	}
	ls := func(ctx context.Context) error {
		_, err := images.List(ctx, bad.Host+"/hostile/img", opts...)
		return err
	}
	env := func(ctx context.Context) error { _, err := images.ConfigEnv(ctx, ref, opts...); return err }
	bigEnv := func(ctx context.Context) error {
		_, err := images.ConfigEnv(ctx, bad.Host+"/hostile/img:big", opts...)
		return err
	}
	cp := func(ctx context.Context) error {
		_, err := images.Copy(ctx, ref, []string{good + "/copied/img:v1"}, opts...)
		return err
	}
	for _, tc := range []struct {
		mode        testenv.Misbehavior
		run         func(context.Context) error
		is          error
		want        string
		maxRequests int64
	}{
		{testenv.RedirectLoop, cp, images.ErrBound, "stopped after 10 redirects", 100},
		{testenv.SelfPagination, ls, images.ErrBound, "links back to", 3},
		{testenv.EndlessPages, tags, images.ErrBound, "more than 1000 pages", 1001},
		{testenv.EndlessTags, tags, images.ErrBound, "more than 32 MiB", 2},
		{testenv.NoHeaders, tags, images.ErrRegistryStalled, "no answer in 1s", 2},
		{testenv.NoHeaders, cp, images.ErrRegistryStalled, "no answer in 1s", 10},
		{testenv.Trickle, tags, images.ErrRegistryStalled, "less than 1 KiB of the answer came in 1s", 2},
		{testenv.Trickle, cp, images.ErrRegistryStalled, "less than 1 KiB of the answer came in 1s", 10},
		{testenv.EndlessBlobs, bigEnv, images.ErrBound, "over the limit of 4 MiB", 2},
		{testenv.EndlessBlobs, env, nil, "error verifying sha256 checksum after reading", 2},
		{testenv.ServerErrors, tags, nil, "500", 2},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			bad.Set(tc.mode)
			t.Cleanup(func() { bad.Set("") })
			before := bad.Requests()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			start := time.Now()
			err := tc.run(ctx)
			took := time.Since(start)
			if err == nil {
				t.Fatal("no error")
			}
			if ctx.Err() != nil || took > 10*time.Second {
				t.Fatalf("took %s (the bound did not stop it): %v", took, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error does not wrap %v: %v", tc.is, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if n := bad.Requests() - before; n > tc.maxRequests {
				t.Errorf("%d requests, want at most %d", n, tc.maxRequests)
			}
		})
	}
}

// rawManifest is a manifest pushed as it is.
type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error) { return r, nil }

func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

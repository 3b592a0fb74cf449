package images_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
)

// Copy an image to two repositories at once; every verb takes the same
// options (here: fewer retries, and a user agent).
func ExampleCopy() {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, _ := random.Image(1024, 2)
	src, _ := name.ParseReference(host + "/ml/torch:nightly")
	if err := remote.Write(src, img); err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := []images.Option{images.WithRetries(2), images.WithUserAgent("example/1.0")}
	res, err := images.Copy(ctx, host+"/ml/torch:nightly", []string{host + "/prod/torch:stable", host + "/qa/torch:stable"}, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	want, _ := img.Digest()
	for _, d := range res.Destinations {
		fmt.Println(strings.TrimPrefix(d.Ref, host+"/"), d.Digest == want.String(), d.Blobs)
	}
	// Output:
	// prod/torch:stable true 3
	// qa/torch:stable true 3
}

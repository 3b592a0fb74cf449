package e2e

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// digestOf is b's sha256 digest, sha256:HEX.
func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// smallImage is a CUDA 12.2.2 image with torch built for 12.1 whose
// NVIDIA_REQUIRE_CUDA is requireCUDA (testenv.CUDATorchImage).
func smallImage(t *testing.T, requireCUDA string) v1.Image {
	t.Helper()
	img, err := testenv.CUDATorchImage("12.2.2", "12.1", requireCUDA)
	must(t, err)
	return img
}

// pemKeyPair is testenv.PEMKeyPair, failing t on an error.
func pemKeyPair(t *testing.T, dir, name string) (key, pub string) {
	t.Helper()
	key, pub, err := testenv.PEMKeyPair(dir, name)
	must(t, err)
	return key, pub
}

// eachEntry calls fn for every entry of every layer of img, oldest layer
// first, with the entry's content as r.
func eachEntry(t *testing.T, img v1.Image, fn func(layer int, h *tar.Header, r io.Reader)) {
	t.Helper()
	layers, err := img.Layers()
	must(t, err)
	for i, l := range layers {
		rc, err := l.Uncompressed()
		must(t, err)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			must(t, err)
			fn(i, h, tr)
		}
		rc.Close()
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// errorLines counts the "gpuimg: " lines of a build's stderr that are not
// its notes on what it builds (the stack, the layers' compression).
func errorLines(stderr string) int {
	return strings.Count(stderr, "gpuimg: ") - strings.Count(stderr, "gpuimg: stack ") - strings.Count(stderr, "gpuimg: layers ")
}

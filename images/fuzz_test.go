package images

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// dockerArchive is a real `docker save`-format archive of a random image
// (written by go-containerregistry's tarball.Write), split into its
// manifest.json and its other entries.
func dockerArchive(tb testing.TB) (manifest []byte, others map[string][]byte) {
	img, err := random.Image(256, 2)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tarball.Write(name.MustParseReference("example.com/fuzz:1"), img, &buf); err != nil {
		tb.Fatal(err)
	}
	others = map[string][]byte{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if h.Name == "manifest.json" {
			manifest = b
			continue
		}
		others[h.Name] = b
	}
	return manifest, others
}

// FuzzDockerArchive opens a docker-archive whose manifest.json is fuzzed
// (its config and layers are real) and reads the image: Open and the
// reads after it return errors, never panic, in bounded time.
func FuzzDockerArchive(f *testing.F) {
	manifest, others := dockerArchive(f)
	f.Add(manifest)
	f.Add([]byte(`[{"Config":"../../etc/passwd","RepoTags":[],"Layers":["/dev/zero"]}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"Config":"x","Layers":[]},{"Config":"y"}]`))
	// Issue 45's bounds: a manifest.json over 1 MiB, names of 400,000
	// directories, a layer named through links that do not exist.
	f.Add([]byte(`[{"Config":"` + strings.Repeat("a", 1<<20+1) + `"}]`))
	f.Add([]byte(`[{"Config":"x","Layers":["` + strings.Repeat("d/", 400_000) + `l"]}]`))
	f.Add([]byte(`[{"Config":"l0","Layers":["l0","l1","l0"]}]`))
	f.Fuzz(func(t *testing.T, m []byte) {
		p := filepath.Join(t.TempDir(), "image.tar")
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		add := func(n string, b []byte) {
			_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
			_, _ = tw.Write(b)
		}
		add("manifest.json", m)
		for n, b := range others {
			add(n, b)
		}
		_ = tw.Close()
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		defer func() {
			if took := time.Since(start); took > 5*time.Second+time.Duration(len(m))*20*time.Microsecond {
				t.Fatalf("%d bytes of manifest took %v", len(m), took)
			}
		}()
		o, err := Open(t.Context(), Ref{Transport: DockerArchive, Name: p})
		if err != nil {
			return
		}
		defer o.Close()
		layers, err := o.Image.Layers()
		if err != nil {
			return
		}
		for _, l := range layers {
			rc, err := l.Uncompressed()
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(rc, 1<<20))
			_ = rc.Close()
		}
	})
}

// FuzzParseRef: image references in every transport's syntax.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"ghcr.io/acme/train:cu122", "oci:dir:tag", "oci-archive:/tmp/a.tar", "docker-archive:a.tar:repo/x:1", "docker-daemon:x", "localhost:5000/x@sha256:" + string(bytes.Repeat([]byte("a"), 64)), "unknown:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		if r.Transport == "" {
			t.Fatalf("%q parsed without a transport: %+v", s, r)
		}
	})
}

package verbs

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// takeGets returns the blob GETs counted so far and starts counting anew.
func (s *server) takeGets() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := maps.Clone(s.gets)
	clear(s.gets)
	return g
}

// TestExportConvertReadEachBlobOnce: images export (each format) and
// images convert judge the layers (validate.RefuseLinkEscapes) on what
// they staged, so the registry serves each blob once, and an image whose
// links escape the root, in any layer, is still refused with
// validate.ErrUnsafePaths and nothing written: no file, no temporary left
// beside it, no tag pushed. A harmless image goes through.
func TestExportConvertReadEachBlobOnce(t *testing.T) {
	cases := []struct {
		name   string
		layers [][]testenv.TarEntry
		unsafe bool
	}{
		{"hard link above the root", [][]testenv.TarEntry{{testenv.Hardlink("shadow", "../../../etc/shadow")}}, true},
		{"file through a symlink to /etc", [][]testenv.TarEntry{{testenv.Symlink("lnk", "/etc"), testenv.File("lnk/passwd", "x")}}, true},
		{"file through a lower layer's symlink", [][]testenv.TarEntry{{testenv.Symlink("lnk", "/etc")}, {testenv.File("lnk/cron.d/x", "x")}}, true},
		{"harmless links", [][]testenv.TarEntry{{testenv.Symlink("lib", "usr/lib"), testenv.File("usr/lib/x", "x"), testenv.Hardlink("y", "usr/lib/x")}}, false},
	}
	srv := newServer(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := srv.host + "/once/w" + string(rune('a'+i)) + ":src"
			r, err := name.ParseReference(src)
			must(t, err)
			img, err := testenv.LayeredImage("amd64", c.layers...)
			must(t, err)
			must(t, remote.Write(r, img))
			srv.takeGets()
			dir := t.TempDir()
			for _, f := range []images.Format{images.FormatOCI, images.FormatOCIArchive, images.FormatDockerArchive} {
				_, err := Export(t.Context(), src, filepath.Join(dir, string(f)), f)
				checkRefused(t, "export --format "+string(f), err, c.unsafe)
				if ents, _ := os.ReadDir(dir); c.unsafe && len(ents) != 0 {
					t.Errorf("export --format %s left %v", f, ents)
				}
				checkOnce(t, "export --format "+string(f), img, srv.takeGets())
			}
			dst := srv.host + "/once/w" + string(rune('a'+i)) + ":zstd"
			_, err = Convert(t.Context(), src, dst, matrix.CompressionZstd, images.WithTempDir(t.TempDir()))
			checkRefused(t, "convert", err, c.unsafe)
			checkOnce(t, "convert", img, srv.takeGets())
			d, _ := name.ParseReference(dst)
			if _, err := remote.Head(d); c.unsafe && err == nil {
				t.Errorf("convert pushed %s", dst)
			}
		})
	}
}

// checkOnce fails when a layer of img was served more than once, or not
// at all.
func checkOnce(t *testing.T, what string, img v1.Image, gets map[string]int) {
	t.Helper()
	layers, err := img.Layers()
	must(t, err)
	for i, l := range layers {
		d, err := l.Digest()
		must(t, err)
		if n := gets[d.String()]; n != 1 {
			t.Errorf("%s: layer %d was served %d times, want once", what, i, n)
		}
	}
}

// TestHostileLinksImportIndex: an index whose arm64 image writes through
// a symlink to /etc is refused when import pushes the whole index, though
// the target's validation judges the amd64 image alone.
func TestHostileLinksImportIndex(t *testing.T) {
	host := newServer(t).host
	good, err := testenv.LayeredImage("amd64")
	must(t, err)
	bad, err := testenv.LayeredImage("arm64", []testenv.TarEntry{testenv.Symlink("lnk", "/etc")}, []testenv.TarEntry{testenv.File("lnk/passwd", "x")})
	must(t, err)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: good, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: bad, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	src := host + "/hostile/index:src"
	r, err := name.ParseReference(src)
	must(t, err)
	must(t, remote.WriteIndex(r, idx))
	target := matrix.Target{Name: "test/multi", Platforms: []string{"linux/amd64", "linux/arm64"}, Index: true}
	dst := host + "/hostile/index:dst"
	_, err = Import(t.Context(), src, target, dst, builtin(t), images.WithTempDir(t.TempDir()))
	checkRefused(t, "import", err, true)
	d, _ := name.ParseReference(dst)
	if _, err := remote.Head(d); err == nil {
		t.Errorf("import pushed %s", dst)
	}
}

func checkRefused(t *testing.T, what string, err error, unsafe bool) {
	t.Helper()
	switch {
	case unsafe && !errors.Is(err, validate.ErrUnsafePaths):
		t.Errorf("%s: %v, want refused (validate.ErrUnsafePaths)", what, err)
	case !unsafe && err != nil:
		t.Errorf("%s: %v", what, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

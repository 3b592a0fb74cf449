package verbs

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// platformImage is an image of the layers es, for platform linux/arch.
func platformImage(t *testing.T, arch string, es ...[]hostileEnt) v1.Image {
	t.Helper()
	ls := []v1.Layer{hostileLayer(t, hostileEnt{name: "etc/os-release", typ: tar.TypeReg, body: "ID=debian\nVERSION_ID=\"12\"\n"})}
	for _, e := range es {
		ls = append(ls, hostileLayer(t, e...))
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	must(t, err)
	cfg, err := img.ConfigFile()
	must(t, err)
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	return img
}

// TestHostileLinksExportConvert: images export (each format) and images
// convert refuse an image whose layers escape the root, in any layer,
// with validate.ErrUnsafePaths and nothing written: no file, no
// temporary left beside it, no tag pushed. A harmless image goes through.
func TestHostileLinksExportConvert(t *testing.T) {
	sym := func(n, l string) hostileEnt { return hostileEnt{name: n, typ: tar.TypeSymlink, link: l} }
	hard := func(n, l string) hostileEnt { return hostileEnt{name: n, typ: tar.TypeLink, link: l} }
	file := func(n string) hostileEnt { return hostileEnt{name: n, typ: tar.TypeReg, body: "x"} }
	cases := []struct {
		name   string
		layers [][]hostileEnt
		unsafe bool
	}{
		{"hard link above the root", [][]hostileEnt{{hard("shadow", "../../../etc/shadow")}}, true},
		{"file through a symlink to /etc", [][]hostileEnt{{sym("lnk", "/etc"), file("lnk/passwd")}}, true},
		{"file through a lower layer's symlink", [][]hostileEnt{{sym("lnk", "/etc")}, {file("lnk/cron.d/x")}}, true},
		{"harmless links", [][]hostileEnt{{sym("lib", "usr/lib"), file("usr/lib/x"), hard("y", "usr/lib/x")}}, false},
	}
	host := newServer(t).host
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := host + "/hostile/w" + string(rune('a'+i)) + ":src"
			r, err := name.ParseReference(src)
			must(t, err)
			must(t, remote.Write(r, platformImage(t, "amd64", c.layers...)))
			dir := t.TempDir()
			for _, f := range []images.Format{images.FormatOCI, images.FormatOCIArchive, images.FormatDockerArchive} {
				dest := filepath.Join(dir, string(f))
				_, err := Export(t.Context(), src, dest, f)
				checkRefused(t, "export --format "+string(f), err, c.unsafe)
				if c.unsafe {
					if ents, _ := os.ReadDir(dir); len(ents) != 0 {
						t.Errorf("export --format %s left %v", f, ents)
					}
				}
			}
			dst := host + "/hostile/w" + string(rune('a'+i)) + ":zstd"
			_, err = Convert(t.Context(), src, dst, matrix.CompressionZstd, images.WithTempDir(t.TempDir()))
			checkRefused(t, "convert", err, c.unsafe)
			d, _ := name.ParseReference(dst)
			if _, err := remote.Head(d); c.unsafe && err == nil {
				t.Errorf("convert pushed %s", dst)
			}
		})
	}
}

// TestHostileLinksImportIndex: an index whose arm64 image writes through
// a symlink to /etc is refused when import pushes the whole index, though
// the target's validation judges the amd64 image alone.
func TestHostileLinksImportIndex(t *testing.T) {
	host := newServer(t).host
	good := platformImage(t, "amd64")
	bad := platformImage(t, "arm64", []hostileEnt{{name: "lnk", typ: tar.TypeSymlink, link: "/etc"}}, []hostileEnt{{name: "lnk/passwd", typ: tar.TypeReg, body: "x"}})
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

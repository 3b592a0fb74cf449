package verbs

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// hostileEnt is one tar entry: typ is tar's type flag, link a link's
// target.
type hostileEnt struct {
	name string
	typ  byte
	link string
	body string
}

func hostileLayer(t *testing.T, es ...hostileEnt) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil && h.Size > 0 {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestHostileLinksImport: images import refuses each link escape and
// each secret outside the named files, pushes nothing, and prints no
// secret.
func TestHostileLinksImport(t *testing.T) {
	ghp := "ghp_" + strings.Repeat("aB3dE6gH9j", 3) + "kLmNoP"
	netrcPass := "s3cr3tNetrcPassw0rd42"
	reg := func(n, b string) hostileEnt { return hostileEnt{name: n, typ: tar.TypeReg, body: b} }
	sym := func(n, l string) hostileEnt { return hostileEnt{name: n, typ: tar.TypeSymlink, link: l} }
	hard := func(n, l string) hostileEnt { return hostileEnt{name: n, typ: tar.TypeLink, link: l} }
	cases := []struct {
		name   string
		layers [][]hostileEnt
		check  string // the failed check the refusal names
		secret string
	}{
		{"hard link above the root", [][]hostileEnt{{hard("shadow", "../../../etc/shadow")}}, "unsafe-paths", ""},
		{"file through a symlink to /etc", [][]hostileEnt{{sym("lnk", "/etc"), reg("lnk/passwd", "root::0:0::/:/bin/sh\n")}}, "unsafe-paths", ""},
		{"file through a lower layer's symlink", [][]hostileEnt{{sym("lnk", "/etc")}, {reg("lnk/cron.d/x", "* * * * * root sh\n")}}, "unsafe-paths", ""},
		{"GitHub token in gh's hosts.yml", [][]hostileEnt{{reg("root/.config/gh/hosts.yml", "github.com:\n    oauth_token: "+ghp+"\n")}}, "secrets", ghp[4:]},
		{".netrc through a hard link", [][]hostileEnt{{reg("opt/n", "machine x.example.com login ci password "+netrcPass+"\n"), hard("root/.netrc", "opt/n")}}, "secrets", netrcPass},
	}
	host := newServer(t).host
	db := builtin(t)
	target := matrix.Target{Name: "test/docker", Platforms: []string{"linux/amd64"},
		MediaTypes: []matrix.ManifestFormat{matrix.FormatDocker}, Compressions: []matrix.Compression{matrix.CompressionGzip}}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ls := []v1.Layer{hostileLayer(t, reg("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n"))}
			for _, es := range c.layers {
				ls = append(ls, hostileLayer(t, es...))
			}
			img, err := mutate.AppendLayers(empty.Image, ls...)
			must(t, err)
			cfg, err := img.ConfigFile()
			must(t, err)
			cfg = cfg.DeepCopy()
			cfg.OS, cfg.Architecture = "linux", "amd64"
			img, err = mutate.ConfigFile(img, cfg)
			must(t, err)
			src := host + "/hostile/src:" + string(rune('a'+i))
			r, err := name.ParseReference(src)
			must(t, err)
			must(t, remote.Write(r, img))
			dst := host + "/hostile/dst:" + string(rune('a'+i))
			res, err := Import(t.Context(), src, target, dst, db, images.WithTempDir(t.TempDir()))
			if !errors.Is(err, images.ErrRefused) {
				t.Fatalf("import: %v, want refused", err)
			}
			var refused *images.RefusedError
			if !errors.As(err, &refused) || len(refused.Reasons) != 1 || refused.Reasons[0].Name != c.check {
				t.Errorf("the refusal's reason is not %s alone: %v", c.check, err)
			}
			if c.secret != "" && strings.Contains(err.Error()+renderAll(res), c.secret) {
				t.Errorf("the secret is shown")
			}
			d, _ := name.ParseReference(dst)
			if _, err := remote.Head(d); err == nil {
				t.Errorf("%s was pushed", dst)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// renderAll is every message of an import's checks.
func renderAll(res *images.ImportResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Checks {
		b.WriteString(c.Message + "\n")
	}
	return b.String()
}

package cli

import (
	"archive/tar"
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// linkEnt is one tar entry of a hostile layer.
type linkEnt struct {
	name string
	typ  byte
	link string
	body string
}

func linkLayer(t *testing.T, es ...linkEnt) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		must(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write([]byte(e.body))
			must(t, err)
		}
	}
	must(t, tw.Close())
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	must(t, err)
	return l
}

// TestValidateHostileLinksAndSecrets: gpuimg validate on each hostile
// image (built here, in an oci: layout) exits 1 naming the check, and
// prints no secret in text or JSON.
func TestValidateHostileLinksAndSecrets(t *testing.T) {
	ghp := "ghp_" + strings.Repeat("Zq7Wx2Kp9R", 3) + "mN4bV6"
	kube := "eyJhbGciOiJSUzI1NiIsImtpZCI6" + strings.Repeat("Q3xT9", 8)
	pass := "n3trcHardLinkedPassw0rd"
	akia := "AKIAQ7WX2KP9RMN4BV6Z"
	reg := func(n, b string) linkEnt { return linkEnt{name: n, typ: tar.TypeReg, body: b} }
	sym := func(n, l string) linkEnt { return linkEnt{name: n, typ: tar.TypeSymlink, link: l} }
	hard := func(n, l string) linkEnt { return linkEnt{name: n, typ: tar.TypeLink, link: l} }
	pad := strings.Repeat("A=1\n", (2<<20)/4)
	cases := []struct {
		name   string
		layers [][]linkEnt
		check  string
		secret string
	}{
		{"hard link to ../../../etc/shadow", [][]linkEnt{{hard("shadow", "../../../etc/shadow")}}, "unsafe-paths", ""},
		{"lnk -> /etc, then lnk/passwd", [][]linkEnt{{sym("lnk", "/etc"), reg("lnk/passwd", "x")}}, "unsafe-paths", ""},
		{"lnk -> /etc, lnk/passwd in a later layer", [][]linkEnt{{sym("lnk", "/etc")}, {reg("lnk/passwd", "x")}}, "unsafe-paths", ""},
		{"ghp_ in gh's hosts.yml", [][]linkEnt{{reg("root/.config/gh/hosts.yml", "github.com:\n    oauth_token: "+ghp+"\n")}}, "secrets", ghp[4:]},
		{"ghp_ in application source", [][]linkEnt{{reg("app/main.py", "TOKEN = '"+ghp+"'\n")}}, "secrets", ghp[4:]},
		{"kubeconfig token", [][]linkEnt{{reg("root/.kube/config", "users:\n- name: ci\n  user:\n    token: "+kube+"\n")}}, "secrets", kube[20:]},
		{".netrc reached through a hard link", [][]linkEnt{{reg("srv/n", "machine h.example.com login ci password "+pass+"\n"), hard("root/.netrc", "srv/n")}}, "secrets", pass},
		{"credential after the first MiB of a .env", [][]linkEnt{{reg("app/.env", pad+"AWS_ACCESS_KEY_ID="+akia+"\n")}}, "secrets", akia[4:]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ls := []v1.Layer{linkLayer(t, reg("etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"))}
			for _, es := range c.layers {
				ls = append(ls, linkLayer(t, es...))
			}
			img, err := mutate.AppendLayers(empty.Image, ls...)
			must(t, err)
			dir := filepath.Join(t.TempDir(), "layout")
			p, err := layout.Write(dir, empty.Index)
			must(t, err)
			must(t, p.AppendImage(img))
			for _, format := range []string{"text", "json"} {
				out, errOut, code := run(t, "validate", "oci:"+dir, "-o", format)
				if code != ExitFailed {
					t.Errorf("-o %s: exit %d, want %d\n%s", format, code, ExitFailed, lastLines(out+errOut, 5))
				}
				if !strings.Contains(out, c.check) {
					t.Errorf("-o %s: %s is not named:\n%s", format, c.check, lastLines(out, 10))
				}
				if c.secret != "" && strings.Contains(out+errOut, c.secret) {
					t.Errorf("-o %s: the secret is printed", format)
				}
			}
		})
	}
}

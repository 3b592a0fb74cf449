package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// HostileClass is what a hostile input attacks.
type HostileClass string

// The classes of the hostile corpus (issue 45). Every class has at least
// one case in HostileCorpus; HostileClasses lists them all.
const (
	// ClassLayout: an oci: layout whose index.json or config is a device,
	// a FIFO or over the 4 MiB bound.
	ClassLayout HostileClass = "layout"
	// ClassArchive: a docker-archive whose layer is a 64 GiB hole, or is
	// reached through 20,000 symlinks.
	ClassArchive HostileClass = "archive"
	// ClassLinks: layers whose links escape the root when unpacked.
	ClassLinks HostileClass = "links"
	// ClassSecrets: credentials outside the files the secrets check names.
	ClassSecrets HostileClass = "secrets"
	// ClassRegistry: a registry that loops, stalls, streams without end
	// or fails (BadRegistry).
	ClassRegistry HostileClass = "registry"
)

// HostileClasses are every class, in the order HostileCorpus builds them.
var HostileClasses = []HostileClass{ClassLayout, ClassArchive, ClassLinks, ClassSecrets, ClassRegistry}

// HostileCase is one hostile input, built at test time.
type HostileCase struct {
	Name  string
	Class HostileClass
	// Source is what a verb reads: oci:DIR, docker-archive:FILE, or a
	// reference on Registry.
	Source string
	// Registry is the case's own registry, where a registry-borne Source
	// is. It misbehaves as Misbehavior says once the corpus is built.
	Registry    *BadRegistry
	Misbehavior Misbehavior
	// Secret is a credential Source holds, to be printed nowhere ("" none).
	Secret string
	// Names is what a refusal names: the check, or the bound.
	Names string
}

// TarEntry is one entry of a layer TarLayer writes: Type is tar's type
// flag, Link a link's target, Body a regular file's content.
type TarEntry struct {
	Name, Link, Body string
	Type             byte
}

// File, Symlink and Hardlink are TarEntry values of each type.
func File(name, body string) TarEntry { return TarEntry{Name: name, Body: body, Type: tar.TypeReg} }

// Symlink is a symbolic link name -> target.
func Symlink(name, target string) TarEntry {
	return TarEntry{Name: name, Link: target, Type: tar.TypeSymlink}
}

// Hardlink is a hard link name to target.
func Hardlink(name, target string) TarEntry {
	return TarEntry{Name: name, Link: target, Type: tar.TypeLink}
}

// TarLayer is an uncompressed-tar layer (gzipped by go-containerregistry)
// of es, in order.
func TarLayer(es ...TarEntry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Linkname: e.Link, Mode: 0o644, Format: tar.FormatPAX}
		if e.Type == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, e.Body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// LayeredImage is a linux/arch image of a Debian os-release layer, then
// one layer per element of layers.
func LayeredImage(arch string, layers ...[]TarEntry) (v1.Image, error) {
	base, err := TarLayer(File("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n"))
	if err != nil {
		return nil, err
	}
	ls := []v1.Layer{base}
	for _, es := range layers {
		l, err := TarLayer(es...)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	return mutate.ConfigFile(img, cfg)
}

// hostileSpec is one case before it is built: build writes its input
// under dir (or pushes it to reg) and returns the Source.
type hostileSpec struct {
	name, names, secret string
	class               HostileClass
	misbehavior         Misbehavior
	build               func(ctx context.Context, dir string, reg *BadRegistry) (string, error)
}

// HostileCorpus builds every hostile input under dir (sparse files: a few
// MiB on disk) and starts one BadRegistry per case on loopback. close
// stops the registries.
func HostileCorpus(ctx context.Context, dir string) (cases []HostileCase, close func() error, err error) {
	var regs []*BadRegistry
	close = func() error {
		var errs []error
		for _, r := range regs {
			errs = append(errs, r.Close())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			_ = close()
		}
	}()
	for i, s := range hostileSpecs() {
		reg, err := StartBadRegistry()
		if err != nil {
			return nil, nil, err
		}
		regs = append(regs, reg)
		caseDir := filepath.Join(dir, fmt.Sprintf("case%02d", i))
		if err := os.MkdirAll(caseDir, 0o755); err != nil {
			return nil, nil, err
		}
		src, err := s.build(ctx, caseDir, reg)
		if err != nil {
			return nil, nil, fmt.Errorf("hostile case %q: %w", s.name, err)
		}
		reg.Set(s.misbehavior)
		cases = append(cases, HostileCase{Name: s.name, Class: s.class, Source: src, Registry: reg,
			Misbehavior: s.misbehavior, Secret: s.secret, Names: s.names})
	}
	return cases, close, nil
}

func hostileSpecs() []hostileSpec {
	ghp := "ghp_" + strings.Repeat("Zq7Wx2Kp9R", 3) + "mN4bV6"
	kube := "eyJhbGciOiJSUzI1NiIsImtpZCI6" + strings.Repeat("Q3xT9", 8)
	netrc := "n3trcHardLinkedPassw0rd"
	akia := "AKIAQ7WX2KP9RMN4BV6Z"
	pad := strings.Repeat("A=1\n", (2<<20)/4)
	specs := []hostileSpec{
		{name: "index.json is /dev/zero", class: ClassLayout, names: "not a regular file (a character device)",
			build: spoiledLayout(func(p string) error { return os.Symlink("/dev/zero", p) })},
		{name: "index.json is a FIFO", class: ClassLayout, names: "not a regular file (a FIFO)",
			build: spoiledLayout(func(p string) error { return syscall.Mkfifo(p, 0o644) })},
		{name: "config of 5 MiB", class: ClassLayout, names: "over the limit of 4 MiB", build: bigConfigLayout},
		{name: "docker-archive layer.tar of 64 GiB of holes", class: ClassArchive, names: "the decompression-bomb bound of every layer",
			build: func(_ context.Context, dir string, _ *BadRegistry) (string, error) {
				f, err := SparseDockerArchive(dir, 64<<30, false)
				return "docker-archive:" + f, err
			}},
		{name: "docker-archive layer through 20,000 symlinks", class: ClassArchive, names: "more than 40 links",
			build: func(_ context.Context, dir string, _ *BadRegistry) (string, error) {
				f, err := LinkChainDockerArchive(dir, 20_000)
				return "docker-archive:" + f, err
			}},
	}
	for _, c := range []struct {
		name, names, secret string
		class               HostileClass
		layers              [][]TarEntry
	}{
		{"hard link to ../../../etc/shadow", "unsafe-paths", "", ClassLinks, [][]TarEntry{{Hardlink("shadow", "../../../etc/shadow")}}},
		{"lnk -> /etc, then lnk/passwd", "unsafe-paths", "", ClassLinks, [][]TarEntry{{Symlink("lnk", "/etc"), File("lnk/passwd", "root::0:0::/:/bin/sh\n")}}},
		{"lnk -> /etc, lnk/cron.d/x in a later layer", "unsafe-paths", "", ClassLinks, [][]TarEntry{{Symlink("lnk", "/etc")}, {File("lnk/cron.d/x", "* * * * * root sh\n")}}},
		{"ghp_ in gh's hosts.yml", "secrets", ghp[4:], ClassSecrets, [][]TarEntry{{File("root/.config/gh/hosts.yml", "github.com:\n    oauth_token: "+ghp+"\n")}}},
		{"ghp_ in application source", "secrets", ghp[4:], ClassSecrets, [][]TarEntry{{File("app/main.py", "TOKEN = '"+ghp+"'\n")}}},
		{"kubeconfig token", "secrets", kube[20:], ClassSecrets, [][]TarEntry{{File("root/.kube/config", "users:\n- name: ci\n  user:\n    token: "+kube+"\n")}}},
		{".netrc reached through a hard link", "secrets", netrc, ClassSecrets, [][]TarEntry{{File("srv/n", "machine h.example.com login ci password "+netrc+"\n"), Hardlink("root/.netrc", "srv/n")}}},
		{"AWS key after the first MiB of a .env", "secrets", akia[4:], ClassSecrets, [][]TarEntry{{File("app/.env", pad+"AWS_ACCESS_KEY_ID="+akia+"\n")}}},
	} {
		specs = append(specs, hostileSpec{name: c.name, class: c.class, names: c.names, secret: c.secret, build: pushed(c.layers)})
	}
	for _, m := range []struct {
		m     Misbehavior
		names string
	}{
		{RedirectLoop, "redirect"},
		{EndlessBlobs, "error verifying sha256 checksum"}, // bytes past the declared size are never read
		{NoHeaders, "registry"},
		{Trickle, "registry"},
		{ServerErrors, "the registry answered with a server error (HTTP 500) every time"},
	} {
		specs = append(specs, hostileSpec{name: "registry " + string(m.m), class: ClassRegistry, names: m.names, misbehavior: m.m,
			build: pushed([][]TarEntry{{File("app/x", "x")}})})
	}
	return specs
}

// pushed pushes an image of layers to the case's registry as hostile/src:t.
func pushed(layers [][]TarEntry) func(context.Context, string, *BadRegistry) (string, error) {
	return func(ctx context.Context, _ string, reg *BadRegistry) (string, error) {
		img, err := LayeredImage("amd64", layers...)
		if err != nil {
			return "", err
		}
		src := reg.Host + "/hostile/src:t"
		ref, err := name.ParseReference(src)
		if err != nil {
			return "", err
		}
		return src, remote.Write(ref, img, remote.WithContext(ctx))
	}
}

// smallLayout writes an oci: layout of a one-layer image under dir.
func smallLayout(dir string) (string, *v1.Manifest, error) {
	img, err := LayeredImage("amd64")
	if err != nil {
		return "", nil, err
	}
	p, err := layout.Write(filepath.Join(dir, "layout"), empty.Index)
	if err != nil {
		return "", nil, err
	}
	if err := p.AppendImage(img); err != nil {
		return "", nil, err
	}
	m, err := img.Manifest()
	return string(p), m, err
}

// spoiledLayout writes a layout and replaces its index.json by spoil's.
func spoiledLayout(spoil func(string) error) func(context.Context, string, *BadRegistry) (string, error) {
	return func(_ context.Context, dir string, _ *BadRegistry) (string, error) {
		lay, _, err := smallLayout(dir)
		if err != nil {
			return "", err
		}
		index := filepath.Join(lay, "index.json")
		if err := os.Remove(index); err != nil {
			return "", err
		}
		return "oci:" + lay, spoil(index)
	}
}

// bigConfigLayout writes a layout whose config blob is a 5 MiB hole,
// declared as such (the manifest and index.json rewritten to match).
func bigConfigLayout(_ context.Context, dir string, _ *BadRegistry) (string, error) {
	lay, m, err := smallLayout(dir)
	if err != nil {
		return "", err
	}
	if err := os.Truncate(filepath.Join(lay, "blobs", m.Config.Digest.Algorithm, m.Config.Digest.Hex), 5<<20); err != nil {
		return "", err
	}
	m = m.DeepCopy()
	m.Config.Size = 5 << 20
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	h, n, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(lay, "blobs", h.Algorithm, h.Hex), raw, 0o644); err != nil {
		return "", err
	}
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: "application/vnd.oci.image.index.v1+json",
		Manifests: []v1.Descriptor{{MediaType: m.MediaType, Digest: h, Size: n}}}
	rawIdx, err := json.Marshal(idx)
	if err != nil {
		return "", err
	}
	return "oci:" + lay, os.WriteFile(filepath.Join(lay, "index.json"), rawIdx, 0o644)
}

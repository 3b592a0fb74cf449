package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/daemon"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Transport says where an image lives. The names are skopeo's.
type Transport string

// Transports gpuimg reads.
const (
	Registry      Transport = "docker"         // docker://REF or a bare REF
	OCI           Transport = "oci"            // oci:DIR[:NAME]
	OCIArchive    Transport = "oci-archive"    // oci-archive:FILE[:NAME]
	DockerArchive Transport = "docker-archive" // docker-archive:FILE[:REF]
	DockerDaemon  Transport = "docker-daemon"  // docker-daemon:REF
)

// Ref is an image reference with its transport, parsed once and used by
// validate and images alike.
type Ref struct {
	Transport Transport
	// Name is the registry reference (docker, docker-daemon) or the path
	// (oci, oci-archive, docker-archive).
	Name string
	// Select picks one image inside a layout or archive: the
	// org.opencontainers.image.ref.name of an OCI layout, or the tag in a
	// docker archive. Empty means the only one.
	Select string
}

func (r Ref) String() string {
	switch r.Transport {
	case Registry:
		return r.Name
	case DockerDaemon:
		return "docker-daemon:" + r.Name
	}
	s := string(r.Transport) + ":" + r.Name
	if r.Select != "" {
		s += ":" + r.Select
	}
	return s
}

// ParseRef parses an image reference as skopeo writes them.
func ParseRef(s string) (Ref, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Ref{}, errors.New("empty image reference")
	}
	t, rest, ok := strings.Cut(s, ":")
	switch Transport(t) {
	case OCI, OCIArchive, DockerArchive:
		if !ok || rest == "" {
			return Ref{}, fmt.Errorf("image %q: %s needs a path (%s:PATH)", s, t, t)
		}
		p, sel, _ := strings.Cut(rest, ":")
		return Ref{Transport: Transport(t), Name: p, Select: sel}, nil
	case DockerDaemon:
		if _, err := name.ParseReference(rest); err != nil {
			return Ref{}, fmt.Errorf("image %q: %w", s, err)
		}
		return Ref{Transport: DockerDaemon, Name: rest}, nil
	}
	explicit := strings.HasPrefix(s, "docker://")
	s = strings.TrimPrefix(s, "docker://")
	if !explicit {
		// A bare name that is a file or a layout here is almost surely
		// meant as one, not as docker.io/library/NAME.
		if fi, err := os.Stat(s); err == nil && (fi.Mode().IsRegular() || isLayoutDir(s)) {
			what := "file"
			if fi.IsDir() {
				what = "OCI layout directory"
			}
			return Ref{}, fmt.Errorf("image %q is a %s here, which needs a transport: %s (docker://%s reads the registry image of that name)", s, what, useFor(s), s)
		}
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return Ref{}, fmt.Errorf("image %q: unknown transport %q; use a registry reference, oci:DIR, oci-archive:FILE, docker-archive:FILE or docker-daemon:REF", s, s[:i])
	}
	if _, err := name.ParseReference(s); err != nil {
		return Ref{}, fmt.Errorf("image %q is not a registry reference, oci:DIR, oci-archive:FILE, docker-archive:FILE or docker-daemon:REF: %w", s, err)
	}
	return Ref{Transport: Registry, Name: s}, nil
}

// Opened is an image ready to read. Close releases temporary files.
type Opened struct {
	Image v1.Image
	// Digest is the digest of the image's manifest.
	Digest string
	// Platform is the image's platform, os/arch[/variant]: the one
	// selected from an index, else the one its config names ("unknown"
	// for none).
	Platform string
	close    func() error
}

// Close removes temporary files made by Open.
func (o *Opened) Close() error {
	if o.close == nil {
		return nil
	}
	return o.close()
}

// Open reads the image a reference names. Layers are read lazily. From a
// multi-platform index it takes WithPlatform's image (default
// linux/amd64); archives are unpacked under WithTempDir's directory.
func Open(ctx context.Context, r Ref, opts ...Option) (*Opened, error) {
	opt, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	platform := opt.platformOr(linuxAMD64)
	pl := &platform
	switch r.Transport {
	case Registry:
		ref, err := opt.parse(r.Name)
		if err != nil {
			return nil, err
		}
		desc, err := remote.Get(ref, opt.remote(ctx, remote.WithPlatform(*pl))...)
		if te, ok := errors.AsType[*transport.Error](err); ok && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
			return nil, explain("fetch", ref, err) // names how to log in, as copy does
		}
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", r, err)
		}
		img, err := desc.Image()
		if err != nil {
			return nil, fmt.Errorf("read %s for %s: %w", r, pl, err)
		}
		img = countedImage{Image: img}
		if !desc.MediaType.IsIndex() {
			if err := checkPlatform(r, img, opt.platform); err != nil {
				return nil, err
			}
		}
		return opened(r, img, desc.MediaType.IsIndex(), pl, nil, opt.progress)
	case OCI, OCIArchive, DockerArchive:
		idx, img, cleanup, err := openLocal(ctx, r, opt)
		if err != nil {
			return nil, err
		}
		fail := func(err error) (*Opened, error) {
			if cleanup != nil {
				err = errors.Join(err, cleanup())
			}
			return nil, err
		}
		if idx != nil {
			if img, err = platformImage(r, idx, pl); err != nil {
				return fail(err)
			}
		} else if err := checkPlatform(r, img, opt.platform); err != nil {
			return fail(err)
		}
		o, err := opened(r, img, idx != nil, pl, cleanup, opt.progress)
		if err != nil {
			return fail(err)
		}
		return o, nil
	case DockerDaemon:
		ref, err := name.ParseReference(r.Name)
		if err != nil {
			return nil, err
		}
		img, err := daemon.Image(ref, daemon.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("read %s from the Docker daemon: %w", r, err)
		}
		if err := checkPlatform(r, img, opt.platform); err != nil {
			return nil, err
		}
		return opened(r, img, false, pl, nil, opt.progress)
	}
	return nil, fmt.Errorf("unknown transport %q", r.Transport)
}

func opened(r Ref, img v1.Image, fromIndex bool, pl *v1.Platform, cleanup func() error, progress *progressSink) (*Opened, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("image digest: %w", err)
	}
	o := &Opened{Image: img, Digest: d.String(), close: cleanup, Platform: pl.String()}
	o.Image = withReadProgress(img, progress)
	if !fromIndex {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("read config of %s: %w", r, err)
		}
		o.Platform = platformString(cfg.Platform())
	}
	return o, nil
}

// DefaultPlatform is the platform Open reads from an index when
// WithPlatform names none: linux/amd64.
func DefaultPlatform() v1.Platform { return linuxAMD64 }

// PlatformError is a single image that is not the platform asked for:
// reading it anyway would judge or copy another platform in its place.
type PlatformError struct {
	Ref Ref
	// Got is the image's platform, Want the one asked for.
	Got, Want string
}

func (e *PlatformError) Error() string {
	return fmt.Sprintf("%s is one %s image, not an index with a %s image: give the %s image, or ask for %s (or no platform)", e.Ref, e.Got, e.Want, e.Want, e.Got)
}

// ParsePlatform parses a platform as docker's --platform takes it:
// os/arch[/variant] (linux/amd64, linux/arm64/v8), optionally with
// :osversion. Anything else is an error, not an OS named "foo".
func ParsePlatform(s string) (*v1.Platform, error) {
	p, _, _ := strings.Cut(s, ":")
	parts := strings.Split(p, "/")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") || strings.ContainsAny(p, " \t") {
		return nil, fmt.Errorf("platform %q is not os/arch[/variant], e.g. linux/amd64 or linux/arm64/v8", s)
	}
	return v1.ParsePlatform(s)
}

// checkPlatform refuses a platform asked for (want; nil: none) that a
// single image, which has no other, is not: reading it anyway would judge
// another platform's image without a word.
func checkPlatform(r Ref, img v1.Image, want *v1.Platform) error {
	if want == nil {
		return nil
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read config of %s: %w", r, err)
	}
	got := cfg.Platform()
	if got == nil || got.OS == "" || got.Satisfies(*want) {
		return nil
	}
	return &PlatformError{Ref: r, Got: platformString(got), Want: platformString(want)}
}

// platformImage is the image of an index for platform pl.
func platformImage(r Ref, idx v1.ImageIndex, pl *v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Satisfies(*pl) && !IsAttestation(d) {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%s has no image for %s", r, pl)
}

// untar unpacks an OCI archive into dir, refusing entries that would
// land outside it: only index.json, oci-layout and the blobs index.json
// reaches (archiveMembers), none larger than its descriptor declares.
func untar(ctx context.Context, file, dir string) error {
	open := func() (io.ReadCloser, error) { return openCtx(ctx, file) }
	want, err := archiveMembers(open)
	if err != nil {
		return err
	}
	f, err := open()
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		clean := path.Clean("/" + h.Name)
		if strings.Contains(h.Name, "..") && clean != "/"+strings.TrimPrefix(h.Name, "./") {
			return fmt.Errorf("archive entry %q escapes the archive", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			size, ok := want[clean[1:]]
			if !ok {
				continue // nothing reaches it: not written
			}
			if size >= 0 && h.Size > size {
				// Not written; a shorter one is, and the layout reader names it.
				return fmt.Errorf("archive member %s is %d bytes, but its descriptor declares %d: the archive is corrupt; export it again", bound.Quote(h.Name), h.Size, size)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		default:
			// An OCI layout holds only directories and regular files.
		}
	}
}

// isLayoutDir says whether dir is an OCI image layout (holds index.json).
func isLayoutDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "index.json"))
	return err == nil && fi.Mode().IsRegular()
}

// IsLoopback reports whether a registry host (with optional port) is on
// this machine; such registries are reached over plain HTTP.
func IsLoopback(host string) bool {
	h := host
	if i := strings.LastIndex(h, ":"); i > 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "[::1]"
}

// tarDir archives a directory (an OCI layout) into file, in name order.
func tarDir(dir, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname, h.ModTime = "", "", info.ModTime().UTC()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, in)
		in.Close()
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Labelled says whether the registry reference ref holds an image (for
// WithPlatform's platform, default linux/amd64, when it is an index)
// whose config has the label key with value, and returns the digest ref
// resolves to (the index's, when it is one). An image that is not there
// is not labelled (no error); other failures are errors.
func Labelled(ctx context.Context, ref, key, value string, opts ...Option) (string, bool, error) {
	opt, err := makeOptions(opts...)
	if err != nil {
		return "", false, err
	}
	r, err := opt.parse(ref)
	if err != nil {
		return "", false, err
	}
	pl := opt.platformOr(linuxAMD64)
	desc, err := remote.Get(r, opt.remote(ctx, remote.WithPlatform(pl))...)
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
			return "", false, nil
		}
		return "", false, fmt.Errorf("fetch %s: %w", ref, err)
	}
	img, err := desc.Image()
	if err != nil {
		return "", false, fmt.Errorf("read %s for %s: %w", ref, pl, err)
	}
	if !desc.MediaType.IsIndex() && checkPlatform(Ref{Transport: Registry, Name: ref}, img, opt.platform) != nil {
		return desc.Digest.String(), false, nil // an image of another platform
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", false, fmt.Errorf("read the config of %s: %w", ref, err)
	}
	return desc.Digest.String(), cfg.Config.Labels[key] == value, nil
}

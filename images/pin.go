package images

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/redact"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// Base is a base image pinned by digest.
type Base struct {
	// Name is the canonical reference (docker.io/nvidia/cuda:12.2.2-runtime-ubuntu22.04).
	Name string `json:"name"`
	// Digest is the manifest or index digest the tag pointed at.
	Digest string `json:"digest"`
	// From is what the Dockerfile's FROM says: the registry (or its
	// mirror) reference with the digest.
	From string `json:"from"`
	// Created is the base image's creation time (of the first platform's
	// config), the default SOURCE_DATE_EPOCH.
	Created time.Time `json:"created"`
}

// Mirrors maps a registry host (docker.io) to a mirror (127.0.0.1:5000 or
// https://mirror.example.com). A plain host name or an http:// mirror on
// loopback is reached over plain HTTP.
type Mirrors map[string]string

// ParseMirrors parses REGISTRY=MIRROR pairs.
func ParseMirrors(pairs []string) (Mirrors, error) {
	m := Mirrors{}
	for _, p := range pairs {
		reg, mirror, ok := strings.Cut(p, "=")
		if !ok || reg == "" || mirror == "" {
			return nil, fmt.Errorf("registry mirror %q: want REGISTRY=MIRROR (docker.io=mirror.example.com)", redact.URLs(p))
		}
		if redact.HasPassword(mirror) {
			return nil, fmt.Errorf("registry mirror %s for %s holds a password: a mirror is reached with the credentials of docker login (config.json), not ones in its URL; give it as %s", redact.URLs(mirror), reg, stripUserinfo(mirror))
		}
		m[canonicalRegistry(reg)] = mirror
	}
	return m, nil
}

// stripUserinfo drops user:password@ from a URL.
func stripUserinfo(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	if i := strings.IndexByte(rest, '@'); i >= 0 && !strings.Contains(rest[:i], "/") {
		rest = rest[i+1:]
	}
	return scheme + "://" + rest
}

func canonicalRegistry(r string) string {
	switch r {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		return name.DefaultRegistry
	}
	return r
}

// MirrorHost returns the host of a mirror and whether it is plain HTTP.
func MirrorHost(m string) (host string, insecure bool) {
	switch {
	case strings.HasPrefix(m, "http://"):
		return strings.TrimSuffix(strings.TrimPrefix(m, "http://"), "/"), true
	case strings.HasPrefix(m, "https://"):
		return strings.TrimSuffix(strings.TrimPrefix(m, "https://"), "/"), false
	}
	return strings.TrimSuffix(m, "/"), IsLoopback(m)
}

// PinBase resolves tag (as the resolver names it, nvidia/cuda:…; or by
// digest, repo@sha256:… or repo:tag@sha256:…, where the digest decides
// what is pulled) to a digest, through a mirror when one is configured
// for its registry, and reads the creation time of WithPlatform's image
// (default linux/amd64). The builder uses it to pin FROM lines; images
// is the one package that talks to registries.
func PinBase(ctx context.Context, tag string, mirrors Mirrors, opts ...Option) (Base, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return Base{}, err
	}
	ref, err := name.ParseReference(tag)
	if err != nil {
		return Base{}, fmt.Errorf("parse base image %s: %w", tag, err)
	}
	id := identify(tag, ref)
	repo := ref.Context().Name()
	if ref.Context().RegistryStr() == name.DefaultRegistry {
		repo = "docker.io/" + ref.Context().RepositoryStr()
	}
	canonical := id.write(repo, id.digest)
	fetch, err := o.parse(tag)
	if err != nil {
		return Base{}, fmt.Errorf("parse base image %s: %w", tag, err)
	}
	if m, ok := mirrors[ref.Context().RegistryStr()]; ok {
		if fetch, err = mirrored(ref, id, m, o); err != nil {
			return Base{}, err
		}
	}
	desc, err := remote.Get(fetch, o.remote(ctx)...)
	if err != nil {
		return Base{}, fmt.Errorf("resolve base image %s (from %s): %w", canonical, fetch.Context().RegistryStr(), err)
	}
	b := Base{
		Name:   canonical,
		Digest: desc.Digest.String(),
		From:   id.write(fetch.Context().Name(), desc.Digest.String()),
	}
	img, err := desc.Image() // for an index, the platform's image
	if err != nil {
		return Base{}, fmt.Errorf("read base image %s: %w", canonical, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Base{}, fmt.Errorf("read base image config %s: %w", canonical, err)
	}
	b.Created = cfg.Created.UTC()
	return b, nil
}

// identifiers are a reference's tag and digest as written: a tag alone
// (latest when none is written), a digest alone, or both.
type identifiers struct{ tag, digest string }

// identify reads the tag and digest of s, which parsed as ref:
// name.Digest drops the tag of repo:tag@sha256:…, so it is read from s.
func identify(s string, ref name.Reference) identifiers {
	d, ok := ref.(name.Digest)
	if !ok {
		return identifiers{tag: ref.Identifier()}
	}
	id := identifiers{digest: d.DigestStr()}
	base, _, _ := strings.Cut(s, "@")
	if t, err := name.NewTag(base); err == nil && strings.HasSuffix(base, ":"+t.TagStr()) {
		id.tag = t.TagStr()
	}
	return id
}

// write is repo with the tag, if any, and digest, if any:
// repo:tag@digest, repo@digest or repo:tag.
func (id identifiers) write(repo, digest string) string {
	if id.tag != "" {
		repo += ":" + id.tag
	}
	if digest != "" {
		repo += "@" + digest
	}
	return repo
}

// mirrored is ref's repository on mirror m, by digest when ref names
// one (the digest is the same on any mirror), else by tag.
func mirrored(ref name.Reference, id identifiers, m string, o *options) (name.Reference, error) {
	host, plain := MirrorHost(m)
	var nopts []name.Option
	if plain || o.insecure(host) {
		nopts = append(nopts, name.Insecure)
	}
	s := host + "/" + ref.Context().RepositoryStr() + ":" + id.tag
	if id.digest != "" {
		s = host + "/" + ref.Context().RepositoryStr() + "@" + id.digest
	}
	r, err := name.ParseReference(s, nopts...)
	if err != nil {
		return nil, fmt.Errorf("mirror %s for %s: %w", bound.Cut(m), ref.Context().RegistryStr(), bound.Short(err))
	}
	return r, nil
}

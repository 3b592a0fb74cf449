package images

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestParseMirrors(t *testing.T) {
	m, err := ParseMirrors([]string{"docker.io=127.0.0.1:5000", "ghcr.io=https://ghcr-mirror.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if m["index.docker.io"] != "127.0.0.1:5000" || m["ghcr.io"] == "" {
		t.Errorf("mirrors = %v", m)
	}
	if _, err := ParseMirrors([]string{"docker.io"}); err == nil {
		t.Error("a mirror without = must be rejected")
	}
	if h, plain := MirrorHost("127.0.0.1:5000"); h != "127.0.0.1:5000" || !plain {
		t.Errorf("loopback mirror: %s %v", h, plain)
	}
	if h, plain := MirrorHost("mirror.example.com"); h != "mirror.example.com" || plain {
		t.Errorf("remote mirror: %s %v", h, plain)
	}
}

// TestPinBaseIndex pins a multi-platform base (as NVIDIA publishes them)
// by its index digest, through a mirror, and reads the creation time of the
// platform asked for.
func TestPinBaseIndex(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	idx := v1.ImageIndex(empty.Index)
	created := map[string]time.Time{"amd64": time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), "arm64": time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)}
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(1024, 1)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := img.ConfigFile()
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: created[arch]}
		img, err = mutate.ConfigFile(img, cfg)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	ref, _ := name.ParseReference(host + "/nvidia/cuda:12.2.2-runtime-ubuntu22.04")
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	mirrors := Mirrors{"index.docker.io": host}
	for arch, wantCreated := range created {
		b, err := PinBase(t.Context(), "nvidia/cuda:12.2.2-runtime-ubuntu22.04", mirrors, WithPlatform(&v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			t.Fatal(err)
		}
		if b.Digest != want.String() || b.From != host+"/nvidia/cuda:12.2.2-runtime-ubuntu22.04@"+want.String() || b.Name != "docker.io/nvidia/cuda:12.2.2-runtime-ubuntu22.04" {
			t.Errorf("%s: pinned %+v, want the index digest %s", arch, b, want)
		}
		if !b.Created.Equal(wantCreated) {
			t.Errorf("%s: created %s, want %s", arch, b.Created, wantCreated)
		}
	}
	if _, err := PinBase(t.Context(), "nvidia/cuda:0.0.0-runtime-ubuntu22.04", mirrors); err == nil || !strings.Contains(err.Error(), "resolve base image docker.io/nvidia/cuda:0.0.0-runtime-ubuntu22.04") {
		t.Errorf("missing tag: %v", err)
	}
}

// TestPinBaseDigest: a base given by digest, or by tag and digest, is
// fetched by its digest (through a mirror too: the digest is the same
// there) and pinned to it; the tag, when written, stays in FROM and the
// name. A mirror rewrite once gave host/repo:sha256:…, which does not
// parse.
func TestPinBaseDigest(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(host + "/nvidia/cuda:12.4.1-runtime-ubuntu22.04")
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	dig := d.String()
	missing := "sha256:" + strings.Repeat("0", 64)
	mirrors := Mirrors{"index.docker.io": host}
	for _, tt := range []struct {
		base       string
		mirrors    Mirrors
		name, from string // "" for an error
	}{
		{"nvidia/cuda:12.4.1-runtime-ubuntu22.04", mirrors, "docker.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04", host + "/nvidia/cuda:12.4.1-runtime-ubuntu22.04@" + dig},
		{"nvidia/cuda@" + dig, mirrors, "docker.io/nvidia/cuda@" + dig, host + "/nvidia/cuda@" + dig},
		{"docker.io/nvidia/cuda@" + dig, mirrors, "docker.io/nvidia/cuda@" + dig, host + "/nvidia/cuda@" + dig},
		{"nvidia/cuda:12.4.1-runtime-ubuntu22.04@" + dig, mirrors, "docker.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04@" + dig, host + "/nvidia/cuda:12.4.1-runtime-ubuntu22.04@" + dig},
		// The digest decides what is pulled, as for docker pull.
		{"nvidia/cuda:gone@" + dig, mirrors, "docker.io/nvidia/cuda:gone@" + dig, host + "/nvidia/cuda:gone@" + dig},
		{host + "/nvidia/cuda@" + dig, nil, host + "/nvidia/cuda@" + dig, host + "/nvidia/cuda@" + dig},
		{host + "/nvidia/cuda:12.4.1-runtime-ubuntu22.04@" + dig, nil, host + "/nvidia/cuda:12.4.1-runtime-ubuntu22.04@" + dig, host + "/nvidia/cuda:12.4.1-runtime-ubuntu22.04@" + dig},
		{"nvidia/cuda@" + missing, mirrors, "", ""},
	} {
		t.Run(tt.base, func(t *testing.T) {
			b, err := PinBase(t.Context(), tt.base, tt.mirrors)
			if tt.from == "" {
				if err == nil || !strings.Contains(err.Error(), "resolve base image docker.io/nvidia/cuda@"+missing) {
					t.Fatalf("pinned %+v, %v; want a resolve error", b, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Name != tt.name || b.From != tt.from || b.Digest != dig {
				t.Errorf("pinned %+v\nwant name %s, from %s, digest %s", b, tt.name, tt.from, dig)
			}
			if _, err := name.ParseReference(b.From); err != nil {
				t.Errorf("FROM %s does not parse: %v", b.From, err)
			}
		})
	}
}

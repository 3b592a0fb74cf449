package images

import "testing"

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

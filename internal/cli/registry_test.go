package cli

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestRegistryFlags checks that every command that reaches a registry
// takes the same flags, and that they get there: a TLS registry (in
// process) whose certificate is trusted only through --ca-file.
func TestRegistryFlags(t *testing.T) {
	for _, c := range [][]string{
		{"images", "copy"}, {"images", "export"}, {"images", "convert"}, {"images", "ls"},
		{"images", "rm"}, {"images", "promote"}, {"validate"}, {"sbom"}, {"build"}, {"sign"}, {"verify"},
	} {
		out, _, code := run(t, append(c, "--help")...)
		flags := []string{"--insecure-registry", "--ca-file", "--retries"}
		if c[0] != "build" { // BuildKit must be told insecure registries by name
			flags = append(flags, "--insecure ")
		}
		for _, f := range flags {
			if code != 0 || !strings.Contains(out, f) {
				t.Errorf("%s has no %s flag (exit %d)", strings.Join(c, " "), f, code)
			}
		}
	}

	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	stack, _, code := run(t, "matrix", "resolve", "--cuda", "12.2", "--os", "ubuntu22.04", "-o", "json")
	var s struct {
		BaseImage string `json:"base_image"`
	}
	if code != 0 || json.Unmarshal([]byte(stack), &s) != nil || s.BaseImage == "" {
		t.Fatalf("resolve: exit %d %s", code, stack)
	}
	for _, ref := range []string{host + "/ml/torch:1", host + "/" + strings.TrimPrefix(s.BaseImage, "docker.io/")} {
		img, err := random.Image(1024, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(r, img, remote.WithTransport(srv.Client().Transport)); err != nil {
			t.Fatal(err)
		}
	}

	for _, tt := range []struct {
		name string
		args []string
		want string // on stdout
	}{
		{"images ls", []string{"images", "ls", host + "/ml/torch"}, "1"},
		{"validate", []string{"validate", host + "/ml/torch:1", "-o", "json"}, `"digest"`},
		{"build", []string{"build", "--cuda", "12.2", "--os", "ubuntu22.04", "--registry-mirror", "docker.io=" + host, "--dockerfile-only"}, "FROM " + host + "/nvidia/cuda:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := run(t, tt.args...)
			if code != ExitInvalid || !strings.Contains(stderr, "certificate") {
				t.Errorf("without --ca-file: exit %d, %s", code, stderr)
			}
			for _, extra := range [][]string{{"--ca-file", caFile}, {"--insecure-registry", host}} {
				stdout, stderr, code := run(t, append(tt.args, extra...)...)
				if code == ExitInvalid || !strings.Contains(stdout, tt.want) {
					t.Errorf("with %s: exit %d, %s%s", extra[0], code, stdout, stderr)
				}
			}
		})
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--retries", "-1"}, "--retries -1"},
		{[]string{"--jobs", "0"}, "--jobs 0"},
		{[]string{"--ca-file", filepath.Join(t.TempDir(), "missing.pem")}, "--ca-file"},
		{[]string{"--ca-file", "registry_test.go"}, "holds no PEM certificate"},
	} {
		_, stderr, code := run(t, append([]string{"images", "ls", host + "/ml/torch"}, tt.args...)...)
		if code != ExitInvalid || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, %s", tt.args, code, stderr)
		}
	}
}

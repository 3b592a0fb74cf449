package cli

import (
	"encoding/base64"
	"errors"
	"io"
	"log"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// fakeSecret is a deterministic random string over alphabet: the shape of
// a credential, none real (as validate/secrets_test.go makes them).
func fakeSecret(seed uint64, alphabet string, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// fakePEMKey is a PEM private key of the right shape (random bytes).
func fakePEMKey() string {
	r := rand.New(rand.NewPCG(3, 9))
	raw := make([]byte, 600)
	for i := range raw {
		raw[i] = byte(r.IntN(256))
	}
	body := base64.StdEncoding.EncodeToString(raw)
	var lines []string
	for len(body) > 64 {
		lines, body = append(lines, body[:64]), body[64:]
	}
	lines = append(lines, body)
	return "-----BEGIN PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END PRIVATE KEY-----\n"
}

// TestImportRunsFullValidation is issue 23.6 through the CLI: an image
// that gpuimg validate --target runpod fails for an AWS key, a private key
// and a ../../etc/passwd entry, none of them a target check, is refused
// by images import --target runpod (exit 1), and the destination
// registry has no manifest under the tag.
// layoutOf writes an OCI layout holding one linux/amd64 image of one
// layer with the files given (name, content; names as written, so
// "../x" escapes) and CMD /app/serve.
func layoutOf(t *testing.T, files ...[2]string) string {
	t.Helper()
	img := filesImage(t, files, func(c *v1.Config) { c.Cmd = []string{"/app/serve"} })
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img))
	return dir
}

func TestImportRunsFullValidation(t *testing.T) {
	osRelease := [2]string{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"}
	dir := layoutOf(t, osRelease,
		[2]string{"app/.aws/credentials", "[default]\naws_access_key_id = AKIA" + fakeSecret(9, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567", 16) + "\n"},
		[2]string{"app/server.key", fakePEMKey()},
		[2]string{"../../etc/passwd", "root:x:0:0::/root:/bin/sh\n"})
	clean := layoutOf(t, osRelease, [2]string{"app/serve", "#!/bin/sh\n"})

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	dst := strings.TrimPrefix(srv.URL, "http://") + "/runpod/model:v1"

	out, _, code := run(t, "validate", "oci:"+dir, "--target", "runpod")
	// The status column is as wide as the widest status shown (UNKNOWN
	// when a fleet GPU's driver is unknown), so the checks are matched by
	// their fields.
	for _, want := range []string{"FAIL secrets", "AWS", "private key", "FAIL unsafe-paths", "../../etc/passwd"} {
		if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("validate --target runpod: exit %d, want %d and %q in\n%s", code, ExitFailed, want, out)
		}
	}
	out, errOut, code := run(t, "images", "import", "oci:"+dir, "--target", "runpod", "--to", dst)
	if code != ExitFailed || !strings.Contains(out, "refused: nothing pushed") {
		t.Fatalf("import: exit %d, want %d\n%s\n%s", code, ExitFailed, out, errOut)
	}
	for _, want := range []string{"import refused for runpod, nothing pushed", "AWS", "private key", "../../etc/passwd"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("import error lacks %q: %s", want, errOut)
		}
	}
	ref, err := name.ParseReference(dst)
	must(t, err)
	_, err = remote.Head(ref)
	var te *transport.Error
	if !errors.As(err, &te) || te.StatusCode != 404 {
		t.Errorf("after a refused import the destination answers %v, want 404", err)
	}
	repos, err := remote.Catalog(t.Context(), ref.Context().Registry)
	must(t, err)
	if len(repos) != 0 {
		t.Errorf("the registry holds %v after a refused import", repos)
	}
	// An image without the three problems is pushed: the refusal came
	// from them, not from the target.
	if out, errOut, code := run(t, "images", "import", "oci:"+clean, "--target", "runpod", "--to", dst); code != 0 || !strings.Contains(out, "pushed") {
		t.Errorf("import of a clean image: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := remote.Head(ref); err != nil {
		t.Errorf("the clean import left no tag: %v", err)
	}
}

package cli

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// pemKeyPair writes an ECDSA P-256 key pair (PKCS#8 and PKIX PEM) in dir
// as NAME.key and NAME.pub.
func pemKeyPair(t *testing.T, dir, name string) (key, pub string) {
	t.Helper()
	key, pub, err := testenv.PEMKeyPair(dir, name)
	must(t, err)
	return key, pub
}

// TestSignVerifyCommands runs gpuimg sign and verify against the
// in-process registry with PEM keys: exit codes, messages and
// --require (the cosign interop is TestCosignInterop).
func TestSignVerifyCommands(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/gpu/img:1"
	img, err := random.Image(256, 1)
	must(t, err)
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	must(t, remote.Write(r, img))

	dir := t.TempDir()
	key, pub := pemKeyPair(t, dir, "a")
	_, otherPub := pemKeyPair(t, dir, "b")

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout + stderr
	}{
		{"verify before signing", []string{"verify", ref, "--key", pub}, ExitFailed, "signature: none attached"},
		{"sign without a key", []string{"sign", ref}, ExitInvalid, "--key is required"},
		{"sign with a KMS key gpuimg does not link", []string{"sign", ref, "--key", "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k"}, ExitInvalid, "only AWS KMS keys (awskms://) are supported"},
		{"sign with a public key", []string{"sign", ref, "--key", pub}, ExitInvalid, "this is a public key"},
		{"sign with a bad format", []string{"sign", ref, "--key", key, "--signature-format", "v2"}, ExitInvalid, "want bundle"},
		{"sign", []string{"sign", ref, "--key", key, "--signature-format", "both"}, ExitOK, "signed sha256:"},
		{"verify", []string{"verify", ref, "--key", pub}, ExitOK, "has signature"},
		{"verify json", []string{"verify", ref, "--key", pub, "-o", "json"}, ExitOK, `"verified": true`},
		{"verify with another key", []string{"verify", ref, "--key", otherPub}, ExitFailed, "none verifies with this key"},
		{"verify requires validation", []string{"verify", ref, "--key", pub, "--require", "signature,validation"}, ExitFailed, "validation: none attached"},
		{"verify with a bad --require", []string{"verify", ref, "--key", pub, "--require", "vsa"}, ExitInvalid, "signature, sbom, provenance, validation"},
		{"verify with a private key", []string{"verify", ref, "--key", key}, ExitInvalid, "PEM public key"},
		{"validate --key without --attach", []string{"validate", ref, "--key", key}, ExitInvalid, "add --attach"},
		{"validate --sbom without --attach", []string{"validate", ref, "--sbom", "spdx-json"}, ExitInvalid, "add --attach"},
		{"validate --sbom with a bad format", []string{"validate", ref, "--attach", "--sbom", "xml"}, ExitInvalid, "--sbom: "},
		{"verify requires an SBOM", []string{"verify", ref, "--key", pub, "--require", "signature,sbom"}, ExitFailed, "sbom: none attached"},
		{"validate attaches a signed SBOM from its walk", []string{"validate", ref, "--attach", "--key", key, "--sbom", "cyclonedx-json"}, ExitOK, "SBOM (from the same read of the layers) to sha256:"},
		{"verify finds the SBOM", []string{"verify", ref, "--key", pub, "--require", "signature,sbom,validation"}, ExitOK, "has sbom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errb, code := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out+errb, tc.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, tc.code, tc.want, out, errb)
			}
		})
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/internal/verbs"
)

// TestSLSAVerifierVSA checks images promote --key against the real
// slsa-verifier (v2.7.1, tools/slsa-verifier/go.mod): verify-vsa accepts
// the PASSED summary of a promotion with the key's public key, the
// digest, gpuimg's verifier id, the promoted tag as resource and the
// policy's levels, and rejects it with another key, another digest or
// another resource, and rejects the FAILED summary of a refused
// promotion; cosign verify-attestation accepts the same statement in its
// bundle form, and rejects it with another key.
func TestSLSAVerifierVSA(t *testing.T) {
	testenv.Require(t, "builds slsa-verifier from tools/slsa-verifier/go.mod", testenv.Slow)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	slsa, err := testenv.SLSAVerifier(ctx)
	must(t, err)
	cosign, err := testenv.Cosign(ctx)
	must(t, err)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := t.TempDir()
	key, pub := pemKeyPair(t, dir, "good")
	_, otherPub := pemKeyPair(t, dir, "other")

	img, err := random.Image(512, 2)
	must(t, err)
	tagged := host + "/gpu/torch:nightly"
	r, err := name.ParseReference(tagged)
	must(t, err)
	must(t, remote.Write(r, img, remote.WithContext(ctx)))
	d, _ := img.Digest()
	if out, errb, code := run(t, "validate", tagged, "--attach"); code != 0 {
		t.Fatalf("gpuimg validate --attach: exit %d\n%s%s", code, out, errb)
	}
	if out, errb, code := run(t, "images", "promote", tagged, "--to", "stable", "--require", "static", "--key", key); code != 0 || !strings.Contains(errb, "recorded a PASSED verification summary") {
		t.Fatalf("gpuimg images promote --key: exit %d\n%s%s", code, out, errb)
	}
	if out, errb, code := run(t, "images", "promote", tagged, "--to", "gpu-ok", "--require", "gpu", "--key", key); code != cli.ExitFailed || !strings.Contains(errb, "recorded a FAILED verification summary") {
		t.Fatalf("gpuimg images promote --require gpu --key of a static report: exit %d, want %d\n%s%s", code, cli.ExitFailed, out, errb)
	}
	atts, err := verbs.VSAs(ctx, tagged)
	must(t, err)
	if len(atts) != 2 {
		t.Fatalf("%d verification summaries attached, want 2", len(atts))
	}
	files := map[string]string{}
	for _, a := range atts {
		result := "failed"
		if verifiedBy(t, a.Payload) {
			result = "passed"
		}
		f := filepath.Join(dir, result+".dsse.json")
		must(t, os.WriteFile(f, a.Payload, 0o644))
		files[result] = f
	}
	if files["passed"] == "" || files["failed"] == "" {
		t.Fatalf("summaries %v: want one PASSED, one FAILED", files)
	}
	verify := func(att, pubKey, digest, resource string) (string, error) {
		cmd := exec.CommandContext(ctx, slsa, "verify-vsa", "--attestation-path", att, "--subject-digest", digest,
			"--verifier-id", verbs.VSAVerifierID, "--resource-uri", resource, "--verified-level", "GPUIMG_VALIDATION_STATIC", "--public-key-path", pubKey)
		cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	stable := r.Context().Tag("stable").String()
	if out, err := verify(files["passed"], pub, d.String(), stable); err != nil {
		t.Errorf("slsa-verifier verify-vsa rejects the PASSED summary: %v\n%s", err, out)
	}
	for _, c := range []struct{ what, att, pub, digest, resource string }{
		{"another key", files["passed"], otherPub, d.String(), stable},
		{"another digest", files["passed"], pub, "sha256:" + strings.Repeat("0", 64), stable},
		{"another resource", files["passed"], pub, d.String(), r.Context().Tag("other").String()},
		{"the FAILED summary", files["failed"], pub, d.String(), r.Context().Tag("gpu-ok").String()},
	} {
		if out, err := verify(c.att, c.pub, c.digest, c.resource); err == nil {
			t.Errorf("%s: slsa-verifier verify-vsa accepted it\n%s", c.what, out)
		}
	}
	// The same statement in a bundle: cosign verify-attestation reads it.
	cosignVerify := func(pubKey string) (string, error) {
		cmd := exec.CommandContext(ctx, cosign, "verify-attestation", "--key", pubKey, "--insecure-ignore-tlog", "--allow-http-registry",
			"--type", verbs.PredicateVSA, r.Context().Digest(d.String()).String())
		cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "TUF_ROOT=" + filepath.Join(dir, "tuf")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cosignVerify(pub); err != nil || !strings.Contains(out, `"payloadType":"application/vnd.in-toto+json"`) {
		t.Errorf("cosign verify-attestation --type %s rejects the VSA: %v\n%s", verbs.PredicateVSA, err, out)
	}
	if out, err := cosignVerify(otherPub); err == nil {
		t.Errorf("cosign verify-attestation with another key accepted the VSA\n%s", out)
	}
}

// verifiedBy says whether an envelope's statement says PASSED.
func verifiedBy(t *testing.T, envelope []byte) bool {
	t.Helper()
	var env struct{ Payload []byte }
	must(t, json.Unmarshal(envelope, &env))
	return strings.Contains(string(env.Payload), `"verificationResult":"PASSED"`)
}

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
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// cosignKeys returns a runner of cosign in an environment of its own under
// dir (HOME, TUF_ROOT, no network but loopback) with COSIGN_PASSWORD
// password, after making two key pairs with cosign generate-key-pair:
// dir/good/cosign.{key,pub} and dir/other/cosign.{key,pub}.
func cosignKeys(ctx context.Context, t *testing.T, cosign, dir, password string) func(wd string, args ...string) (string, error) {
	t.Helper()
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(home, 0o755))
	run := func(wd string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, cosign, args...)
		cmd.Dir = wd
		cmd.Env = []string{"HOME=" + home, "COSIGN_PASSWORD=" + password, "PATH=/usr/bin:/bin", "TUF_ROOT=" + filepath.Join(home, "tuf")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, k := range []string{"good", "other"} {
		kd := filepath.Join(dir, k)
		must(t, os.MkdirAll(kd, 0o755))
		if out, err := run(kd, "generate-key-pair"); err != nil {
			t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
		}
	}
	return run
}

// TestCosignInterop checks gpuimg sign and verify against real cosign v3
// (tools/go.mod) on the distribution registry (which has no Referrers API:
// the tag fallback) and on go-containerregistry's registry with and
// without the Referrers API: cosign accepts gpuimg's signatures made with cosign's own key
// files, gpuimg accepts cosign's, and a moved tag, a replaced layer and a
// wrong key fail both.
func TestCosignInterop(t *testing.T) {
	testenv.Require(t, "builds cosign and the registry from tools/go.mod and starts the registry", testenv.Slow)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	tools, err := testenv.BuildTools(ctx)
	must(t, err)
	cosign, err := testenv.Cosign(ctx)
	must(t, err)
	reg, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
	must(t, err)
	defer reg.Stop()
	// The distribution registry (v3.1.2) has no Referrers API (GET
	// /v2/<repo>/referrers/<digest> is a 404), so the tag fallback is
	// tested on a real registry; go-containerregistry's registry serves the
	// API when asked to, and is tested without it too.
	withRef := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	defer withRef.Close()
	noRef := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer noRef.Close()

	dir := t.TempDir()
	cosignRun := cosignKeys(ctx, t, cosign, dir, "correct horse")
	goodKey, goodPub, otherPub := filepath.Join(dir, "good", "cosign.key"), filepath.Join(dir, "good", "cosign.pub"), filepath.Join(dir, "other", "cosign.pub")
	// A signing config without a transparency log: cosign v3's way to
	// sign offline (--tlog-upload=false is refused with its default
	// signing config).
	sc := filepath.Join(dir, "signing-config.json")
	if out, err := cosignRun(dir, "signing-config", "create", "--out", sc); err != nil {
		t.Fatalf("cosign signing-config create: %v\n%s", err, out)
	}
	// And an empty trusted root, so cosign sign does not reach for
	// Sigstore's TUF repository on the network.
	tr := filepath.Join(dir, "trusted-root.json")
	if out, err := cosignRun(dir, "trusted-root", "create", "--out", tr); err != nil {
		t.Fatalf("cosign trusted-root create: %v\n%s", err, out)
	}
	t.Setenv("COSIGN_PASSWORD", "correct horse")

	push := func(ref string, img v1.Image) string {
		r, err := name.ParseReference(ref, name.Insecure)
		must(t, err)
		must(t, remote.Write(r, img, remote.WithContext(ctx)))
		d, _ := img.Digest()
		return r.Context().Digest(d.String()).String()
	}
	cosignVerify := func(ref, pub string) (string, error) {
		return cosignRun(dir, "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", ref)
	}
	gpuimgVerify := func(ref, pub string) (string, int) {
		out, errb, code := run(t, "verify", ref, "--key", pub, "-o", "json")
		return out + errb, code
	}

	for _, rc := range []struct {
		name, host string
		fallback   bool // no Referrers API: the sha256-<hex> tag index holds the referrers
	}{
		{"distribution (tag fallback)", reg.Host, true},
		{"in-process with the referrers API", strings.TrimPrefix(withRef.URL, "http://"), false},
		{"in-process without it (tag fallback)", strings.TrimPrefix(noRef.URL, "http://"), true},
	} {
		host := rc.host
		t.Run(rc.name, func(t *testing.T) {
			img, err := random.Image(512, 2)
			must(t, err)
			tagged := host + "/gpu/torch:2.3"
			digest := push(tagged, img)

			// gpuimg sign with cosign's key file → cosign verify.
			if out, errb, code := run(t, "sign", tagged, "--key", goodKey, "--signature-format", "both"); code != 0 {
				t.Fatalf("gpuimg sign: exit %d\n%s%s", code, out, errb)
			}
			if out, err := cosignVerify(tagged, goodPub); err != nil {
				t.Errorf("cosign verify rejects gpuimg's signature: %v\n%s", err, out)
			}
			d, err := name.NewDigest(digest, name.Insecure)
			must(t, err)
			fb := d.Context().Tag(strings.Replace(d.DigestStr(), ":", "-", 1))
			if _, err := remote.Head(fb, remote.WithContext(ctx)); (err == nil) != rc.fallback {
				t.Errorf("referrers tag index %s: %v; want it only without the Referrers API", fb, err)
			}
			if out, code := gpuimgVerify(tagged, goodPub); code != 0 {
				t.Errorf("gpuimg verify rejects gpuimg's signature: exit %d\n%s", code, out)
			} else {
				var v struct {
					Statements []struct {
						Format   string
						Verified bool
					}
				}
				must(t, json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &v))
				formats := map[string]bool{}
				for _, s := range v.Statements {
					formats[s.Format] = formats[s.Format] || s.Verified
				}
				if !formats["bundle"] || !formats["legacy"] {
					t.Errorf("--signature-format both: verified formats %v, want bundle and legacy", formats)
				}
			}

			// An index: gpuimg signs it and each platform's manifest, and
			// cosign verifies both levels.
			idx, err := random.Index(256, 1, 2)
			must(t, err)
			ir, err := name.ParseReference(host+"/gpu/multi:1", name.Insecure)
			must(t, err)
			must(t, remote.WriteIndex(ir, idx, remote.WithContext(ctx)))
			if out, errb, code := run(t, "sign", ir.String(), "--key", goodKey); code != 0 || strings.Count(out, "signed ") != 3 {
				t.Fatalf("gpuimg sign of an index: exit %d, want 3 manifests signed\n%s%s", code, out, errb)
			}
			im, err := idx.IndexManifest()
			must(t, err)
			for _, ref := range []string{ir.String(), ir.Context().Digest(im.Manifests[1].Digest.String()).String()} {
				if out, err := cosignVerify(ref, goodPub); err != nil {
					t.Errorf("cosign verify %s: %v\n%s", ref, err, out)
				}
			}

			// cosign sign (no transparency log) → gpuimg verify.
			byCosign, err := random.Image(256, 1)
			must(t, err)
			cd := push(host+"/gpu/by-cosign:1", byCosign)
			if out, err := cosignRun(dir, "sign", "--key", goodKey, "--signing-config", sc, "--trusted-root", tr, "--allow-http-registry", "-y", cd); err != nil {
				t.Fatalf("cosign sign: %v\n%s", err, out)
			}
			if out, code := gpuimgVerify(cd, goodPub); code != 0 {
				t.Errorf("gpuimg verify rejects cosign's signature: exit %d\n%s", code, out)
			}
			// cosign attest's SBOM and SLSA provenance count for --require.
			for typ, pred := range map[string]string{
				"spdxjson":        `{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","name":"t","dataLicense":"CC0-1.0","documentNamespace":"https://example.com/t","creationInfo":{"created":"2026-01-01T00:00:00Z","creators":["Tool: test"]},"packages":[]}`,
				"slsaprovenance1": `{"buildDefinition":{"buildType":"https://example.com/t","externalParameters":{}},"runDetails":{"builder":{"id":"https://example.com/b"}}}`,
			} {
				pf := filepath.Join(t.TempDir(), typ+".json")
				must(t, os.WriteFile(pf, []byte(pred), 0o644))
				if out, err := cosignRun(dir, "attest", "--key", goodKey, "--signing-config", sc, "--trusted-root", tr, "--allow-http-registry", "-y",
					"--type", typ, "--predicate", pf, cd); err != nil {
					t.Fatalf("cosign attest --type %s: %v\n%s", typ, err, out)
				}
			}
			if out, errb, code := run(t, "verify", cd, "--key", goodPub, "--require", "signature,sbom,provenance"); code != 0 {
				t.Errorf("gpuimg verify --require signature,sbom,provenance of cosign's: exit %d\n%s%s", code, out, errb)
			}
			if out, errb, code := run(t, "verify", cd, "--key", otherPub, "--require", "sbom"); code != cli.ExitFailed || !strings.Contains(errb, "none verifies with this key") {
				t.Errorf("cosign's SBOM with another key: exit %d, want %d\n%s%s", code, cli.ExitFailed, out, errb)
			}

			// A legacy-only signature (cosign v2's .sig tag) is read by cosign v3.
			legacy, err := random.Image(256, 1)
			must(t, err)
			ld := push(host+"/gpu/legacy:1", legacy)
			if out, errb, code := run(t, "sign", ld, "--key", goodKey, "--signature-format", "legacy"); code != 0 {
				t.Fatalf("gpuimg sign --signature-format legacy: exit %d\n%s%s", code, out, errb)
			}
			if out, err := cosignVerify(ld, goodPub); err != nil {
				t.Errorf("cosign verify rejects gpuimg's legacy signature: %v\n%s", err, out)
			}

			// validate --attach --key: a signed test result that cosign
			// verify-attestation and gpuimg verify --require validation accept.
			if out, errb, code := run(t, "validate", digest, "--attach", "--key", goodKey); code != 0 {
				t.Fatalf("gpuimg validate --attach --key: exit %d\n%s%s", code, out, errb)
			}
			if out, err := cosignRun(dir, "verify-attestation", "--key", goodPub, "--insecure-ignore-tlog", "--allow-http-registry",
				"--type", "https://in-toto.io/attestation/test-result/v0.1", digest); err != nil {
				t.Errorf("cosign verify-attestation rejects gpuimg's test result: %v\n%s", err, out)
			}
			if out, errb, code := run(t, "verify", tagged, "--key", goodPub, "--require", "signature,validation"); code != 0 {
				t.Errorf("gpuimg verify --require signature,validation: exit %d\n%s%s", code, out, errb)
			}
			if out, errb, code := run(t, "verify", tagged, "--key", goodPub, "--require", "sbom,provenance"); code != cli.ExitFailed ||
				!strings.Contains(errb, "sbom: none attached") || !strings.Contains(errb, "provenance: none attached") {
				t.Errorf("gpuimg verify --require sbom,provenance without either: exit %d, want %d naming both\n%s%s", code, cli.ExitFailed, out, errb)
			}

			// sbom --attach --key (the key from env://, as CI holds it):
			// signed SPDX and CycloneDX attestations that cosign
			// verify-attestation and gpuimg verify --require sbom accept.
			keyPEM, err := os.ReadFile(goodKey)
			must(t, err)
			t.Setenv("GPUIMG_TEST_COSIGN_KEY", string(keyPEM))
			for format, typ := range map[string]string{"spdx-json": "spdxjson", "cyclonedx-json": "cyclonedx"} {
				if out, errb, code := run(t, "sbom", digest, "-o", format, "--attach", "--key", "env://GPUIMG_TEST_COSIGN_KEY"); code != 0 || !strings.Contains(errb, "attested it") {
					t.Fatalf("gpuimg sbom -o %s --attach --key: exit %d\n%.2000s%s", format, code, out, errb)
				}
				if out, err := cosignRun(dir, "verify-attestation", "--key", goodPub, "--insecure-ignore-tlog", "--allow-http-registry", "--type", typ, digest); err != nil {
					t.Errorf("cosign verify-attestation --type %s rejects gpuimg's SBOM: %v\n%s", typ, err, out)
				}
				if out, err := cosignRun(dir, "verify-attestation", "--key", otherPub, "--insecure-ignore-tlog", "--allow-http-registry", "--type", typ, digest); err == nil {
					t.Errorf("cosign verify-attestation --type %s with another key accepted gpuimg's SBOM\n%s", typ, out)
				}
			}
			if out, errb, code := run(t, "verify", tagged, "--key", goodPub, "--require", "signature,sbom,validation"); code != 0 {
				t.Errorf("gpuimg verify --require signature,sbom,validation after sbom --attach --key: exit %d\n%s%s", code, out, errb)
			}

			// Negative cases: each fails both verifiers.
			other, err := random.Image(512, 2)
			must(t, err)
			retagged := host + "/gpu/torch:moved"
			push(retagged, img)
			push(retagged, other) // the tag now names another digest
			layers, err := img.Layers()
			must(t, err)
			swap, err := random.Layer(512, "application/vnd.oci.image.layer.v1.tar+gzip")
			must(t, err)
			// The first layer kept, the second replaced.
			replaced, err := mutate.AppendLayers(empty.Image, layers[0], swap)
			must(t, err)
			replacedRef := push(host+"/gpu/torch:replaced", replaced)
			for _, c := range []struct{ what, ref, pub string }{
				{"retagged", retagged, goodPub},
				{"replaced layer", replacedRef, goodPub},
				{"wrong key", digest, otherPub},
			} {
				if out, code := gpuimgVerify(c.ref, c.pub); code != cli.ExitFailed {
					t.Errorf("%s: gpuimg verify exit %d, want %d\n%s", c.what, code, cli.ExitFailed, out)
				}
				if out, err := cosignVerify(c.ref, c.pub); err == nil {
					t.Errorf("%s: cosign verify accepted it\n%s", c.what, out)
				}
			}
		})
	}
}

package sign_test

// Fast tests against go-containerregistry's in-process registry, with and
// without the Referrers API (the second exercises the sha256-<hex> tag
// index fallback). The interop tests with real cosign and the
// distribution registry are in internal/cli (TestCosignInterop).

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images/sign"
)

func newRegistry(t *testing.T, referrers bool) string {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(referrers))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func ecKey(t *testing.T) (signature.SignerVerifier, crypto.PublicKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := sign.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sv, k.Public()
}

func pushIndex(t *testing.T, ref string) v1.ImageIndex {
	t.Helper()
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestSignVerify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		referrers bool
		format    sign.Format
		// want are the formats Verify must find verified.
		want []sign.Format
	}{
		{"bundle/referrers-api", true, sign.FormatBundle, []sign.Format{sign.FormatBundle}},
		{"bundle/tag-fallback", false, sign.FormatBundle, []sign.Format{sign.FormatBundle}},
		{"legacy", true, sign.FormatLegacy, []sign.Format{sign.FormatLegacy}},
		{"both/tag-fallback", false, sign.FormatBoth, []sign.Format{sign.FormatBundle, sign.FormatLegacy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := newRegistry(t, tc.referrers)
			ref := host + "/gpu/cuda:12"
			idx := pushIndex(t, ref)
			sv, pub := ecKey(t)
			// Before signing: nothing found, and JSON lists none (not null).
			unsigned, err := sign.Verify(t.Context(), ref, pub)
			if err != nil {
				t.Fatal(err)
			}
			if j, _ := json.Marshal(unsigned); !strings.Contains(string(j), `"statements":[]`) {
				t.Errorf("unsigned image's result %s, want \"statements\":[]", j)
			}
			signed, err := sign.Sign(t.Context(), ref, sv, sign.WithFormat(tc.format))
			if err != nil {
				t.Fatal(err)
			}
			if len(signed) != 3 { // the index and its two images
				t.Fatalf("signed %d manifests, want 3: %+v", len(signed), signed)
			}
			idxDigest, _ := idx.Digest()
			if signed[0].Digest != idxDigest.String() {
				t.Errorf("first signed %s, want the index %s", signed[0].Digest, idxDigest)
			}
			im, _ := idx.IndexManifest()
			for _, target := range []string{ref, host + "/gpu/cuda@" + im.Manifests[1].Digest.String()} {
				res, err := sign.Verify(t.Context(), target, pub)
				if err != nil {
					t.Fatal(err)
				}
				got := map[sign.Format]bool{}
				for _, s := range res.Verified(sign.CosignSignPredicateType) {
					got[s.Format] = true
				}
				for _, f := range tc.want {
					if !got[f] {
						t.Errorf("%s: no verified %s signature: %+v", target, f, res.Statements)
					}
				}
				if len(got) != len(tc.want) {
					t.Errorf("%s: verified formats %v, want %v", target, got, tc.want)
				}
			}
			// A second signing with the same format adds, does not break.
			if _, err := sign.Sign(t.Context(), ref, sv, sign.WithFormat(tc.format)); err != nil {
				t.Fatal(err)
			}
			// Another key verifies nothing, but finds the statements.
			_, other := ecKey(t)
			res, err := sign.Verify(t.Context(), ref, other)
			if err != nil {
				t.Fatal(err)
			}
			if v := res.Verified(sign.CosignSignPredicateType); len(v) != 0 {
				t.Errorf("wrong key verified %+v", v)
			}
			if len(res.Statements) == 0 {
				t.Error("wrong key: no statements found at all")
			}
			for _, s := range res.Statements {
				if s.Error == "" {
					t.Errorf("unverified statement without a reason: %+v", s)
				}
			}
		})
	}
}

// TestReferrerLayout pins cosign v3's layout of the referrer manifest
// (cosign v3.1.3 pkg/oci/remote/write.go WriteReferrer).
func TestReferrerLayout(t *testing.T) {
	host := newRegistry(t, true)
	ref := host + "/gpu/img:1"
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(ref, name.Insecure)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	sv, _ := ecKey(t)
	signed, err := sign.Sign(t.Context(), ref, sv)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	rd, _ := name.NewDigest(host+"/gpu/img@"+signed[0].Referrer, name.Insecure)
	got, err := remote.Get(rd)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MediaType    string `json:"mediaType"`
		ArtifactType string `json:"artifactType"`
		Config       v1.Descriptor
		Layers       []v1.Descriptor
		Subject      *v1.Descriptor
		Annotations  map[string]string
	}
	if err := json.Unmarshal(got.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"mediaType":           {m.MediaType, "application/vnd.oci.image.manifest.v1+json"},
		"artifactType":        {m.ArtifactType, sign.BundleMediaType},
		"config.mediaType":    {string(m.Config.MediaType), "application/vnd.oci.empty.v1+json"},
		"config.digest":       {m.Config.Digest.String(), "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		"subject.digest":      {m.Subject.Digest.String(), d.String()},
		"predicateType":       {m.Annotations[sign.AnnotationPredicateType], sign.CosignSignPredicateType},
		"content":             {m.Annotations[sign.AnnotationContent], "dsse-envelope"},
		"layers[0].mediaType": {string(m.Layers[0].MediaType), sign.BundleMediaType},
	}
	for k, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", k, v[0], v[1])
		}
	}
	if len(m.Layers) != 1 {
		t.Errorf("%d layers, want 1", len(m.Layers))
	}
}

func TestAttest(t *testing.T) {
	host := newRegistry(t, false)
	ref := host + "/gpu/img:1"
	img, _ := random.Image(128, 1)
	r, _ := name.ParseReference(ref, name.Insecure)
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	sv, pub := ecKey(t)
	const pt = "https://in-toto.io/attestation/test-result/v0.1"
	if _, err := sign.Attest(t.Context(), ref, sv, pt, []byte(`{"result":"PASSED"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Attest(t.Context(), ref, sv, pt, []byte(`[1]`)); err == nil {
		t.Error("a predicate that is not an object was accepted")
	}
	res, err := sign.Verify(t.Context(), ref, pub)
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verified(pt)
	if len(v) != 1 {
		t.Fatalf("verified %+v, want one %s", res.Statements, pt)
	}
	var p struct{ Result string }
	if err := json.Unmarshal(v[0].Predicate, &p); err != nil || p.Result != "PASSED" {
		t.Errorf("predicate %s (%v), want result PASSED", v[0].Predicate, err)
	}
	if len(res.Verified(sign.CosignSignPredicateType)) != 0 {
		t.Error("an attestation counted as a signature")
	}
}

func TestParsePrivateKey(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	enc, err := encrypted.Encrypt(pkcs8(ec), []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	pass := func(p string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(p), nil } }
	for _, tc := range []struct {
		name    string
		block   pem.Block
		pass    func() ([]byte, error)
		wantErr string
	}{
		{"pkcs8-ec", pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8(ec)}, nil, ""},
		{"pkcs8-ed25519", pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8(ed)}, nil, ""},
		{"pkcs8-rsa", pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8(rs)}, nil, ""},
		{"cosign-encrypted", pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: enc}, pass("hunter2"), ""},
		{"cosign-wrong-password", pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: enc}, pass("nope"), "COSIGN_PASSWORD"},
		{"cosign-no-password", pem.Block{Type: "ENCRYPTED COSIGN PRIVATE KEY", Bytes: enc}, nil, "COSIGN_PASSWORD"},
		{"public-key", pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1}}, nil, "public key"},
		{"certificate", pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}, nil, "unsupported PEM type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sv, err := sign.ParsePrivateKey(pem.EncodeToMemory(&tc.block), tc.pass)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The key signs a bundle that its public key verifies.
			host := newRegistry(t, true)
			ref := host + "/k/img:1"
			img, _ := random.Image(64, 1)
			r, _ := name.ParseReference(ref, name.Insecure)
			if err := remote.Write(r, img); err != nil {
				t.Fatal(err)
			}
			if _, err := sign.Sign(t.Context(), ref, sv, sign.WithFormat(sign.FormatBoth)); err != nil {
				t.Fatal(err)
			}
			pub, _ := sv.PublicKey()
			res, err := sign.Verify(t.Context(), ref, pub)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Verified(sign.CosignSignPredicateType)); n != 2 {
				t.Errorf("verified %d signatures, want 2 (bundle and legacy): %+v", n, res.Statements)
			}
		})
	}
}

func TestKMSRefused(t *testing.T) {
	for _, k := range []string{"gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k", "hashivault://k"} {
		_, err := sign.LoadPrivateKey(k, nil)
		if !errors.Is(err, sign.ErrKMSUnsupported) {
			t.Errorf("%s: err %v, want ErrKMSUnsupported", k, err)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "k.pem")
	if err := os.WriteFile(p, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sign.LoadPrivateKey(p, nil); err == nil || !strings.Contains(err.Error(), "no PEM block") {
		t.Errorf("err %v, want no PEM block", err)
	}
}

// TestEnvKey loads keys from env://VAR, encrypted with COSIGN_PASSWORD's
// password as cosign's are, and refuses an unset variable.
func TestEnvKey(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encrypted.Encrypt(der, []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(ec.Public())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUIMG_TEST_KEY", string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: enc})))
	t.Setenv("GPUIMG_TEST_PUB", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})))
	t.Setenv("GPUIMG_TEST_EMPTY", "")
	sv, err := sign.LoadPrivateKey("env://GPUIMG_TEST_KEY", func() ([]byte, error) { return []byte("hunter2"), nil })
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sign.LoadPublicKey("env://GPUIMG_TEST_PUB")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := sv.PublicKey(); !ec.PublicKey.Equal(got) || !ec.PublicKey.Equal(pub) {
		t.Errorf("env:// keys are not the key put there")
	}
	for _, ref := range []string{"env://GPUIMG_TEST_UNSET", "env://GPUIMG_TEST_EMPTY", "env://"} {
		if _, err := sign.LoadPrivateKey(ref, nil); err == nil || errors.Is(err, sign.ErrKMSUnsupported) {
			t.Errorf("%s: err %v, want a missing-variable error", ref, err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"bundle", "legacy", "both"} {
		if f, err := sign.ParseFormat(s); err != nil || string(f) != s {
			t.Errorf("%s: %v %v", s, f, err)
		}
	}
	if _, err := sign.ParseFormat("v2"); err == nil {
		t.Error("v2 accepted")
	}
}

// rawManifest pushes a manifest as it is.
type rawManifest struct {
	b  []byte
	mt types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.b, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// TestAttestationForAnotherDigest: an SBOM attestation made for one image
// and hung on another (its referrer manifest's subject rewritten) is
// found there but does not verify: the statement's subject is the other
// digest.
func TestAttestationForAnotherDigest(t *testing.T) {
	host := newRegistry(t, true)
	a, b := host+"/gpu/img:a", host+"/gpu/img:b"
	var digests []v1.Hash
	for _, ref := range []string{a, b} {
		img, _ := random.Image(128, 1)
		r, _ := name.ParseReference(ref, name.Insecure)
		if err := remote.Write(r, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		digests = append(digests, d)
	}
	sv, pub := ecKey(t)
	const spdx = "https://spdx.dev/Document"
	if _, err := sign.Attest(t.Context(), b, sv, spdx, []byte(`{"spdxVersion":"SPDX-2.3"}`)); err != nil {
		t.Fatal(err)
	}
	repo, _ := name.NewRepository(host+"/gpu/img", name.Insecure)
	idx, err := remote.Referrers(repo.Digest(digests[1].String()))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("referrers of b: %+v (%v), want the one attestation", im, err)
	}
	raw, err := remote.Get(repo.Digest(im.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	ra, _ := name.ParseReference(a, name.Insecure)
	da, err := remote.Head(ra)
	if err != nil {
		t.Fatal(err)
	}
	m["subject"] = map[string]any{"mediaType": string(da.MediaType), "digest": da.Digest.String(), "size": da.Size}
	moved, _ := json.Marshal(m)
	sum, _, _ := v1.SHA256(strings.NewReader(string(moved)))
	if err := remote.Put(repo.Digest(sum.String()), rawManifest{moved, raw.MediaType}); err != nil {
		t.Fatal(err)
	}
	res, err := sign.Verify(t.Context(), a, pub)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Statements) != 1 || res.Statements[0].Verified || res.Statements[0].Error == "" || len(res.Verified(spdx)) != 0 {
		t.Errorf("b's SBOM on a: %+v, want one statement that does not verify, with why", res.Statements)
	}
}

package verbs

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for n, c := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(c)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImportSigned: an import whose conversion changes the digest (a
// BuildKit-style signed OCI index to one Docker schema 2 image) leaves
// the new image unsigned and says so, the source's signature not
// verifying for it; with a key, the pushed image is signed and verifies.
func TestImportSigned(t *testing.T) {
	host := newServer(t).host
	src := host + "/ml/model:oci"
	idx, err := testenv.AttestedIndexSLSA1([][]byte{
		tarOf(t, map[string]string{"etc/os-release": "ID=debian\nVERSION_ID=\"12\"\n"}),
		tarOf(t, map[string]string{"app/serve": "#!/bin/sh\necho hi\n"}),
	}, []string{"amd64"}, "https://ci.example.com/b")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(src)
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	signer, err := sign.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Sign(t.Context(), src, signer); err != nil {
		t.Fatal(err)
	}
	target := matrix.Target{Name: "test/docker", Platforms: []string{"linux/amd64"},
		MediaTypes: []matrix.ManifestFormat{matrix.FormatDocker}, Compressions: []matrix.Compression{matrix.CompressionGzip}}
	db := builtin(t)
	tmp := images.WithTempDir(t.TempDir())

	dry, err := ImportSigned(t.Context(), src, target, host+"/sm/model:dry", db, signer, nil, tmp, images.WithDryRun(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Signed) != 0 || !strings.Contains(dry.Signatures, "would sign") {
		t.Errorf("dry run: %+v, %q", dry.Signed, dry.Signatures)
	}

	plain, err := ImportSigned(t.Context(), src, target, host+"/sm/model:v1", db, nil, nil, tmp)
	if err != nil {
		t.Fatalf("import: %v (%+v)", err, plain)
	}
	if !plain.DigestChanged || len(plain.Signed) != 0 || !strings.Contains(plain.Signatures, "do not carry over") || !strings.Contains(plain.Signatures, plain.Digest) {
		t.Errorf("unsigned import: changed %v, signed %+v, %q", plain.DigestChanged, plain.Signed, plain.Signatures)
	}
	v, err := sign.Verify(t.Context(), plain.Ref, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Verified(sign.CosignSignPredicateType)) != 0 {
		t.Errorf("the converted image verifies without being signed: %+v", v.Statements)
	}

	signed, err := ImportSigned(t.Context(), src, target, host+"/sm/model:v2", db, signer, nil, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(signed.Signed) != 1 || signed.Signed[0].Digest != signed.Digest || !strings.HasPrefix(signed.Signatures, "signed") {
		t.Errorf("signed import: %+v, %q", signed.Signed, signed.Signatures)
	}
	v, err = sign.Verify(t.Context(), signed.Ref, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Verified(sign.CosignSignPredicateType)) != 1 {
		t.Errorf("the signed import does not verify: %+v", v.Statements)
	}
}

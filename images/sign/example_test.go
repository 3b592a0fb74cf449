package sign_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images/sign"
)

// Sign an image, attach a signed test result to it, and verify both with
// the public key. LoadPrivateKey reads a cosign key file or a PEM key;
// any sigstore signature.SignerVerifier signs.
func Example() {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/ml/torch:2.3"
	img, _ := random.Image(256, 1)
	r, _ := name.ParseReference(ref)
	if err := remote.Write(r, img); err != nil {
		fmt.Println(err)
		return
	}

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := signature.LoadECDSASignerVerifier(key, crypto.SHA256)

	if _, err := sign.Sign(ctx, ref, signer, sign.WithFormat(sign.FormatBoth)); err != nil {
		fmt.Println(err)
		return
	}
	const testResult = "https://in-toto.io/attestation/test-result/v0.1"
	if _, err := sign.Attest(ctx, ref, signer, testResult, []byte(`{"result":"PASSED","configuration":[]}`)); err != nil {
		fmt.Println(err)
		return
	}

	res, err := sign.Verify(ctx, ref, key.Public())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Statements {
		fmt.Println(s.Verified, s.Format, s.PredicateType)
	}
	// Output:
	// true bundle https://in-toto.io/attestation/test-result/v0.1
	// true bundle https://sigstore.dev/cosign/sign/v1
	// true legacy https://sigstore.dev/cosign/sign/v1
}

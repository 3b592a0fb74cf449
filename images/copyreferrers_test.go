package images_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestCopyCarriesReferrers: a signed image (cosign v3 bundles and v2
// .sig tags, BuildKit provenance re-signed) copied to another repository
// on another registry verifies there with the same key, between
// registries with and without the Referrers API (the tag fallback);
// WithReferrers(false) leaves the signatures behind.
func TestCopyCarriesReferrers(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	sv, err := sign.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		srcAPI, dstAPI bool
	}{
		{"referrers API to tag fallback", true, false},
		{"tag fallback to referrers API", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newRegistry(t, nil, registry.WithReferrersSupport(tc.srcAPI)) + "/ml/torch:1"
			dstHost := newRegistry(t, nil, registry.WithReferrersSupport(tc.dstAPI))
			idx, err := testenv.AttestedIndexSLSA1([][]byte{tarOf(t, map[string]string{"hello": "hi\n"})}, []string{"amd64", "arm64"}, "https://ci.example.com/b")
			if err != nil {
				t.Fatal(err)
			}
			r, _ := name.ParseReference(src, name.Insecure)
			if err := remote.WriteIndex(r, idx); err != nil {
				t.Fatal(err)
			}
			signed, err := sign.Sign(t.Context(), src, sv, sign.WithFormat(sign.FormatBoth))
			if err != nil {
				t.Fatal(err)
			}
			res, err := images.Copy(t.Context(), src, []string{dstHost + "/mirror/torch:1"})
			if err != nil {
				t.Fatal(err)
			}
			// 3 signatures (bundles) + 3 .sig tags + 4 provenance attestations.
			if len(res.Referrers) != 10 || res.Destinations[0].Referrers != 10 {
				t.Errorf("copied referrers %+v, want 10", res.Referrers)
			}
			for _, s := range signed {
				v, err := sign.Verify(t.Context(), dstHost+"/mirror/torch@"+s.Digest, k.Public())
				if err != nil {
					t.Fatal(err)
				}
				if len(v.Verified(s.PredicateType)) == 0 {
					t.Errorf("%s at the destination: no verified %s in %+v", s.Digest, s.PredicateType, v.Statements)
				}
				if s.PredicateType == sign.CosignSignPredicateType {
					legacy := 0
					for _, st := range v.Verified(s.PredicateType) {
						if st.Format == sign.FormatLegacy {
							legacy++
						}
					}
					if legacy != 1 {
						t.Errorf("%s at the destination: %d verified .sig signatures, want 1", s.Digest, legacy)
					}
				}
			}

			res, err = images.Copy(t.Context(), src, []string{dstHost + "/bare/torch:1"}, images.WithReferrers(false))
			if err != nil {
				t.Fatal(err)
			}
			v, err := sign.Verify(t.Context(), dstHost+"/bare/torch:1", k.Public())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Referrers) != 0 || len(v.Statements) != 0 {
				t.Errorf("WithReferrers(false): copied %+v, found %+v", res.Referrers, v.Statements)
			}
		})
	}
}

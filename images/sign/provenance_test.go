package sign_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

func oneFileTar(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	body := []byte("hello\n")
	if err := tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSignProvenance: Sign re-signs BuildKit's SLSA v1 provenance (its
// attestation manifests, unsigned) as cosign attestations of each
// platform manifest and of the index, with each platform's own predicate;
// BuildKit's v0.2 provenance is left alone; a registry with and without
// the Referrers API.
func TestSignProvenance(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		host := newRegistry(t, referrers)
		ref := host + "/gpu/prov:1"
		idx, err := testenv.AttestedIndexSLSA1([][]byte{oneFileTar(t)}, []string{"amd64", "arm64"}, "https://ci.example.com/builder")
		if err != nil {
			t.Fatal(err)
		}
		r, _ := name.ParseReference(ref, name.Insecure)
		if err := remote.WriteIndex(r, idx); err != nil {
			t.Fatal(err)
		}
		sv, pub := ecKey(t)
		signed, err := sign.Sign(t.Context(), ref, sv)
		if err != nil {
			t.Fatal(err)
		}
		// The index and two platforms signed; two provenances, each
		// attested about its platform and about the index.
		var prov int
		for _, s := range signed {
			if s.PredicateType == sign.SLSAProvenanceV1 {
				prov++
				if s.Provenance == "" {
					t.Errorf("%+v: no attestation manifest named", s)
				}
			}
		}
		if len(signed) != 3+4 || prov != 4 {
			t.Fatalf("referrers=%v: signed %+v, want 3 signatures and 4 provenance attestations", referrers, signed)
		}
		im, _ := idx.IndexManifest()
		platforms := 0
		for _, m := range im.Manifests {
			if m.Platform.OS != "linux" {
				continue
			}
			platforms++
			res, err := sign.Verify(t.Context(), r.Context().Digest(m.Digest.String()).String(), pub)
			if err != nil {
				t.Fatal(err)
			}
			v := res.Verified(sign.SLSAProvenanceV1)
			if len(v) != 1 {
				t.Fatalf("platform %s: verified provenance %+v, want one", m.Platform.Architecture, res.Statements)
			}
			var p struct {
				RunDetails struct{ Builder struct{ ID string } }
			}
			if err := json.Unmarshal(v[0].Predicate, &p); err != nil || p.RunDetails.Builder.ID != "https://ci.example.com/builder" {
				t.Errorf("predicate %s (%v): want BuildKit's, with its builder id", v[0].Predicate, err)
			}
		}
		res, err := sign.Verify(t.Context(), ref, pub)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Verified(sign.SLSAProvenanceV1)); n != platforms || platforms != 2 {
			t.Errorf("index: %d verified provenance statements, want %d", n, platforms)
		}
	}

	// v0.2 provenance (AttestedIndex) is not what --type slsaprovenance1
	// reads: Sign signs the image and leaves it.
	host := newRegistry(t, true)
	ref := host + "/gpu/old:1"
	idx, err := testenv.AttestedIndex([][]byte{oneFileTar(t)}, []string{"amd64"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(ref, name.Insecure)
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatal(err)
	}
	sv, _ := ecKey(t)
	signed, err := sign.Sign(t.Context(), ref, sv)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range signed {
		if s.PredicateType != sign.CosignSignPredicateType {
			t.Errorf("v0.2 provenance: signed %+v", s)
		}
	}
}

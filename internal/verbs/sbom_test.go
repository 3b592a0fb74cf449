package verbs

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/validate"
	"github.com/gpuimg/gpuimg/validate/sbom"
)

// attestation is what an Attester was asked to push.
type attestation struct{ ref, predicateType, predicate string }

// recorder is an Attester that records its calls (the signer lives in
// images/sign, on another branch); err, when set, is its answer.
type recorder struct {
	got []attestation
	err error
}

func (r *recorder) Attest(_ context.Context, ref, predicateType string, predicate []byte) error {
	r.got = append(r.got, attestation{ref, predicateType, string(predicate)})
	return r.err
}

var _ Attester = (*recorder)(nil)

// TestSBOMAttach: the SBOM of one platform of an index describes that
// platform's manifest, and AttachSBOM hangs the plain referrer on that
// manifest and hands the same bytes, with the format's predicate type, to
// the Attester.
func TestSBOMAttach(t *testing.T) {
	s := newServer(t)
	ref := s.host + "/ml/multi:1"
	pushIndex(t, ref, "linux/amd64", "linux/arm64")
	arm := &v1.Platform{OS: "linux", Architecture: "arm64"}
	doc, err := SBOM(t.Context(), registryRef(ref), SBOMSpec{Options: validate.Options{DB: builtin(t), Name: ref}, Platform: arm, Format: sbom.CycloneDXJSON})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(ref)
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	var armDigest string
	for _, m := range im.Manifests {
		if m.Platform.Architecture == "arm64" {
			armDigest = m.Digest.String()
		}
	}
	if doc.Digest != armDigest || doc.Report == nil || doc.Report.Inventory == nil || !bytes.Contains(doc.Document, []byte(`"specVersion": "1.6"`)) {
		t.Fatalf("doc for %s: digest %s, report %v", armDigest, doc.Digest, doc.Report != nil)
	}

	rec := &recorder{}
	d, err := AttachSBOM(t.Context(), ref, doc, rec)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := remote.Referrers(r.Context().Digest(armDigest))
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := refs.IndexManifest()
	if len(rm.Manifests) != 1 || rm.Manifests[0].Digest.String() != d || rm.Manifests[0].ArtifactType != "application/vnd.cyclonedx+json" {
		t.Errorf("referrers of the arm64 manifest: %+v, want %s", rm.Manifests, d)
	}
	want := attestation{r.Context().Digest(armDigest).String(), "https://cyclonedx.org/bom", string(doc.Document)}
	if len(rec.got) != 1 || rec.got[0] != want {
		t.Errorf("attester got %+v, want %s %s", rec.got, want.ref, want.predicateType)
	}

	rec = &recorder{err: errors.New("no key")}
	if _, err := AttachSBOM(t.Context(), ref, doc, rec); err == nil || !strings.Contains(err.Error(), "attest the SBOM of") || !errors.Is(err, rec.err) {
		t.Errorf("AttachSBOM with a failing attester: %v", err)
	}
}

// TestSignerAttester: AttachSBOM with a SignerAttester leaves an SBOM
// attestation that VerifyImage accepts with the key's public key (and
// not with another key), on the manifest the SBOM describes.
func TestSignerAttester(t *testing.T) {
	s := newServer(t)
	ref := s.host + "/ml/signed:1"
	pushIndex(t, ref, "linux/amd64")
	doc, err := SBOM(t.Context(), registryRef(ref), SBOMSpec{Options: validate.Options{DB: builtin(t), Name: ref}})
	if err != nil {
		t.Fatal(err)
	}
	sv, pub := testKey(t)
	_, other := testKey(t)
	att := &SignerAttester{Signer: sv}
	if _, err := AttachSBOM(t.Context(), ref, doc, att); err != nil {
		t.Fatal(err)
	}
	if len(att.Signed()) != 1 || att.Signed()[0].Digest != doc.Digest || att.Signed()[0].PredicateType != PredicateSPDX {
		t.Fatalf("signed %+v, want one SPDX attestation of %s", att.Signed(), doc.Digest)
	}
	r, _ := name.ParseReference(ref)
	target := r.Context().Digest(doc.Digest).String()
	v, err := VerifyImage(t.Context(), target, pub, []Evidence{EvidenceSBOM})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() {
		t.Errorf("verify with the signing key: missing %v", v.Missing)
	}
	v, err = VerifyImage(t.Context(), target, other, []Evidence{EvidenceSBOM})
	if err != nil {
		t.Fatal(err)
	}
	if v.OK() {
		t.Errorf("verify with another key passed")
	}
	if err := (&SignerAttester{}).Attest(t.Context(), target, PredicateSPDX, doc.Document); err == nil {
		t.Errorf("an attester without a key attested")
	}
}

func testKey(t *testing.T) (signature.SignerVerifier, crypto.PublicKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(k, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return sv, k.Public()
}

// TestSignImage: the SBOMs come from the validation's own walk (each
// layer is read once for validation, SBOM and signing together); the
// index and each platform carry a signature, a PASSED test result and an
// SBOM, so verify passes from the tag and from each platform's digest.
func TestSignImage(t *testing.T) {
	s := newServer(t)
	ref := s.host + "/ml/multi:1"
	layers := pushIndex(t, ref, "linux/amd64", "linux/arm64")
	r, _ := name.ParseReference(ref)
	desc, err := remote.Head(r)
	if err != nil {
		t.Fatal(err)
	}
	digestRef := r.Context().Digest(desc.Digest.String()).String()
	spec := Spec{Options: validate.Options{DB: builtin(t), Name: ref, Inventory: true}, Platforms: []*v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}}
	vals, err := Validate(t.Context(), registryRef(digestRef), spec)
	if err != nil {
		t.Fatal(err)
	}
	var reps []*validate.Report
	for _, v := range vals {
		v.Verdict = "pass" // judged elsewhere; SignImage signs what it is given
		reps = append(reps, v.Report)
	}
	sv, pub := testKey(t)
	signed, err := SignImage(t.Context(), digestRef, reps, SignSpec{Signer: sv, SBOM: sbom.CycloneDXJSON, Name: ref})
	if err != nil {
		t.Fatal(err)
	}
	// Index and two platforms signed; per platform a test result and an
	// SBOM on the platform and on the index.
	if len(signed.Signatures) != 3 || len(signed.SBOMs) != 2 || len(signed.Attestations) != 8 {
		t.Errorf("signed %d, %d SBOMs, %d attestations; want 3, 2, 8", len(signed.Signatures), len(signed.SBOMs), len(signed.Attestations))
	}
	for _, l := range layers {
		if n := s.gets[l]; n != 1 {
			t.Errorf("layer %s read %d times, want once", l, n)
		}
	}
	all := []Evidence{EvidenceSignature, EvidenceSBOM, EvidenceValidation}
	targets := []string{ref}
	for _, rp := range reps {
		targets = append(targets, r.Context().Digest(rp.Digest).String())
	}
	for _, target := range targets {
		v, err := VerifyImage(t.Context(), target, pub, all)
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK() {
			t.Errorf("verify %s: missing %v", target, v.Missing)
		}
	}
	if _, err := SignImage(t.Context(), ref, reps, SignSpec{Signer: sv}); err == nil {
		t.Error("SignImage of a tag: no error")
	}
}

// TestAttachValidation: one validation's evidence lands in order — the
// report alone; with a key its signed test result too; with an SBOM
// format the SBOM of the same walk, signed when there is a key — and
// VerifyImage finds exactly what was attached.
func TestAttachValidation(t *testing.T) {
	s := newServer(t)
	sv, pub := testKey(t)
	for _, tc := range []struct {
		name        string
		signer      bool
		sbom        sbom.Format
		want        []Evidence // verified with the key
		wantMissing []Evidence
	}{
		{"report only", false, "", nil, []Evidence{EvidenceValidation, EvidenceSBOM}},
		{"signed report", true, "", []Evidence{EvidenceValidation}, []Evidence{EvidenceSBOM}},
		{"report and unsigned SBOM", false, sbom.SPDXJSON, nil, []Evidence{EvidenceValidation, EvidenceSBOM}},
		{"signed report and SBOM", true, sbom.CycloneDXJSON, []Evidence{EvidenceValidation, EvidenceSBOM}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := s.host + "/ml/attach-" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")) + ":1"
			pushIndex(t, ref, "linux/amd64")
			reps, err := Validate(t.Context(), registryRef(ref), Spec{Options: validate.Options{DB: builtin(t), Name: ref, Inventory: true}})
			if err != nil {
				t.Fatal(err)
			}
			rep := reps[0].Report
			spec := AttachSpec{SBOM: tc.sbom}
			if tc.signer {
				spec.Signer = sv
			}
			got, err := AttachValidation(t.Context(), ref, rep, Judged{GPU: "h100"}, spec)
			if err != nil {
				t.Fatal(err)
			}
			if got.Report == "" || (got.TestResult != nil) != tc.signer || (got.SBOM != "") != (tc.sbom != "") || got.SBOMSigned != (tc.signer && tc.sbom != "") {
				t.Errorf("attached %+v", got)
			}
			_, reports, err := images.Referrers(t.Context(), ref, images.ReportArtifactType)
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || reports[0].Digest != got.Report {
				t.Errorf("%d reports attached (%+v), want one, %s", len(reports), reports, got.Report)
			} else if _, gpu, _ := reports[0].ReportFacts(); gpu != "h100" {
				t.Errorf("%d reports attached (%+v), want one judged on h100", len(reports), reports)
			}
			// The test result hangs on what ref names, the SBOM on the
			// platform manifest it describes.
			repo := strings.TrimSuffix(ref, ":1")
			at := map[Evidence]string{EvidenceValidation: ref, EvidenceSBOM: repo + "@" + rep.Digest}
			for _, c := range []struct {
				es []Evidence
				ok bool
			}{{tc.want, true}, {tc.wantMissing, false}} {
				for _, e := range c.es {
					v, err := VerifyImage(t.Context(), at[e], pub, []Evidence{e})
					if err != nil {
						t.Fatal(err)
					}
					if v.OK() != c.ok {
						t.Errorf("%s at %s: verified %v, want %v (missing %v)", e, at[e], v.OK(), c.ok, v.Missing)
					}
				}
			}
		})
	}
	// A report without an inventory cannot give an SBOM: the report is
	// attached, the SBOM step names the missing inventory.
	ref := s.host + "/ml/attach-noinv:1"
	pushIndex(t, ref, "linux/amd64")
	reps, err := Validate(t.Context(), registryRef(ref), Spec{Options: validate.Options{DB: builtin(t), Name: ref}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := AttachValidation(t.Context(), ref, reps[0].Report, Judged{}, AttachSpec{SBOM: sbom.SPDXJSON})
	if err == nil || !strings.Contains(err.Error(), "no inventory") || got.Report == "" || got.SBOM != "" {
		t.Errorf("without an inventory: attached %+v, err %v; want the report and an error naming the inventory", got, err)
	}
}

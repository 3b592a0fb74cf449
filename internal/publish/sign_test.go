package publish

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/internal/verbs"
)

// stackBuilder is a builder whose images are laid out as a gpuimg build
// of the request's stack (os-release, the CUDA toolkit's version.json,
// Python, torch with its CUDA variant, NVIDIA_REQUIRE_CUDA, the plan's
// labels), so static validation passes on them; for a stack whose GPU
// contains bad, torch's CUDA variant is wrong and validation fails.
type stackBuilder struct {
	bad    string
	builds *atomic.Int32
}

func (b stackBuilder) Alive(context.Context) bool { return true }
func (b stackBuilder) Close() error               { return nil }

func (b stackBuilder) Build(ctx context.Context, req builder.Request, plan *builder.Plan) (*builder.Result, error) {
	b.builds.Add(1)
	s := req.Stack
	torch := s.Frameworks["torch"]
	torchCUDA := torch.CUDA
	if b.bad != "" && strings.Contains(strings.ToLower(s.GPU), b.bad) {
		torchCUDA = "11.8"
	}
	cu := "cu" + strings.ReplaceAll(torchCUDA, ".", "")
	mm := s.CUDA
	if p := strings.Split(s.CUDA, "."); len(p) >= 2 {
		mm = p[0] + "." + p[1]
	}
	sp := "opt/venv/lib/python" + s.Python + "/site-packages/"
	files := [][2]string{
		{"etc/os-release", "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nID=ubuntu\nVERSION_ID=\"22.04\"\n"},
		{"usr/local/cuda-" + mm + "/version.json", `{"cuda":{"name":"CUDA SDK","version":"` + s.CUDA + `"}}`},
		{"usr/bin/python" + s.Python, "ELF"},
		{"opt/venv/pyvenv.cfg", "home = /usr/bin\nversion = " + s.Python + ".12\n"},
		{sp + "torch/version.py", "__version__ = '" + torch.Version + "+" + cu + "'\ncuda: Optional[str] = '" + torchCUDA + "'\n"},
		{sp + "torch-" + torch.Version + "+" + cu + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: " + torch.Version + "+" + cu + "\n\nbody"},
	}
	if torch.CuDNN != "" {
		files = append(files, [2]string{sp + "nvidia_cudnn_cu12-" + torch.CuDNN + ".dist-info/METADATA", "Name: nvidia-cudnn-cu12\nVersion: " + torch.CuDNN + "\n"})
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Config(img, v1.Config{
		Env:    []string{"PATH=/opt/venv/bin:/usr/bin", "NVIDIA_REQUIRE_CUDA=" + s.RequireCUDA},
		Labels: plan.Labels,
	})
	if err != nil {
		return nil, err
	}
	img = mutate.Annotations(img, req.Annotations).(v1.Image)
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	ref, err := name.ParseReference(req.PushByDigest + "@" + d.String())
	if err != nil {
		return nil, err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return nil, err
	}
	return &builder.Result{Digest: d.String()}, nil
}

// writeKey writes a PEM EC private key and returns its path.
func writeKey(t *testing.T) (string, *ecdsa.PrivateKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, k
}

// TestRunSigned: with signing:, every variant that passed validation is
// signed, its report attested and its SBOM attached before its tag is
// written, so its tag passes verify --require signature,sbom,validation
// with the key's public key (and not with another key); the variant
// whose validation failed has no tag, no signature and no passing
// statement. A second run leaves the signed variant unchanged; with
// another key (whose signatures the tag lacks, signing.require) it is
// rebuilt and signed again.
func TestRunSigned(t *testing.T) {
	host, f, db, plan, mirrors, _ := runFixture(t)
	keyPath, key := writeKey(t)
	f.Signing = Signing{Key: keyPath}
	var builds atomic.Int32
	opts := RunOptions{
		Builders: []string{"b"},
		Request:  builder.Request{Mirrors: mirrors},
		Dial: func(context.Context, string) (Builder, error) {
			return stackBuilder{bad: "l4", builds: &builds}, nil
		},
	}
	rep, err := Run(t.Context(), f, db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || len(plan.Variants) != 2 {
		t.Fatalf("%d results, want 2", len(rep.Results))
	}
	all := []verbs.Evidence{verbs.EvidenceSignature, verbs.EvidenceSBOM, verbs.EvidenceValidation}
	_, other := writeKey(t)
	var good Result
	for _, res := range rep.Results {
		if strings.Contains(res.Variant.Name, "L4") {
			if res.Outcome != Failed || !strings.Contains(res.Error, "static validation fail") {
				t.Errorf("%s: outcome %s, error %q; want a failed validation", res.Variant.Name, res.Outcome, res.Error)
			}
			if sg := res.Signing; sg == nil || sg.Status != SignSkipped || !strings.Contains(sg.Reason, "validate") || len(sg.Signatures)+len(sg.Attestations)+len(sg.SBOMs) != 0 {
				t.Errorf("%s: signing %+v; want skipped, naming validate, nothing signed", res.Variant.Name, sg)
			}
			if _, err := remote.Head(mustRef(t, res.Variant.Tag)); err == nil {
				t.Errorf("%s was tagged though it failed validation", res.Variant.Tag)
			}
			if res.Digest != "" {
				v, err := verbs.VerifyImage(t.Context(), host+"/ml/torch@"+res.Digest, &key.PublicKey, all)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range all {
					if _, ok := v.Missing[e]; !ok {
						t.Errorf("the failed variant's digest has %s evidence: %+v", e, v.Statements)
					}
				}
			}
			continue
		}
		good = res
		if res.Outcome != Published {
			t.Fatalf("%s: outcome %s (%s), want published", res.Variant.Name, res.Outcome, res.Error)
		}
		sg := res.Signing
		if sg == nil || sg.Status != SignSigned || len(sg.Signatures) != 1 || sg.Signatures[0].Digest != res.Digest || sg.Signatures[0].Referrer == "" ||
			len(sg.SBOMs) != 1 || sg.Count(AttestValidation) != 1 || sg.Count(AttestSBOM) != 1 || len(sg.Attestations) != 2 {
			t.Fatalf("%s: signing %+v, want signed: one signature of %s with its referrer, one SBOM, a validation and an SBOM attestation", res.Variant.Name, sg, res.Digest)
		}
		der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(der); sg.Key.Ref != keyPath || sg.Key.Fingerprint != "sha256:"+hex.EncodeToString(sum[:]) || sg.Format != "bundle" {
			t.Errorf("%s: signing key %+v format %q; want %s, the key's fingerprint, bundle", res.Variant.Name, sg.Key, sg.Format, keyPath)
		}
		v, err := verbs.VerifyImage(t.Context(), res.Variant.Tag, &key.PublicKey, all)
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK() {
			t.Errorf("verify %s --require signature,sbom,validation: missing %v", res.Variant.Tag, v.Missing)
		}
		v, err = verbs.VerifyImage(t.Context(), res.Variant.Tag, &other.PublicKey, all)
		if err != nil {
			t.Fatal(err)
		}
		if v.OK() {
			t.Errorf("verify %s with another key passed", res.Variant.Tag)
		}
	}
	if good.Variant.Name == "" {
		t.Fatal("no variant passed")
	}
	var md bytes.Buffer
	if err := writeReportMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### Signing") || !strings.Contains(md.String(), "| "+good.Variant.Name+" | 🔏 signed | 1 manifest | 1 validation, 1 sbom | 1 SBOM |") {
		t.Errorf("report.md says nothing of what was signed:\n%s", md.String())
	}

	// Again, the same key: unchanged, nothing built.
	opts.Only = good.Variant.Name
	n := builds.Load()
	rep, err = Run(t.Context(), f, db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res := rep.Results[0]; res.Outcome != Unchanged || builds.Load() != n {
		t.Errorf("second run: %s (%s), %d builds; want unchanged, none", res.Outcome, res.Error, builds.Load()-n)
	} else if res.Signing == nil || res.Signing.Status != SignVerified || res.Signing.Key.Fingerprint != good.Signing.Key.Fingerprint {
		t.Errorf("second run: signing %+v, want verified with the same key", res.Signing)
	}
	// Another key: the tag lacks its signatures, so the variant is
	// rebuilt and signed with it.
	otherPath, otherKey := writeKey(t)
	f.Signing.Key = otherPath
	rep, err = Run(t.Context(), f, db, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res := rep.Results[0]; res.Outcome != Published || builds.Load() != n+1 {
		t.Errorf("run with another key: %s (%s), %d builds; want published, one build", res.Outcome, res.Error, builds.Load()-n)
	}
	v, err := verbs.VerifyImage(t.Context(), good.Variant.Tag, &otherKey.PublicKey, all)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() {
		t.Errorf("after the run with another key: missing %v", v.Missing)
	}
}

// TestRunSigningKeyMissing: a signing key that cannot be read stops the
// run before anything is built.
func TestRunSigningKeyMissing(t *testing.T) {
	_, f, db, _, mirrors, _ := runFixture(t)
	f.Signing = Signing{Key: "env://GPUIMG_TEST_UNSET_KEY"}
	_, err := Run(t.Context(), f, db, RunOptions{
		Builders: []string{"b"},
		Request:  builder.Request{Mirrors: mirrors},
		Dial: func(context.Context, string) (Builder, error) {
			return nil, errors.New("dialed though the key is missing")
		},
	})
	if err == nil || !strings.Contains(err.Error(), "signing.key") || !strings.Contains(err.Error(), "GPUIMG_TEST_UNSET_KEY") {
		t.Errorf("err %v, want one naming signing.key and the variable", err)
	}
}

// TestRunSignedAWSKMS: signing.key may be an AWS KMS key
// (awskms:///alias/NAME, here on local-kms): the variant that passed is
// signed through KMS, its tag verifies with the public key KMS returns
// (and not with another KMS key), and the report names the key by its
// URI with that public key's fingerprint.
func TestRunSignedAWSKMS(t *testing.T) {
	testenv.Require(t, "builds local-kms into bin/ and starts it", testenv.Slow)
	ctx := t.Context()
	bin, err := testenv.LocalKMSTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := testenv.StartLocalKMS(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Stop()
	for k, v := range lk.Env(t.TempDir()) {
		t.Setenv(k, v)
	}
	key, err := lk.NewKey(ctx, "publish")
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := lk.NewKey(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sign.LoadPublicKeyContext(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, err := sign.LoadPublicKeyContext(ctx, otherKey)
	if err != nil {
		t.Fatal(err)
	}

	_, f, db, _, mirrors, _ := runFixture(t)
	f.Signing = Signing{Key: key}
	var builds atomic.Int32
	rep, err := Run(ctx, f, db, RunOptions{
		Builders: []string{"b"},
		Request:  builder.Request{Mirrors: mirrors},
		Dial: func(context.Context, string) (Builder, error) {
			return stackBuilder{bad: "l4", builds: &builds}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	all := []verbs.Evidence{verbs.EvidenceSignature, verbs.EvidenceSBOM, verbs.EvidenceValidation}
	published := 0
	for _, res := range rep.Results {
		if res.Outcome != Published {
			continue
		}
		published++
		sg := res.Signing
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(der)
		if sg == nil || sg.Status != SignSigned || sg.Key.Ref != key || sg.Key.Fingerprint != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("%s: signing %+v; want signed with %s and its KMS public key's fingerprint", res.Variant.Name, sg, key)
		}
		for _, tc := range []struct {
			name string
			key  any
			ok   bool
		}{{"the KMS key", pub, true}, {"another KMS key", otherPub, false}} {
			v, err := verbs.VerifyImage(ctx, res.Variant.Tag, tc.key, all)
			if err != nil {
				t.Fatal(err)
			}
			if v.OK() != tc.ok {
				t.Errorf("verify %s with %s: ok %v, want %v (missing %v)", res.Variant.Tag, tc.name, v.OK(), tc.ok, v.Missing)
			}
		}
	}
	if published != 1 {
		t.Errorf("%d variants published, want 1: %+v", published, rep.Results)
	}
}

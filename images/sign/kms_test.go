package sign_test

import (
	"context"
	"crypto/ecdsa"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestAWSKMS signs with AWS KMS keys on local-kms (a KMS emulator,
// tools/localkms): gpuimg's signature made through awskms:///alias/… is
// accepted by gpuimg's Verify with the key's public key fetched from KMS
// and by real cosign v3 (cosign verify --key awskms://…); cosign sign
// --key awskms://… is accepted by gpuimg's Verify; and a second KMS key
// verifies neither signature.
func TestAWSKMS(t *testing.T) {
	testenv.Require(t, "builds local-kms and cosign into bin/ and starts local-kms", testenv.Slow)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	bin, err := testenv.LocalKMSTool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := testenv.StartLocalKMS(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Stop()
	env := lk.Env(t.TempDir())
	for k, v := range env {
		t.Setenv(k, v)
	}
	good, err := lk.NewKey(ctx, "gpuimg-good")
	if err != nil {
		t.Fatal(err)
	}
	other, err := lk.NewKey(ctx, "gpuimg-other")
	if err != nil {
		t.Fatal(err)
	}

	sv, err := sign.LoadPrivateKey(good, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sign.LoadPublicKeyContext(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pub.(*ecdsa.PublicKey); !ok {
		t.Fatalf("public key of %s is %T, want ECDSA P-256", good, pub)
	}
	otherPub, err := sign.LoadPublicKeyContext(ctx, other)
	if err != nil {
		t.Fatal(err)
	}

	host := newRegistry(t, true)
	ref := host + "/gpu/cuda:12"
	pushIndex(t, ref)
	signed, err := sign.Sign(ctx, ref, sv, sign.WithFormat(sign.FormatBundle))
	if err != nil {
		t.Fatal(err)
	}
	if len(signed) != 3 {
		t.Fatalf("signed %d manifests, want 3", len(signed))
	}
	for _, tc := range []struct {
		name string
		key  any
		want int
	}{{"the KMS key", pub, 1}, {"another KMS key", otherPub, 0}} {
		res, err := sign.Verify(ctx, ref, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Verified(sign.CosignSignPredicateType)); n != tc.want {
			t.Errorf("%s: verified %d signatures, want %d: %+v", tc.name, n, tc.want, res.Statements)
		}
	}

	cosign, err := testenv.Cosign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cosignRun := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, cosign, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "TUF_ROOT=" + filepath.Join(home, "tuf")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	cosignVerify := func(key string) (string, error) {
		return cosignRun("verify", "--key", key, "--insecure-ignore-tlog", "--allow-http-registry", ref)
	}
	if out, err := cosignVerify(good); err != nil {
		t.Errorf("cosign verify --key %s: %v\n%s", good, err, out)
	}
	if out, err := cosignVerify(other); err == nil || !strings.Contains(out, "no matching") {
		t.Errorf("cosign verify --key %s (another key): err %v, want no matching attestations\n%s", other, err, out)
	}

	// cosign sign --key awskms://… (offline: a signing config without a
	// transparency log, an empty trusted root) → gpuimg's Verify with the
	// public key fetched from KMS; the other KMS key's does not verify it.
	byCosign := host + "/gpu/by-cosign:1"
	pushIndex(t, byCosign)
	sc, tr := filepath.Join(home, "signing-config.json"), filepath.Join(home, "trusted-root.json")
	for _, args := range [][]string{
		{"signing-config", "create", "--out", sc},
		{"trusted-root", "create", "--out", tr},
		{"sign", "--key", good, "--signing-config", sc, "--trusted-root", tr, "--allow-http-registry", "-y", byCosign},
	} {
		if out, err := cosignRun(args...); err != nil {
			t.Fatalf("cosign %s: %v\n%s", strings.Join(args[:2], " "), err, out)
		}
	}
	for _, tc := range []struct {
		name string
		key  any
		want int
	}{{"the KMS key", pub, 1}, {"another KMS key", otherPub, 0}} {
		res, err := sign.Verify(ctx, byCosign, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(res.Verified(sign.CosignSignPredicateType)); n != tc.want {
			t.Errorf("cosign's KMS signature, %s: verified %d signatures, want %d: %+v", tc.name, n, tc.want, res.Statements)
		}
	}
}

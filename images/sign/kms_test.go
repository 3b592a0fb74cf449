package sign_test

import (
	"context"
	"crypto/ecdsa"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestAWSKMS signs with AWS KMS keys on local-kms (a KMS emulator,
// tools/localkms): gpuimg's signature made through awskms:///alias/… is
// accepted by gpuimg's Verify with the key's public key fetched from KMS
// and by real cosign v3 (cosign verify --key awskms://…), and a second
// KMS key verifies neither.
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
	// The endpoint travels in the SDK's environment: sigstore's provider
	// turns an endpoint inside the URI into https://, and local-kms
	// speaks plain http.
	env := map[string]string{
		"AWS_ENDPOINT_URL_KMS":        lk.Endpoint,
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
	}
	for k, v := range env {
		t.Setenv(k, v)
	}

	client := kms.New(kms.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(lk.Endpoint),
		Credentials:  aws.AnonymousCredentials{},
	})
	newKey := func(alias string) {
		out, err := client.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify})
		if err != nil {
			t.Fatalf("create KMS key: %v", err)
		}
		if _, err := client.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/" + alias), TargetKeyId: out.KeyMetadata.KeyId}); err != nil {
			t.Fatalf("create alias %s: %v", alias, err)
		}
	}
	newKey("gpuimg-good")
	newKey("gpuimg-other")
	good, other := "awskms:///alias/gpuimg-good", "awskms:///alias/gpuimg-other"

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
	cosignVerify := func(key string) (string, error) {
		cmd := exec.CommandContext(ctx, cosign, "verify", "--key", key, "--insecure-ignore-tlog", "--allow-http-registry", ref)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "TUF_ROOT=" + filepath.Join(home, "tuf")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := cosignVerify(good); err != nil {
		t.Errorf("cosign verify --key %s: %v\n%s", good, err, out)
	}
	if out, err := cosignVerify(other); err == nil || !strings.Contains(out, "no matching") {
		t.Errorf("cosign verify --key %s (another key): err %v, want no matching attestations\n%s", other, err, out)
	}
}

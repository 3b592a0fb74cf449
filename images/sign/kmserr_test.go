package sign

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKMSWithoutCredentials checks that an awskms:// key with no AWS
// credentials anywhere (no variables, no files, the instance role off)
// names the missing credentials rather than the SDK's last provider
// ("no EC2 IMDS role found"), for the public key and for signing.
func TestKMSWithoutCredentials(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "none"), "AWS_CONFIG_FILE": filepath.Join(home, "none"),
		"AWS_ENDPOINT_URL_KMS": "http://127.0.0.1:1", // never reached: no credentials to sign the request with
	} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const ref = "awskms:///alias/gpuimg-release"
	_, err := LoadPublicKeyContext(ctx, ref)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrKMSCredentials) || !strings.Contains(err.Error(), "AWS KMS key "+ref+": no AWS credentials found: set AWS_ACCESS_KEY_ID") ||
			strings.Contains(err.Error(), "IMDS") {
			t.Errorf("%s: %v", what, err)
		}
	}
	check("public key", err)
	sv, err := LoadPrivateKey(ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sv.SignMessage(strings.NewReader("x"))
	check("sign", err)
}

package sign

import (
	"crypto"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"
)

// ErrKMSCredentials is wrapped when the AWS SDK found no credentials for
// an awskms:// key: it reports the last provider it tried ("no EC2 IMDS
// role found"), which hides the cause.
var ErrKMSCredentials = errors.New("no AWS credentials found")

// kmsCredentialsHint names where the AWS SDK's default chain looks.
const kmsCredentialsHint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or AWS_PROFILE with ~/.aws/credentials or SSO, or run where an instance, task or pod role applies; AWS_REGION names the key's region"

// kmsError rewrites the AWS SDK's "failed to refresh cached credentials"
// (aws.CredentialsCache, whatever provider of the chain failed last) as
// ErrKMSCredentials naming the key and where credentials come from;
// other errors pass unchanged.
func kmsError(ref string, err error) error {
	if err == nil || !strings.Contains(err.Error(), "failed to refresh cached credentials") {
		return err
	}
	return fmt.Errorf("AWS KMS key %s: %w: %s", ref, ErrKMSCredentials, kmsCredentialsHint)
}

// kmsSignerVerifier is an AWS KMS key whose credential errors name the
// missing credentials (kmsError).
type kmsSignerVerifier struct {
	signature.SignerVerifier
	ref string
}

func (k kmsSignerVerifier) SignMessage(message io.Reader, opts ...signature.SignOption) ([]byte, error) {
	sig, err := k.SignerVerifier.SignMessage(message, opts...)
	return sig, kmsError(k.ref, err)
}

func (k kmsSignerVerifier) VerifySignature(sig, message io.Reader, opts ...signature.VerifyOption) error {
	return kmsError(k.ref, k.SignerVerifier.VerifySignature(sig, message, opts...))
}

func (k kmsSignerVerifier) PublicKey(opts ...signature.PublicKeyOption) (crypto.PublicKey, error) {
	pub, err := k.SignerVerifier.PublicKey(opts...)
	return pub, kmsError(k.ref, err)
}

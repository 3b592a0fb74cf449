package sign

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	sigkms "github.com/sigstore/sigstore/pkg/signature/kms"
	// AWS KMS keys (awskms://): the provider registers itself with
	// sigstore's kms package, as cosign links it.
	_ "github.com/sigstore/sigstore/pkg/signature/kms/aws"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"

	"github.com/gpuimg/gpuimg/internal/bound"
)

// PEM block types of the private keys cosign generate-key-pair writes
// (scrypt + secretbox over PKCS#8, go-securesystemslib's encrypted format);
// "ENCRYPTED COSIGN PRIVATE KEY" is what cosign before v2.2 wrote.
const (
	pemSigstoreEncrypted = "ENCRYPTED SIGSTORE PRIVATE KEY"
	pemCosignEncrypted   = "ENCRYPTED COSIGN PRIVATE KEY"
)

// ErrKMSUnsupported is wrapped when a key is a KMS URI other than AWS
// KMS's (gcpkms://, azurekms://, hashivault://, k8s://, pkcs11:): each of
// sigstore's KMS providers is a separate module with a large dependency
// tree, and only AWS's (awskms://) is linked into gpuimg.
var ErrKMSUnsupported = errors.New("only AWS KMS keys (awskms://) are supported")

// AWSKMSScheme prefixes an AWS KMS key reference:
// awskms:///alias/NAME, awskms:///KEY-ID or awskms:///ARN, or with an
// endpoint, awskms://HOST:PORT/…, which sigstore's provider always
// reaches over https (set AWS_ENDPOINT_URL_KMS for a plain-http
// endpoint such as a local emulator). Credentials and region come from
// the AWS SDK's usual chain (AWS_REGION, AWS_ACCESS_KEY_ID, profiles,
// instance roles).
const AWSKMSScheme = "awskms://"

// kmsSchemes are the key references cosign accepts that name a KMS or a
// hardware token rather than a file, and that gpuimg does not link.
var kmsSchemes = []string{"gcpkms://", "azurekms://", "hashivault://", "k8s://", "pkcs11:"}

// kmsTimeout bounds the fetch of a KMS key's public key (the AWS SDK
// retries a refused connection three times, then gives up).
const kmsTimeout = time.Minute

// loadKMS returns the signer of an AWS KMS key; it reaches KMS only when
// it signs or is asked for its public key.
func loadKMS(ctx context.Context, ref string) (signature.SignerVerifier, error) {
	sv, err := sigkms.Get(ctx, ref, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", ref, kmsError(ref, err))
	}
	return kmsSignerVerifier{SignerVerifier: sv, ref: ref}, nil
}

// EnvScheme prefixes a key reference that names an environment variable
// holding the key's PEM (env://COSIGN_KEY), as cosign's --key accepts.
const EnvScheme = "env://"

// readKey reads the key ref names: the environment variable of an
// env://VAR reference, else the file at ref.
func readKey(ref string) ([]byte, error) {
	if v, ok := strings.CutPrefix(ref, EnvScheme); ok {
		if v == "" {
			return nil, fmt.Errorf("key %s: no variable named; write env://VAR", ref)
		}
		b, set := os.LookupEnv(v)
		if !set || b == "" {
			return nil, fmt.Errorf("key %s: the environment variable %s is not set (or empty); set it to the key's PEM", ref, v)
		}
		return []byte(b), nil
	}
	return bound.ReadFile(ref, "", bound.MaxUserFile)
}

// loadOptions are how keys are loaded for signing and verifying: ed25519
// keys sign with Ed25519ph, as cosign does (cosign's GetDefaultLoadOptions).
var loadOptions = []signature.LoadOption{sigopts.WithED25519ph()}

// LoadPrivateKey reads a private key from path: a cosign key file
// (cosign generate-key-pair; password() gives its password, for example
// from COSIGN_PASSWORD), or an unencrypted PEM key (PKCS#8 EC, ed25519 or
// RSA; SEC 1 EC and PKCS#1 RSA too); path env://VAR reads the key from the
// environment variable VAR instead, as cosign does; awskms://… signs
// with an AWS KMS key (AWSKMSScheme). password is called only for an
// encrypted key. Other KMS URIs are refused with ErrKMSUnsupported.
func LoadPrivateKey(path string, password func() ([]byte, error)) (signature.SignerVerifier, error) {
	if err := refuseKMS(path); err != nil {
		return nil, err
	}
	if strings.HasPrefix(path, AWSKMSScheme) {
		return loadKMS(context.Background(), path)
	}
	b, err := readKey(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	return ParsePrivateKey(b, password)
}

// ParsePrivateKey is LoadPrivateKey on a key's bytes.
func ParsePrivateKey(b []byte, password func() ([]byte, error)) (signature.SignerVerifier, error) {
	p, _ := pem.Decode(b)
	if p == nil {
		return nil, errors.New("parse key: no PEM block; pass a cosign key file (cosign generate-key-pair) or a PEM private key")
	}
	var pk crypto.PrivateKey
	var err error
	switch p.Type {
	case pemSigstoreEncrypted, pemCosignEncrypted:
		if password == nil {
			return nil, errors.New("parse key: the key is encrypted and no password was given; set COSIGN_PASSWORD")
		}
		pass, perr := password()
		if perr != nil {
			return nil, fmt.Errorf("read key password: %w", perr)
		}
		der, derr := encrypted.Decrypt(p.Bytes, pass)
		if derr != nil {
			return nil, fmt.Errorf("decrypt key: %w (is COSIGN_PASSWORD the key's password?)", derr)
		}
		pk, err = x509.ParsePKCS8PrivateKey(der)
	case "PRIVATE KEY":
		pk, err = x509.ParsePKCS8PrivateKey(p.Bytes)
	case "EC PRIVATE KEY":
		pk, err = x509.ParseECPrivateKey(p.Bytes)
	case "RSA PRIVATE KEY":
		pk, err = x509.ParsePKCS1PrivateKey(p.Bytes)
	case "PUBLIC KEY":
		return nil, errors.New("parse key: this is a public key; signing needs the private key (cosign.key), verifying takes the public one")
	default:
		return nil, fmt.Errorf("parse key: unsupported PEM type %q; pass a cosign key file or a PKCS#8 PEM private key", p.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse key: %w", err)
	}
	switch pk.(type) {
	case *ecdsa.PrivateKey, *rsa.PrivateKey, ed25519.PrivateKey:
	default:
		return nil, fmt.Errorf("parse key: unsupported key type %T; use ECDSA, RSA or ed25519", pk)
	}
	sv, err := signature.LoadDefaultSignerVerifier(pk, loadOptions...)
	if err != nil {
		return nil, fmt.Errorf("load key: %w", err)
	}
	return sv, nil
}

// LoadPublicKey is LoadPublicKeyContext with a background context.
func LoadPublicKey(path string) (crypto.PublicKey, error) {
	return LoadPublicKeyContext(context.Background(), path)
}

// LoadPublicKeyContext reads a PEM public key (cosign.pub, or any PKIX
// public key) from path, or from the environment variable VAR for
// env://VAR, or asks AWS KMS for an awskms://… key's public key.
func LoadPublicKeyContext(ctx context.Context, path string) (crypto.PublicKey, error) {
	if err := refuseKMS(path); err != nil {
		return nil, err
	}
	if strings.HasPrefix(path, AWSKMSScheme) {
		sv, err := loadKMS(ctx, path)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, kmsTimeout)
		defer cancel()
		pub, err := sv.PublicKey(sigopts.WithContext(ctx))
		if errors.Is(err, ErrKMSCredentials) {
			return nil, err // names the key already
		}
		if err != nil {
			return nil, fmt.Errorf("public key of %s: %w", path, err)
		}
		return pub, nil
	}
	b, err := readKey(path)
	if err != nil {
		return nil, fmt.Errorf("read public key: %w", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("parse public key %s: %w; pass a PEM public key (cosign.pub)", path, err)
	}
	return pub, nil
}

func refuseKMS(ref string) error {
	for _, s := range kmsSchemes {
		if strings.HasPrefix(ref, s) {
			return fmt.Errorf("key %s: %w", ref, ErrKMSUnsupported)
		}
	}
	return nil
}

package sign

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/encrypted"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// KeyPair is the contents of a cosign key pair's two PEM files.
type KeyPair struct {
	// Private is cosign.key: the PKCS#8 private key encrypted with the
	// password ("ENCRYPTED SIGSTORE PRIVATE KEY").
	Private []byte
	// Public is cosign.pub: the PKIX public key ("PUBLIC KEY").
	Public []byte
}

// GenerateKeyPair makes a key pair as cosign generate-key-pair (v3.1.3,
// pkg/cosign/keys.go: GenerateKeyPair, marshalKeyPair) does: an ECDSA
// P-256 key, its PKCS#8 DER encrypted by go-securesystemslib's encrypted
// package (scrypt + NaCl secretbox) under the PEM type "ENCRYPTED SIGSTORE
// PRIVATE KEY", and the public key as PKIX PEM. An empty password is
// allowed, as cosign allows it.
func GenerateKeyPair(password []byte) (*KeyPair, error) {
	pk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ECDSA P-256 key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(pk)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	enc, err := encrypted.Encrypt(der, password)
	if err != nil {
		return nil, fmt.Errorf("encrypt private key: %w", err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(pk.Public())
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return &KeyPair{Private: pem.EncodeToMemory(&pem.Block{Type: pemSigstoreEncrypted, Bytes: enc}), Public: pub}, nil
}

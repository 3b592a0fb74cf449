package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"

	"github.com/sigstore/sigstore/pkg/signature"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"
)

// keypair is a signature.SignerVerifier with what a bundle records of it
// (the shape of sigstore-go's sign.Keypair); its hint is cosign's (base64
// of the SHA-256 of the DER public key).
type keypair struct {
	sv   signature.SignerVerifier
	pub  crypto.PublicKey
	hint []byte
	alg  signature.AlgorithmDetails
}

func newKeypair(sv signature.SignerVerifier) (*keypair, error) {
	pub, err := sv.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("public key of signer: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("marshal public key: %w", err)
	}
	sum := sha256.Sum256(der)
	k := &keypair{sv: sv, pub: pub, hint: []byte(base64.StdEncoding.EncodeToString(sum[:]))}
	switch pub.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("unsupported key type %T; use ECDSA, RSA or ed25519", pub)
	}
	if k.alg, err = signature.GetDefaultAlgorithmDetails(pub, loadOptions...); err != nil {
		return nil, fmt.Errorf("signing algorithm: %w", err)
	}
	return k, nil
}

// SignData signs data, hashed with the key's hash first where the
// algorithm has one (as cosign's keypair does).
func (k *keypair) SignData(ctx context.Context, data []byte) (sig, digest []byte, err error) {
	opts := []signature.SignOption{sigopts.WithContext(ctx)}
	if h := k.alg.GetHashType(); h != 0 {
		hh := h.New()
		hh.Write(data)
		digest = hh.Sum(nil)
		opts = append(opts, sigopts.WithDigest(digest))
	}
	sig, err = k.sv.SignMessage(bytes.NewReader(data), opts...)
	return sig, digest, err
}

package sign

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
)

// EnvelopeMediaType is the media type of a plain DSSE envelope (the
// in-toto attestation framework's), the form slsa-verifier verify-vsa
// reads a verification summary in.
const EnvelopeMediaType = "application/vnd.dsse.envelope.v1+json"

// Envelope is a DSSE envelope: its payload and each signature are
// base64 in JSON, as the DSSE specification writes them.
type Envelope struct {
	PayloadType string              `json:"payloadType"`
	Payload     []byte              `json:"payload"`
	Signatures  []EnvelopeSignature `json:"signatures"`
}

// EnvelopeSignature is one signature of an Envelope.
type EnvelopeSignature struct {
	KeyID string `json:"keyid,omitempty"`
	Sig   []byte `json:"sig"`
}

// SignStatement signs an in-toto v1 statement about the manifest digest
// (sha256:…) with predicateType and predicate (a JSON object) into a
// plain DSSE envelope (not a Sigstore bundle) and returns the envelope's
// JSON. The signature is over DSSE's PAE, hashed as cosign hashes for
// the key (SHA-256 for P-256 and RSA keys; ed25519 keys sign with
// Ed25519ph, which verifiers that expect plain Ed25519 reject).
func SignStatement(ctx context.Context, digest, predicateType string, predicate []byte, signer signature.SignerVerifier) ([]byte, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, fmt.Errorf("sign a statement about %q: %w", digest, err)
	}
	kp, err := newKeypair(signer)
	if err != nil {
		return nil, err
	}
	payload, err := statement(v1.Descriptor{Digest: h}, predicateType, predicate)
	if err != nil {
		return nil, err
	}
	sig, _, err := kp.SignData(ctx, pae(InTotoPayloadType, payload))
	if err != nil {
		return nil, fmt.Errorf("sign the statement about %s: %w", digest, err)
	}
	return json.Marshal(Envelope{PayloadType: InTotoPayloadType, Payload: payload, Signatures: []EnvelopeSignature{{Sig: sig}}})
}

// VerifyEnvelope checks a plain DSSE envelope's signature with pub
// (sigstore's DSSE verifier over go-securesystemslib's envelope) and
// returns its payload, an in-toto statement.
func VerifyEnvelope(ctx context.Context, envelope []byte, pub crypto.PublicKey) ([]byte, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("parse DSSE envelope: %w", err)
	}
	if env.PayloadType != InTotoPayloadType {
		return nil, fmt.Errorf("DSSE envelope: payload type %q, want %s", env.PayloadType, InTotoPayloadType)
	}
	sv, err := signature.LoadDefaultVerifier(pub, loadOptions...)
	if err != nil {
		return nil, fmt.Errorf("load public key: %w", err)
	}
	ev, err := dsse.NewEnvelopeVerifier(&sigdsse.VerifierAdapter{SignatureVerifier: sv, Pub: pub})
	if err != nil {
		return nil, err
	}
	if _, err := ev.Verify(ctx, &env); err != nil {
		return nil, fmt.Errorf("DSSE envelope: %w", err)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("DSSE envelope payload: %w", err)
	}
	if len(payload) == 0 {
		return nil, errors.New("DSSE envelope: empty payload")
	}
	return payload, nil
}

// pae is DSSE's pre-authentication encoding of payload.
func pae(payloadType string, payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload)
}

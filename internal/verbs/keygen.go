package verbs

import (
	"errors"
	"fmt"
	"os"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/atomicfile"
)

// ErrKeyExists is wrapped when a key file Keygen would write exists and
// KeygenSpec.Force is not set.
var ErrKeyExists = errors.New("key file exists")

// KeygenSpec is what Keygen writes.
type KeygenSpec struct {
	// Prefix names the files: PREFIX.key and PREFIX.pub ("cosign" when
	// empty, as cosign generate-key-pair writes them).
	Prefix string
	// Password encrypts the private key (empty: no password, as cosign
	// allows).
	Password []byte
	// Force replaces existing files.
	Force bool
}

// KeyFiles are the files Keygen wrote.
type KeyFiles struct {
	PrivateKey string `json:"private_key"`
	PublicKey  string `json:"public_key"`
}

// Keygen writes a cosign-compatible key pair (sign.GenerateKeyPair): the
// encrypted private key with mode 0600, the public key with 0644. It
// refuses, writing nothing, when either file exists and spec.Force is
// not set; both are written beside their destination first and renamed
// into place, so a failure leaves neither half-written.
func Keygen(spec KeygenSpec) (*KeyFiles, error) {
	prefix := spec.Prefix
	if prefix == "" {
		prefix = "cosign"
	}
	files := &KeyFiles{PrivateKey: prefix + ".key", PublicKey: prefix + ".pub"}
	if !spec.Force {
		for _, f := range []string{files.PrivateKey, files.PublicKey} {
			if _, err := os.Lstat(f); err == nil {
				return nil, fmt.Errorf("%s: %w", f, ErrKeyExists)
			}
		}
	}
	kp, err := sign.GenerateKeyPair(spec.Password)
	if err != nil {
		return nil, err
	}
	priv, err := atomicfile.WriteTemp(files.PrivateKey, kp.Private)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", files.PrivateKey, err)
	}
	defer os.Remove(priv) // gone after the rename; left only on an error
	if err := os.Chmod(priv, 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", files.PrivateKey, err)
	}
	pub, err := atomicfile.WriteTemp(files.PublicKey, kp.Public)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", files.PublicKey, err)
	}
	defer os.Remove(pub)
	if err := os.Rename(priv, files.PrivateKey); err != nil {
		return nil, fmt.Errorf("write %s: %w", files.PrivateKey, err)
	}
	if err := os.Rename(pub, files.PublicKey); err != nil {
		os.Remove(files.PrivateKey)
		return nil, fmt.Errorf("write %s: %w", files.PublicKey, err)
	}
	return files, nil
}

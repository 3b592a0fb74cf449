package cli

import (
	"crypto/sha256"
	"encoding/hex"
)

// hashBytes is b's digest as a registry names it (sha256:…).
func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

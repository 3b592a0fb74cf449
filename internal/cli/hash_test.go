package cli

import (
	"crypto/sha256"
	"encoding/hex"
)

func hashBytes(b []byte) (string, int, error) {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:]), len(b), nil
}

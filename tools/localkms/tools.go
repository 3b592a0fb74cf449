//go:build tools

// Package tools pins local-kms, an AWS KMS emulator that the KMS signing
// tests (images/sign TestAWSKMS, docs/supply-chain.md) run on 127.0.0.1.
// It is its own module so that tools/go.mod stays lean.
package tools

import _ "github.com/nsmithuk/local-kms"

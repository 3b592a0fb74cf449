package testenv

import "context"

// Cosign builds cosign v3 (cmd/cosign, pinned in tools/go.mod; make tools
// builds it too) into bin/ of the checkout, unless it is there already,
// and returns its path: the independent verifier of gpuimg sign's
// signatures. The first build takes several minutes on two cores.
func Cosign(ctx context.Context) (string, error) {
	return pinnedTool(ctx, "cosign", ".", "github.com/sigstore/cosign/v3/cmd/cosign",
		"from tools/go.mod into bin/, once (several minutes on two cores)")
}

// SLSAVerifier builds slsa-verifier (cli/slsa-verifier, pinned in its own
// module, tools/slsa-verifier/go.mod) into bin/ of the checkout, unless
// it is there already, and returns its path: the independent verifier of
// images promote's verification summaries. The first build takes about
// two minutes on two cores.
func SLSAVerifier(ctx context.Context) (string, error) {
	return pinnedTool(ctx, "slsa-verifier", "slsa-verifier", "github.com/slsa-framework/slsa-verifier/v2/cli/slsa-verifier",
		"from tools/slsa-verifier/go.mod into bin/, once (about two minutes on two cores)")
}

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Cosign builds cosign v3 (cmd/cosign, pinned in tools/go.mod; make tools
// builds it too) into bin/ of the checkout, unless it is there already,
// and returns its path: the independent verifier of gpuimg sign's
// signatures. The first build takes several minutes on two cores.
func Cosign(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "cosign")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	done := startStep(ctx, "compiling cosign", "from tools/go.mod into bin/, once (several minutes on two cores)")
	defer done()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sigstore/cosign/v3/cmd/cosign")
	cmd.Dir = filepath.Join(root, "tools")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cosign from tools/go.mod: %w\n%s", err, out)
	}
	return bin, nil
}

// SLSAVerifier builds slsa-verifier (cli/slsa-verifier, pinned in its own
// module, tools/slsa-verifier/go.mod) into bin/ of the checkout, unless
// it is there already, and returns its path: the independent verifier of
// images promote's verification summaries. The first build takes about
// two minutes on two cores.
func SLSAVerifier(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "slsa-verifier")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	done := startStep(ctx, "compiling slsa-verifier", "from tools/slsa-verifier/go.mod into bin/, once (about two minutes on two cores)")
	defer done()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/slsa-framework/slsa-verifier/v2/cli/slsa-verifier")
	cmd.Dir = filepath.Join(root, "tools", "slsa-verifier")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build slsa-verifier from tools/slsa-verifier/go.mod: %w\n%s", err, out)
	}
	return bin, nil
}

package cli

import (
	"os"
	"testing"
)

// TestMain removes what the package's tests share across tests (the
// gpuimg binary of gpuimgBinary) after all of them ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if testBinary.dir != "" {
		os.RemoveAll(testBinary.dir)
	}
	os.Exit(code)
}

package e2e

import (
	"bytes"
	"testing"

	"github.com/gpuimg/gpuimg/internal/cli"
)

// run runs gpuimg's CLI in the test's process, as cmd/gpuimg does.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(t.Context(), args, &out, &errb)
	return out.String(), errb.String(), code
}

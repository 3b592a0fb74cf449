package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestValidateDockerDaemon reads an image from a real dockerd.
func TestValidateDockerDaemon(t *testing.T) {
	testenv.Require(t, "starts dockerd", testenv.Slow, testenv.Root)
	dir, err := os.MkdirTemp("/tmp", "gd-")
	must(t, err)
	d, err := testenv.StartDockerd(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	t.Setenv("DOCKER_HOST", d.Host)
	tag, err := name.NewTag("example.com/ml/torch:daemon")
	must(t, err)
	archive := filepath.Join(t.TempDir(), "img.tar")
	must(t, tarball.WriteToFile(archive, tag, smallImage(t, "cuda>=12.2")))
	if out, err := exec.Command("docker", "-H", d.Host, "load", "-i", archive).CombinedOutput(); err != nil {
		t.Fatalf("docker load: %v\n%s", err, out)
	}
	out, errOut, code := run(t, "validate", "docker-daemon:example.com/ml/torch:daemon", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Verdict string
		Found   struct{ Torch struct{ CUDA string } }
	}
	must(t, json.Unmarshal([]byte(out), &rep))
	if rep.Found.Torch.CUDA != "12.1" || rep.Verdict != "pass" {
		t.Errorf("report %+v", rep)
	}
	_, errOut, code = run(t, "validate", "docker-daemon:example.com/ml/absent:1")
	if code != 2 || !strings.Contains(errOut, "from the Docker daemon") {
		t.Errorf("absent image: exit %d %q", code, errOut)
	}
}

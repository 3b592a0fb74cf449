package verbs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/capture"
)

// TestCaptureContainer captures a running container on the test dockerd:
// the Debian fixture root with einops pip-installed (its dist-info) and
// an AWS key and HF_HOME in the container's environment.
func TestCaptureContainer(t *testing.T) {
	testenv.Require(t, "starts dockerd and runs a container", testenv.Slow, testenv.Root)
	ctx := t.Context()
	tarball, err := testenv.BaseRootfs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "cap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d, err := testenv.StartDockerd(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	t.Setenv("DOCKER_HOST", d.Host)
	docker := func(args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	docker("import", tarball, "capture-base:1")
	docker("run", "-d", "--name", "trainer", "--network", "none", "-e", "HF_HOME=/data/hf", "-e", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "capture-base:1", "sleep", "600")
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", "trainer").Run() })
	site := "/opt/venv/lib/python3.11/site-packages/einops-0.8.0.dist-info"
	docker("exec", "trainer", "sh", "-c", "mkdir -p "+site+" && printf 'version = 3.11.2\\n' > /opt/venv/pyvenv.cfg && printf 'Name: einops\\nVersion: 0.8.0\\n' > "+site+"/METADATA")
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := verbs.Capture(ctx, verbs.Environment{Source: "container:trainer"}, capture.Options{DB: db}, verbs.CaptureCopy{})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Spec
	if !slices.Equal(s.Pip, []string{"einops==0.8.0"}) || s.Env["HF_HOME"] != "/data/hf" || s.Capture.Source != "container:trainer" {
		t.Errorf("got pip %q env %v source %q", s.Pip, s.Env, s.Capture.Source)
	}
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "wJalrXUtnFEMI") || !strings.Contains(string(y), "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("the key's value is in the capture, or its name is not listed:\n%s", y)
	}
	file := filepath.Join(t.TempDir(), "env.yaml")
	if err := os.WriteFile(file, y, 0o644); err != nil {
		t.Fatal(err)
	}
	delta, err := verbs.Diff(ctx, verbs.Environment{Source: file}, verbs.Environment{Source: "container:trainer"}, capture.CollectOptions{DB: db}, capture.DiffOptions{})
	if err != nil || !delta.Same {
		t.Errorf("the capture differs from its container: %v %+v", err, delta)
	}
	t.Logf("capture of container:trainer:\n%s", y)
}

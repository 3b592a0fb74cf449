package verbs_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/gpuimg/gpuimg/internal/verbs"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/capture"
)

// TestCaptureImageAndDir captures the same tree as dir: and as an oci:
// image and diffs the two: the same, whichever transport read it.
func TestCaptureImageAndDir(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	for p, c := range map[string]string{
		"etc/os-release":      "ID=debian\nVERSION_ID=\"12\"\n",
		"etc/environment":     "HF_HOME=/data/hf\n",
		"var/lib/dpkg/status": "Package: git\nStatus: install ok installed\nPriority: optional\nVersion: 1:2.39.5-0+deb12u1\n",
		"opt/venv/pyvenv.cfg": "version = 3.11.2\n",
		"opt/venv/lib/python3.11/site-packages/einops-0.8.0.dist-info/METADATA": "Name: einops\nVersion: 0.8.0\n",
		"opt/tools/run.sh": "#!/bin/sh\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := capture.DirImage(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	oci := filepath.Join(t.TempDir(), "oci")
	p, err := layout.Write(oci, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := verbs.Capture(ctx, verbs.Environment{Source: "oci:" + oci}, capture.Options{DB: db}, verbs.CaptureCopy{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Spec.Pip, []string{"einops==0.8.0"}) || !slices.Equal(r.Spec.Apt, []string{"git"}) || r.Spec.Env["HF_HOME"] != "/data/hf" || len(r.Spec.Capture.Unreproducible) != 1 {
		t.Errorf("capture of the oci: image: %+v", r.Spec)
	}
	d, err := verbs.Diff(ctx, verbs.Environment{Source: "dir:" + root}, verbs.Environment{Source: "oci:" + oci}, capture.CollectOptions{DB: db}, capture.DiffOptions{Files: true})
	if err != nil || !d.Same {
		t.Errorf("dir: and oci: of one tree differ: %v %+v", err, d)
	}
	if _, err := verbs.Diff(ctx, verbs.Environment{Source: "dir:" + root}, verbs.Environment{Source: "oci:" + filepath.Join(oci, "nope")}, capture.CollectOptions{DB: db}, capture.DiffOptions{}); err == nil {
		t.Error("an unreadable B was diffed")
	}
}

package builder

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyPy runs the install check that goes into every image against
// fake site-packages, with the real python3.
func TestVerifyPy(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	script := filepath.Join(t.TempDir(), "verify.py")
	if err := os.WriteFile(script, verifyPy, 0o644); err != nil {
		t.Fatal(err)
	}
	// site holds dist (torch, with torch/version.py; or, as
	// "tensorflow=", tensorflow) at version.
	site := func(t *testing.T, version, versionPy string) string {
		dir := t.TempDir()
		dist := "torch"
		if v, ok := strings.CutPrefix(versionPy, "tensorflow="); ok {
			dist, versionPy = "tensorflow", v
		}
		info := filepath.Join(dir, dist+"-"+version+".dist-info")
		must(t, os.MkdirAll(info, 0o755))
		must(t, os.WriteFile(filepath.Join(info, "METADATA"), []byte("Metadata-Version: 2.1\nName: "+dist+"\nVersion: "+version+"\n"), 0o644))
		must(t, os.MkdirAll(filepath.Join(dir, "torch"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "torch", "__init__.py"), []byte("raise ImportError('verify.py must not import torch')\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "torch", "version.py"), []byte(versionPy), 0o644))
		return dir
	}
	tests := []struct {
		name, version, versionPy string
		args                     []string
		ok                       bool
		msg                      string
	}{
		{"match", "2.3.1+cu121", "__version__ = '2.3.1+cu121'\ncuda: Optional[str] = '12.1'\n", []string{"torch", "2.3.1", "12.1"}, true, "torch 2.3.1+cu121 (CUDA 12.1) ok"},
		{"old style annotation-free", "2.0.1+cu118", "__version__ = '2.0.1+cu118'\ncuda = '11.8'\n", []string{"torch", "2.0.1", "11.8"}, true, "ok"},
		{"wrong variant", "2.3.1+cu118", "cuda: Optional[str] = '11.8'\n", []string{"torch", "2.3.1", "12.1"}, false, "built for CUDA 11.8, the stack needs CUDA 12.1"},
		{"cpu build", "2.3.1+cpu", "cuda: Optional[str] = None\n", []string{"torch", "2.3.1", "12.1"}, false, "CPU-only build"},
		{"wrong version", "2.3.0", "cuda = '12.1'\n", []string{"torch", "2.3.1", "12.1"}, false, "torch 2.3.0 was installed, the stack pins 2.3.1"},
		{"post-release pinned exactly", "2.15.0.post1", "tensorflow=", []string{"tensorflow", "2.15.0.post1", "12.2"}, true, "tensorflow 2.15.0.post1 ok"},
		{"post-release meets the release's pin", "2.15.0.post1", "tensorflow=", []string{"tensorflow", "2.15.0", "12.2"}, true, "tensorflow 2.15.0.post1 ok"},
		{"a pre-release does not", "2.15.0rc1", "tensorflow=", []string{"tensorflow", "2.15.0", "12.2"}, false, "tensorflow 2.15.0rc1 was installed, the stack pins 2.15.0"},
		{"another release does not", "2.15.1", "tensorflow=", []string{"tensorflow", "2.15.0", "12.2"}, false, "tensorflow 2.15.1 was installed, the stack pins 2.15.0"},
		{"not installed", "2.3.1", "cuda = '12.1'\n", []string{"tensorflow", "2.15.0", "12.2"}, false, "tensorflow is not installed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(py, append([]string{script}, tt.args...)...)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+site(t, tt.version, tt.versionPy))
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.ok {
				t.Fatalf("exit err = %v, want ok=%v\n%s", err, tt.ok, out)
			}
			if !strings.Contains(string(out), tt.msg) {
				t.Errorf("output %q lacks %q", out, tt.msg)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

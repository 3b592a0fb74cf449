package builder

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
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

// TestVerifyPyTorchCUDALine: verify.py reads torch/version.py's CUDA line
// with matrix.TorchCUDAPattern, rendered in, and with Python's re it
// accepts and rejects the same fixtures as matrix.TorchCUDA with Go's
// regexp (matrix/testdata/torch-version-py.json, TestTorchCUDA).
func TestVerifyPyTorchCUDALine(t *testing.T) {
	if bytes.Contains(verifyPy, []byte("@TORCH_CUDA_PATTERN@")) || !bytes.Contains(verifyPy, []byte(`r"""`+matrix.TorchCUDAPattern+`"""`)) {
		t.Fatal("verify.py does not hold matrix.TorchCUDAPattern as a raw string")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	fixtures, err := os.ReadFile(filepath.Join("..", "matrix", "testdata", "torch-version-py.json"))
	must(t, err)
	var cases []struct {
		Name, Text string
		Found      bool
		CUDA       string
	}
	must(t, json.Unmarshal(fixtures, &cases))
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "verify.py"), verifyPy, 0o644))
	// Each case's text through verify.TORCH_CUDA, as torch_cuda() reads it.
	prog := `import json, sys
sys.path.insert(0, sys.argv[1])
import verify
out = []
for c in json.load(open(sys.argv[2])):
    m = verify.TORCH_CUDA.search(c["text"])
    out.append({"found": m is not None, "cuda": (m.group(2) or "") if m else ""})
print(json.dumps(out))
`
	out, err := exec.Command(py, "-c", prog, dir, filepath.Join("..", "matrix", "testdata", "torch-version-py.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	var got []struct {
		Found bool
		CUDA  string
	}
	must(t, json.Unmarshal(out, &got))
	if len(got) != len(cases) || len(cases) < 5 {
		t.Fatalf("%d answers for %d cases", len(got), len(cases))
	}
	for i, tt := range cases {
		if got[i].Found != tt.Found || got[i].CUDA != tt.CUDA {
			t.Errorf("%s: verify.py found %v, CUDA %q; want %v, %q", tt.Name, got[i].Found, got[i].CUDA, tt.Found, tt.CUDA)
		}
		if cuda, found := matrix.TorchCUDA([]byte(tt.Text)); found != got[i].Found || cuda != got[i].CUDA {
			t.Errorf("%s: Go says %v, %q; Python %v, %q", tt.Name, found, cuda, got[i].Found, got[i].CUDA)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestVerifyPyTorchCompile runs verify.py's torch.compile check with the
// real python3 on a fake Python installation: PYTHONHOME is a tree whose
// lib/pythonX.Y is the real standard library, so sysconfig's include
// directory (the one triton compiles against) is the tree's, and PATH is
// a directory holding only the compilers a case gives.
func TestVerifyPyTorchCompile(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	out, err := exec.Command(py, "-c", `import sys, sysconfig; print(sys.executable); print(sysconfig.get_python_version()); print(sysconfig.get_paths()["stdlib"])`).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	info := strings.Fields(string(out))
	if len(info) != 3 {
		t.Fatalf("python3 printed %q", out)
	}
	exe, ver, stdlib := info[0], info[1], info[2]
	script := filepath.Join(t.TempDir(), "verify.py")
	must(t, os.WriteFile(script, verifyPy, 0o644))

	type tc struct {
		name     string
		triton   bool
		bin      []string // executables in the only PATH directory
		cc       string   // $CC, when not empty
		header   bool     // Python.h in the include directory
		optOut   bool
		ok       bool
		msg, not string
	}
	tests := []tc{
		{name: "gcc and Python.h", triton: true, bin: []string{"gcc"}, header: true, ok: true, msg: "torch.compile: triton 3.0.0 builds with "},
		{name: "clang when no gcc", triton: true, bin: []string{"clang"}, header: true, ok: true, msg: "/clang against "},
		{name: "no compiler", triton: true, header: true, msg: "finds no C compiler (looked for gcc or clang on PATH ($CC unset))"},
		{name: "CC names none on PATH", triton: true, bin: []string{"gcc"}, cc: "cc-missing", header: true, msg: "looked for $CC (cc-missing)"},
		{name: "CC on PATH", triton: true, bin: []string{"mycc"}, cc: "mycc", header: true, ok: true, msg: "/mycc against "},
		{name: "no Python.h", triton: true, bin: []string{"gcc"}, msg: "/include/python" + ver + "/Python.h, which is missing"},
		{name: "opted out", triton: true, optOut: true, ok: true, msg: "torch.compile left out (--torch-compile=false): triton 3.0.0"},
		{name: "no triton, nothing to check", ok: true, msg: "torch 2.4.1+cu121 (CUDA 12.1) ok", not: "torch.compile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			home := filepath.Join(dir, "prefix")
			must(t, os.MkdirAll(filepath.Join(home, "lib"), 0o755))
			must(t, os.Symlink(stdlib, filepath.Join(home, "lib", "python"+ver)))
			include := filepath.Join(home, "include", "python"+ver)
			must(t, os.MkdirAll(include, 0o755))
			if tt.header {
				must(t, os.WriteFile(filepath.Join(include, "Python.h"), []byte("/* Python.h */\n"), 0o644))
			}
			bin := filepath.Join(dir, "bin")
			must(t, os.MkdirAll(bin, 0o755))
			for _, b := range tt.bin {
				must(t, os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\nexit 0\n"), 0o755))
			}
			site := filepath.Join(dir, "site")
			dist := func(name, version string) {
				d := filepath.Join(site, name+"-"+version+".dist-info")
				must(t, os.MkdirAll(d, 0o755))
				must(t, os.WriteFile(filepath.Join(d, "METADATA"), []byte("Metadata-Version: 2.1\nName: "+name+"\nVersion: "+version+"\n"), 0o644))
			}
			dist("torch", "2.4.1+cu121")
			must(t, os.MkdirAll(filepath.Join(site, "torch"), 0o755))
			must(t, os.WriteFile(filepath.Join(site, "torch", "version.py"), []byte("cuda: Optional[str] = '12.1'\n"), 0o644))
			if tt.triton {
				dist("triton", "3.0.0")
			}
			args := []string{script}
			if tt.optOut {
				args = append(args, "--no-torch-compile")
			}
			cmd := exec.Command(exe, append(args, "torch", "2.4.1", "12.1")...)
			cmd.Env = []string{"PYTHONHOME=" + home, "PYTHONPATH=" + site, "PATH=" + bin, "PYTHONNOUSERSITE=1"}
			if tt.cc != "" {
				cmd.Env = append(cmd.Env, "CC="+tt.cc)
			}
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.ok {
				t.Fatalf("exit err = %v, want ok=%v\n%s", err, tt.ok, out)
			}
			if !strings.Contains(string(out), tt.msg) {
				t.Errorf("output %q lacks %q", out, tt.msg)
			}
			if tt.ok && tt.header && !strings.Contains(string(out), " against "+filepath.Join(include, "Python.h")) {
				t.Errorf("output %q does not name the fake tree's Python.h", out)
			}
			if tt.not != "" && strings.Contains(string(out), tt.not) {
				t.Errorf("output %q has %q", out, tt.not)
			}
			if !tt.ok && strings.Count(strings.TrimSpace(string(out)), "\n") > 1 {
				t.Errorf("a failure is one line after the version's, got:\n%s", out)
			}
		})
	}
}

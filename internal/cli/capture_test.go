package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallEnv writes a root file system with a venv holding einops at
// version, an apt package installed by hand and HF_HOME in
// /etc/environment.
func smallEnv(t *testing.T, einops string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range map[string]string{
		"etc/os-release":      "ID=debian\nVERSION_ID=\"12\"\n",
		"var/lib/dpkg/status": "Package: git\nStatus: install ok installed\nPriority: optional\nVersion: 1:2.39.5-0+deb12u1\n",
		"etc/environment":     "HF_HOME=/data/hf\n",
		"opt/venv/pyvenv.cfg": "version = 3.11.2\n",
		"opt/venv/lib/python3.11/site-packages/einops-" + einops + ".dist-info/METADATA": "Name: einops\nVersion: " + einops + "\n",
	} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, p), []byte(c), 0o644))
	}
	return root
}

func TestCaptureAndDiffCommands(t *testing.T) {
	a, b := smallEnv(t, "0.8.0"), smallEnv(t, "0.8.1")
	out, errOut, code := run(t, "capture", "dir:"+a)
	if code != 0 || !strings.Contains(out, "einops==0.8.0") || !strings.Contains(out, "capture:") || !strings.Contains(out, "- git") {
		t.Fatalf("capture: exit %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "env.yaml")
	must(t, os.WriteFile(file, []byte(out), 0o644))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"same tree", []string{"diff", "dir:" + a, "dir:" + a}, ExitOK, "the same"},
		{"capture file and its source", []string{"diff", file, "dir:" + a}, ExitOK, "the same"},
		{"upgraded", []string{"diff", "dir:" + a, "dir:" + b}, ExitFailed, "~ einops 0.8.0 → 0.8.1"},
		{"capture file and another", []string{"diff", file, "dir:" + b}, ExitFailed, "python (1):"},
		{"unreadable", []string{"diff", "dir:" + a, "dir:" + filepath.Join(a, "nope")}, ExitInvalid, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("exit %d (want %d), want %q in:\n%s%s", code, tt.code, tt.want, out, errOut)
			}
		})
	}
	// -o json of both commands.
	out, errOut, code = run(t, "diff", "dir:"+a, "dir:"+b, "-o", "json")
	var d struct {
		Same  bool `json:"same"`
		Kinds []struct {
			Kind string `json:"kind"`
		} `json:"differences"`
	}
	if code != ExitFailed || json.Unmarshal([]byte(out), &d) != nil || d.Same || len(d.Kinds) != 1 || d.Kinds[0].Kind != "python" {
		t.Errorf("diff -o json: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "capture", "dir:"+a, "-o", "json")
	if code != 0 {
		t.Fatalf("capture -o json: exit %d: %s", code, errOut)
	}
	checkSchema(t, "capture -o json", "capture.schema.json", out)
}

// TestCaptureCopy stages --copy's paths of the captured environment
// beside the capture file, names them in copy:, and refuses, writing
// nothing, a path with a secret, a relative path or a --copy without
// --file.
func TestCaptureCopy(t *testing.T) {
	env := smallEnv(t, "0.8.0")
	must(t, os.MkdirAll(filepath.Join(env, "opt/tools"), 0o755))
	must(t, os.WriteFile(filepath.Join(env, "opt/tools/credentials"), []byte("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(env, "opt/tools/run.sh"), []byte("#!/bin/sh\nexec python -m train\n"), 0o755))
	// A link out of the captured tree: os.Root refuses to follow it.
	must(t, os.Symlink("/etc", filepath.Join(env, "opt/escape")))
	ctxDir := t.TempDir()
	file := filepath.Join(ctxDir, "env.yaml")
	out, errOut, code := run(t, "capture", "dir:"+env, "--copy", "/opt/tools/run.sh", "--file", file)
	if code != 0 {
		t.Fatalf("a clean --copy: exit %d\n%s%s", code, out, errOut)
	}
	y, err := os.ReadFile(file)
	must(t, err)
	if !strings.Contains(string(y), "- env.files/opt/tools/run.sh:/opt/tools/run.sh") || strings.Contains(string(y), "what: /opt/tools/run.sh") || !strings.Contains(string(y), "what: /opt/tools/credentials") {
		t.Errorf("copy: not named, or the copied file still listed as unreproducible:\n%s", y)
	}
	staged, err := os.ReadFile(filepath.Join(ctxDir, "env.files/opt/tools/run.sh"))
	if err != nil || string(staged) != "#!/bin/sh\nexec python -m train\n" {
		t.Errorf("staged file: %q %v", staged, err)
	}
	if st, err := os.Stat(filepath.Join(ctxDir, "env.files/opt/tools/run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("staged file's mode: %v %v", st, err)
	}
	tests := []struct {
		name, want string
		args       []string
	}{
		{"a secret", "credentials", []string{"--copy", "/opt/tools", "--file", "F"}},
		{"relative", "absolute path", []string{"--copy", "opt/tools/run.sh", "--file", "F"}},
		{"no --file", "give --file", []string{"--copy", "/opt/tools/run.sh"}},
		{"missing", "no such file", []string{"--copy", "/opt/nope", "--file", "F"}},
		{"link out of the tree", "escapes", []string{"--copy", "/opt/escape", "--file", "F"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"capture", "dir:" + env}, tt.args...)
			for i, a := range args {
				if a == "F" {
					args[i] = filepath.Join(dir, "env.yaml")
				}
			}
			out, errOut, code := run(t, args...)
			if code != ExitInvalid || out != "" || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "wJalrXUtnFEMI") {
				t.Errorf("exit %d (want 2), stdout %q, stderr %q (want %q)", code, out, errOut, tt.want)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("half-written: %v", left)
			}
		})
	}
}

// TestCaptureProgress: --progress plain shows each pass over the tree
// on stderr, with its files (capture and diff); quiet and -q show nothing; a mode that is
// not one is refused before anything is read.
func TestCaptureProgress(t *testing.T) {
	root := smallEnv(t, "0.8.0")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // "" wants an empty stderr
	}{
		{"plain", []string{"capture", "dir:" + root, "--progress", "plain"}, ExitOK, "capture dir:" + root + ": 531 B, 15 files, pass 3 done"},
		{"quiet", []string{"capture", "dir:" + root, "--progress", "quiet"}, ExitOK, ""},
		{"-q", []string{"capture", "dir:" + root, "-q", "--progress", "plain"}, ExitOK, ""},
		{"bad mode", []string{"capture", "dir:" + root, "--progress", "fancy"}, ExitInvalid, `unknown progress mode "fancy"`},
		{"diff", []string{"diff", "dir:" + root, "dir:" + root, "--progress", "plain"}, ExitOK, "diff dir:" + root + ": 531 B, 15 files, pass 3 done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s%s", code, tt.code, out, errOut)
			}
			if tt.stderr == "" && errOut != "" || tt.stderr != "" && !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr %q, want %q", errOut, tt.stderr)
			}
			if code == ExitOK && tt.args[0] == "capture" && !strings.Contains(out, "einops==0.8.0") {
				t.Errorf("stdout lacks the capture:\n%s", out)
			}
		})
	}
}

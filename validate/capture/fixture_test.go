package capture_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// The hand-built environment of the capture tests, laid over a root file
// system as a user leaves one: pip's records in a venv (the torch 2.6.0
// cu124 twin's distributions, extras, one installed from git), a conda
// env, a runfile CUDA, hand-copied files, an AWS key in /etc/environment
// and a package apt marked manual.
const (
	// fakeAWSKeyID and fakeAWSSecret are AWS's documented example key
	// (docs.aws.amazon.com, "Managing access keys"), which the secrets
	// check flags by format.
	fakeAWSKeyID  = "AKIAIOSFODNN7EXAMPLE"
	fakeAWSSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	venv          = "opt/venv"
	site          = venv + "/lib/python3.11/site-packages"
	gitCommit     = "4f7c2e0d9a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d"
)

// extras are what the user pip-installed beside torch, with their
// Requires-Dist (requests 2.32.3's, from its METADATA on PyPI).
var extras = []struct {
	name, version string
	requires      []string
}{
	{"requests", "2.32.3", []string{"charset-normalizer<4,>=2", "idna<4,>=2.5", "urllib3<3,>=1.21.1", "certifi>=2017.4.17", `PySocks!=1.5.7,>=1.5.6; extra == "socks"`}},
	{"charset-normalizer", "3.4.0", nil},
	{"idna", "3.10", nil},
	{"urllib3", "2.2.3", nil},
	{"certifi", "2024.8.30", nil},
	{"einops", "0.8.0", nil},
}

// handBuilt lays the hand-built environment over root.
func handBuilt(t *testing.T, root string) {
	t.Helper()
	w := func(p, content string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dist := func(dir, name, version, installer string, requires []string) {
		var md strings.Builder
		fmt.Fprintf(&md, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version)
		for _, r := range requires {
			fmt.Fprintf(&md, "Requires-Dist: %s\n", r)
		}
		info := fmt.Sprintf("%s/%s-%s.dist-info/", dir, strings.ReplaceAll(name, "-", "_"), version)
		w(info+"METADATA", md.String()+"\nA description.\n")
		w(info+"INSTALLER", installer+"\n")
	}
	w(venv+"/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
	// torch and what it requires, as the twin pins them.
	torchReq := []string{"filelock", "typing-extensions>=4.10.0", "networkx", "jinja2", "fsspec", `sympy==1.13.1; python_version >= "3.9"`}
	for _, sw := range testenv.StackWheels() {
		if strings.HasPrefix(sw.Dist, "nvidia-") || sw.Dist == "triton" {
			torchReq = append(torchReq, sw.Dist+"=="+sw.Version+`; platform_system == "Linux" and platform_machine == "x86_64"`)
		}
		dist(site, sw.Dist, sw.Version, "pip", sw.Requires)
	}
	dist(site, "torch", "2.6.0+cu124", "pip", torchReq)
	w(site+"/torch/version.py", "__version__ = '2.6.0+cu124'\ndebug = False\ncuda: Optional[str] = '12.4'\ngit_version = '1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340'\nhip: Optional[str] = None\n")
	dist(site, "pip", "23.0.1", "pip", nil)
	dist(site, "setuptools", "66.1.1", "pip", nil)
	for _, e := range extras {
		dist(site, e.name, e.version, "pip", e.requires)
	}
	// A package pip installed from git (PEP 610's direct_url.json).
	dist(site, "mylib", "0.1.0", "pip", nil)
	w(site+"/mylib-0.1.0.dist-info/direct_url.json", `{"url": "https://github.com/example/mylib.git", "vcs_info": {"vcs": "git", "commit_id": "`+gitCommit+`"}}`)
	// A conda env: python (no PyPI distribution) and numpy (with one).
	w("opt/conda/conda-meta/python-3.11.9-h955ad1f_0.json", `{"name": "python", "version": "3.11.9", "channel": "https://repo.anaconda.com/pkgs/main"}`)
	w("opt/conda/conda-meta/numpy-1.26.4-py311h08b1b3b_0.json", `{"name": "numpy", "version": "1.26.4", "channel": "https://repo.anaconda.com/pkgs/main"}`)
	dist("opt/conda/lib/python3.11/site-packages", "numpy", "1.26.4", "conda", nil)
	// A runfile CUDA toolkit.
	w("usr/local/cuda-12.4/version.json", `{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.4.127"}}`)
	w("usr/local/cuda-12.4/bin/nvcc", "#!/bin/sh\n")
	// Hand-copied files.
	w("usr/local/lib/libhandmade.so.1", "\x7fELF not really\n")
	w("opt/tools/run.sh", "#!/bin/sh\nexec python -m train\n")
	// The shell's environment, as a user leaves it in /etc/environment.
	w("etc/environment", "PATH=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\nHF_HOME=/data/hf\nNCCL_DEBUG=INFO\nCUDA_HOME=/usr/local/cuda-12.4\nAWS_ACCESS_KEY_ID="+fakeAWSKeyID+"\nAWS_SECRET_ACCESS_KEY="+fakeAWSSecret+"\n")
}

// minimalDpkg writes a dpkg status with a required package, a manual
// one, and one apt installed as its dependency (extended_states).
func minimalDpkg(t *testing.T, root string) {
	t.Helper()
	status := `Package: base-files
Status: install ok installed
Priority: required
Essential: yes
Version: 12.4+deb12u5

Package: git
Status: install ok installed
Priority: optional
Version: 1:2.39.5-0+deb12u1
Depends: libc6 (>= 2.34), git-man (>> 1:2.39.5), git-man (<< 1:2.39.5-.)

Package: libexpat1
Status: install ok installed
Priority: optional
Version: 2.5.0-1+deb12u2

Package: git-man
Status: install ok installed
Priority: optional
Version: 1:2.39.5-0+deb12u1

Package: python3
Status: install ok installed
Priority: optional
Version: 3.11.2-1+b1
Pre-Depends: python3-minimal (= 3.11.2-1+b1)
Depends: python3.11 (>= 3.11.2-1~), libpython3-stdlib (= 3.11.2-1+b1), libexpat1:amd64 | libexpat1-udeb

Package: removed-one
Status: deinstall ok config-files
Priority: optional
Version: 1.0
`
	for p, c := range map[string]string{
		"var/lib/dpkg/status":            status,
		"var/lib/apt/extended_states":    "Package: git-man\nArchitecture: amd64\nAuto-Installed: 1\n",
		"var/lib/dpkg/info/git.list":     "/usr/bin/git\n/usr/local\n",
		"etc/os-release":                 "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
		"usr/lib/python3.11/os.py":       "# os\n",
		"usr/bin/python3.11":             "\x7fELF\n",
		"var/lib/dpkg/info/git-man.list": "/usr/share/man/man1/git.1.gz\n",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

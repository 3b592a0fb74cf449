package testenv

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The hand-built environment of the capture tests, laid over a root file
// system as a user leaves one: pip's records in a venv (the torch 2.6.0
// cu124 twin's distributions, extras, one installed from git), a conda
// env, a runfile CUDA, hand-copied files and an AWS key in
// /etc/environment.
const (
	// FakeAWSKeyID and FakeAWSSecret are AWS's documented example key
	// (docs.aws.amazon.com, "Managing access keys"), which the secrets
	// check flags by format.
	FakeAWSKeyID  = "AKIAIOSFODNN7EXAMPLE"
	FakeAWSSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	// HandBuiltVenv is the venv's path in the root; HandBuiltSite its
	// site-packages.
	HandBuiltVenv = "opt/venv"
	HandBuiltSite = HandBuiltVenv + "/lib/python3.11/site-packages"
	// HandBuiltGitCommit is the commit mylib was pip-installed from.
	HandBuiltGitCommit = "4f7c2e0d9a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d"
)

// HandBuiltDist is a distribution the user pip-installed beside torch.
type HandBuiltDist struct {
	Name, Version string
	Requires      []string
}

// HandBuiltExtras are what the user pip-installed beside torch, with
// their Requires-Dist (requests 2.32.3's, from its METADATA on PyPI).
func HandBuiltExtras() []HandBuiltDist {
	return []HandBuiltDist{
		{"requests", "2.32.3", []string{"charset-normalizer<4,>=2", "idna<4,>=2.5", "urllib3<3,>=1.21.1", "certifi>=2017.4.17", `PySocks!=1.5.7,>=1.5.6; extra == "socks"`}},
		{"charset-normalizer", "3.4.0", nil},
		{"idna", "3.10", nil},
		{"urllib3", "2.2.3", nil},
		{"certifi", "2024.8.30", nil},
		{"einops", "0.8.0", nil},
	}
}

// HandBuilt lays the hand-built environment over root.
func HandBuilt(root string) error {
	var err error
	w := func(p, content string) {
		if err != nil {
			return
		}
		full := filepath.Join(root, p)
		if err = os.MkdirAll(filepath.Dir(full), 0o755); err == nil {
			err = os.WriteFile(full, []byte(content), 0o644)
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
	site := HandBuiltSite
	w(HandBuiltVenv+"/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
	// torch and what it requires, as the twin pins them.
	torchReq := []string{"filelock", "typing-extensions>=4.10.0", "networkx", "jinja2", "fsspec", `sympy==1.13.1; python_version >= "3.9"`}
	for _, sw := range StackWheels() {
		if strings.HasPrefix(sw.Dist, "nvidia-") || sw.Dist == "triton" {
			torchReq = append(torchReq, sw.Dist+"=="+sw.Version+`; platform_system == "Linux" and platform_machine == "x86_64"`)
		}
		dist(site, sw.Dist, sw.Version, "pip", sw.Requires)
	}
	dist(site, "torch", "2.6.0+cu124", "pip", torchReq)
	// PyTorch's install line (pytorch.org, "Start Locally"): pip3 install
	// torch torchvision torchaudio --index-url .../whl/cu124; the twin's
	// releases beside torch 2.6.0.
	dist(site, "torchvision", "0.21.0+cu124", "pip", []string{"numpy", "torch==2.6.0", "pillow!=8.3.*,>=5.3.0"})
	dist(site, "torchaudio", "2.6.0+cu124", "pip", []string{"torch==2.6.0"})
	w(site+"/torch/version.py", "__version__ = '2.6.0+cu124'\ndebug = False\ncuda: Optional[str] = '12.4'\ngit_version = '1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340'\nhip: Optional[str] = None\n")
	dist(site, "pip", "23.0.1", "pip", nil)
	dist(site, "setuptools", "66.1.1", "pip", nil)
	for _, e := range HandBuiltExtras() {
		dist(site, e.Name, e.Version, "pip", e.Requires)
	}
	// A package pip installed from git (PEP 610's direct_url.json).
	dist(site, "mylib", "0.1.0", "pip", nil)
	w(site+"/mylib-0.1.0.dist-info/direct_url.json", `{"url": "https://github.com/example/mylib.git", "vcs_info": {"vcs": "git", "commit_id": "`+HandBuiltGitCommit+`"}}`)
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
	w("etc/environment", "PATH=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\nHF_HOME=/data/hf\nNCCL_DEBUG=INFO\nCUDA_HOME=/usr/local/cuda-12.4\nAWS_ACCESS_KEY_ID="+FakeAWSKeyID+"\nAWS_SECRET_ACCESS_KEY="+FakeAWSSecret+"\n")
	if err != nil {
		return fmt.Errorf("lay the hand-built environment over %s: %w", root, err)
	}
	return nil
}

// UnpackWheels unpacks every wheel in dir into site, as pip installs one
// (the files at their paths, INSTALLER naming pip): the user's pip install
// of what an index serves.
func UnpackWheels(dir, site string) error {
	wheels, err := filepath.Glob(filepath.Join(dir, "*.whl"))
	if err != nil || len(wheels) == 0 {
		return fmt.Errorf("wheels in %s: %v %w", dir, wheels, err)
	}
	for _, w := range wheels {
		if err := unpackWheel(w, site); err != nil {
			return fmt.Errorf("unpack %s: %w", w, err)
		}
	}
	return nil
}

func unpackWheel(wheel, site string) error {
	zr, err := zip.OpenReader(wheel)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") || strings.Contains(f.Name, "..") {
			continue
		}
		dst := filepath.Join(site, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := unpackFile(f, dst); err != nil {
			return err
		}
		if dir, ok := strings.CutSuffix(f.Name, ".dist-info/METADATA"); ok {
			if err := os.WriteFile(filepath.Join(site, dir+".dist-info", "INSTALLER"), []byte("pip\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func unpackFile(f *zip.File, dst string) error {
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, f.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// HandBuiltRoot makes the hand-built environment in root (an empty
// directory): the Debian fixture root file system (BaseRootfs), with
// libjansson4 installed by dpkg --root from the loopback apt repository's
// packages (AptRepoDir), and HandBuilt over it.
func HandBuiltRoot(ctx context.Context, root string) error {
	tarball, err := BaseRootfs(ctx)
	if err != nil {
		return err
	}
	repo, err := AptRepoDir(ctx)
	if err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "tar", "-xf", tarball, "-C", root, "--exclude=./dev/*", "--exclude=dev/*").CombinedOutput(); err != nil {
		return fmt.Errorf("unpack %s: %w\n%s", tarball, err, tail(out, 20))
	}
	debs, err := filepath.Glob(filepath.Join(repo, "libjansson4_*.deb"))
	if err != nil || len(debs) != 1 {
		return fmt.Errorf("libjansson4 in %s: %v %w", repo, debs, err)
	}
	if out, err := exec.CommandContext(ctx, "dpkg", "--root="+root, "--force-script-chrootless", "-i", debs[0]).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg --root -i %s: %w\n%s", debs[0], err, tail(out, 20))
	}
	return HandBuilt(root)
}

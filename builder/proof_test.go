package builder_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate"
)

// file is one file of a test venv: an ELF object gcc links (elf), or text.
type file struct {
	path string
	elf  *testenv.ELFSpec
	text string
}

// site is the venv's site directory in the cases below.
const site = "lib/python3.12/site-packages/"

// TestProofPy runs the build's proof (proof.py, as every build runs it
// inside the image) on environments of real ELF objects that gcc links
// here (testenv.SharedObject), with the host's Python and dynamic
// loader directories: what resolves, what is missing, what the host's
// driver provides (the exception list validate uses, matrix.HostLibsJSON),
// and RPATH against RUNPATH for the libraries an object's own needs pull
// in. Each case's venv holds only its files; their names are ones no
// host has. Each case without imports is also checked by gpuimg
// validate's libs/closure, on an image of the same files (agree): the two
// checks must find the same libraries missing.
func TestProofPy(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "proof.py")
	hostLibs := filepath.Join(dir, "hostlibs.json")
	if err := os.WriteFile(script, builder.ProofPy, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostLibs, matrix.HostLibsJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	so := func(t *testing.T, spec testenv.ELFSpec) []byte {
		t.Helper()
		b, err := testenv.SharedObject(t.Context(), t.TempDir(), spec)
		if errors.Is(err, testenv.ErrNoCC) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lib := func(soname string, needed ...string) testenv.ELFSpec {
		return testenv.ELFSpec{Soname: soname, Needed: needed}
	}
	rpath := func(s testenv.ELFSpec, p string) testenv.ELFSpec { s.SearchPath = p; return s }
	runpath := func(s testenv.ELFSpec, p string) testenv.ELFSpec { s.SearchPath, s.RunPath = p, true; return s }

	elf := func(path string, s testenv.ELFSpec) file { return file{path: path, elf: &s} }
	tests := []struct {
		name    string
		files   []file
		modules []string
		ok      bool
		has     []string
	}{
		{name: "found through an ORIGIN-relative RPATH", ok: true,
			files: []file{
				elf(site+"torch/lib/libgpuimgt_torch.so", rpath(lib("libgpuimgt_torch.so", "libgpuimgt_cublas.so.12"), "$ORIGIN/../../nvidia/cublas/lib")),
				elf(site+"nvidia/cublas/lib/libgpuimgt_cublas.so.12", lib("libgpuimgt_cublas.so.12")),
			},
			has: []string{"2 ELF objects in ", "find all 1 needed libraries (0 driver libraries left to the host"}},
		{name: "missing library named with its file", ok: false,
			files: []file{
				elf(site+"torch/lib/libgpuimgt_torch_cuda.so", rpath(lib("libgpuimgt_torch_cuda.so", "libgpuimgt_cusparseLt.so.0"), "$ORIGIN/../../nvidia/cusparse/lib")),
			},
			has: []string{"/" + site + "torch/lib/libgpuimgt_torch_cuda.so needs libgpuimgt_cusparseLt.so.0, which is not in the image", "1 problem(s)"}},
		{name: "a library beside it without a search path is missing", ok: false,
			files: []file{
				elf(site+"pkg/libgpuimgt_a.so", lib("libgpuimgt_a.so", "libgpuimgt_b.so.1")),
				elf(site+"pkg/libgpuimgt_b.so.1", lib("libgpuimgt_b.so.1")),
			},
			has: []string{"libgpuimgt_a.so needs libgpuimgt_b.so.1"}},
		{name: "driver libraries are the host's", ok: true,
			files: []file{
				elf(site+"jaxlib/cuda/_gpuimgt_cuda.so", lib("", "libcuda.so.1", "libnvidia-ml.so.1")),
			},
			has: []string{"1 ELF objects", "(2 driver libraries left to the host"}},
		{name: "a driver library's own needs are the host's", ok: true,
			// As CUDA's compat directory holds libnvidia-pkcs11.so, which
			// needs OpenSSL 1.1 (matrix.IsHostDriverFile).
			files: []file{
				elf(site+"compat/libnvidia-pkcs11.so.535.104.05", lib("libnvidia-pkcs11.so.535.104.05", "libgpuimgt_crypto.so.1.1")),
				elf(site+"compat/libcuda.so.535.104.05", lib("libcuda.so.1", "libgpuimgt_crypto.so.1.1")),
			},
			has: []string{"0 ELF objects"}},
		{name: "an optional plugin's host libraries are noted, not failed", ok: true,
			files: []file{
				elf(site+"nvidia/cufile/lib/libcufile_rdma.so.1", lib("libcufile_rdma.so.1", "libibverbs.so.1", "libmlx5.so.1")),
			},
			has: []string{"not counted: ", "libcufile_rdma.so.1 needs ", "(cuFile's RDMA plugin"}},
		{name: "the loader's RPATH finds an indirect need", ok: true,
			// top (RPATH to mid and dep) needs mid; mid, with no search
			// path of its own, needs dep: ld.so searches top's RPATH for it.
			files: []file{
				elf(site+"top/libgpuimgt_top.so", rpath(lib("libgpuimgt_top.so", "libgpuimgt_mid.so.1"), "$ORIGIN/../mid:$ORIGIN/../dep")),
				elf(site+"mid/libgpuimgt_mid.so.1", lib("libgpuimgt_mid.so.1", "libgpuimgt_dep.so.1")),
				elf(site+"dep/libgpuimgt_dep.so.1", lib("libgpuimgt_dep.so.1")),
			},
			has: []string{"3 ELF objects", "find all 2 needed libraries"}},
		{name: "the loader's RUNPATH does not", ok: false,
			// DT_RUNPATH applies only to the object's own needs.
			files: []file{
				elf(site+"top/libgpuimgt_top.so", runpath(lib("libgpuimgt_top.so", "libgpuimgt_mid.so.1"), "$ORIGIN/../mid:$ORIGIN/../dep")),
				elf(site+"mid/libgpuimgt_mid.so.1", lib("libgpuimgt_mid.so.1", "libgpuimgt_dep.so.1")),
				elf(site+"dep/libgpuimgt_dep.so.1", lib("libgpuimgt_dep.so.1")),
			},
			has: []string{"/" + site + "mid/libgpuimgt_mid.so.1 needs libgpuimgt_dep.so.1"}},
		{name: "an object's own RUNPATH turns its loader's RPATH off", ok: false,
			files: []file{
				elf(site+"top/libgpuimgt_top.so", rpath(lib("libgpuimgt_top.so", "libgpuimgt_mid.so.1"), "$ORIGIN/../mid:$ORIGIN/../dep")),
				elf(site+"mid/libgpuimgt_mid.so.1", runpath(lib("libgpuimgt_mid.so.1", "libgpuimgt_dep.so.1"), "$ORIGIN/../elsewhere")),
				elf(site+"dep/libgpuimgt_dep.so.1", lib("libgpuimgt_dep.so.1")),
			},
			has: []string{"/" + site + "mid/libgpuimgt_mid.so.1 needs libgpuimgt_dep.so.1"}},
		{name: "a library its loader loaded counts, RUNPATH or not", ok: true,
			files: []file{
				elf(site+"top/libgpuimgt_top.so", rpath(lib("libgpuimgt_top.so", "libgpuimgt_dep.so.1", "libgpuimgt_mid.so.1"), "$ORIGIN/../mid:$ORIGIN/../dep")),
				elf(site+"mid/libgpuimgt_mid.so.1", runpath(lib("libgpuimgt_mid.so.1", "libgpuimgt_dep.so.1"), "$ORIGIN/../elsewhere")),
				elf(site+"dep/libgpuimgt_dep.so.1", lib("libgpuimgt_dep.so.1")),
			},
			has: []string{"3 ELF objects", "find all 3 needed libraries"}},
		{name: "files that are not ELF are skipped, a broken ELF is warned of", ok: true,
			files: []file{
				{path: site + "pkg/notelf.so", text: strings.Repeat("not an ELF file\n", 8)},
				{path: site + "pkg/broken.so", text: "\x7fELF\x02\x01\x01" + strings.Repeat("\x00", 9) + "\x03\x00\x3e\x00" + strings.Repeat("\xff", 44)},
			},
			has: []string{"0 ELF objects", "warning: ", "broken.so looks like an ELF file but cannot be read"}},
		{name: "a library dlopened from TensorFlow's resolves on its RUNPATH", ok: true,
			modules: []string{"--dlopen=tensorflow/libtensorflow_framework.so.2:libgpuimgt_cudnn.so.8"},
			files: []file{
				elf(site+"tensorflow/libtensorflow_framework.so.2", runpath(lib("libtensorflow_framework.so.2"), "$ORIGIN/../nvidia/cudnn/lib")),
				elf(site+"nvidia/cudnn/lib/libgpuimgt_cudnn.so.8", lib("libgpuimgt_cudnn.so.8")),
			},
			has: []string{"libtensorflow_framework.so.2 finds the 1 libraries it opens at run time"}},
		{name: "a library dlopened from TensorFlow's that nothing names is missing", ok: false,
			// As tensorflow[and-cuda] 2.16.1: nvidia/cudnn/lib is in the
			// venv, the framework library's search path does not name it
			// (tensorflow#63362); no DT_NEEDED names it either, so the
			// closure check passes.
			modules: []string{"--dlopen=tensorflow/libtensorflow_framework.so.2:libgpuimgt_cudart.so.12,libgpuimgt_cudnn.so.8"},
			files: []file{
				elf(site+"tensorflow/libtensorflow_framework.so.2", runpath(lib("libtensorflow_framework.so.2"), "$ORIGIN:$ORIGIN/..")),
				elf(site+"nvidia/cudnn/lib/libgpuimgt_cudnn.so.8", lib("libgpuimgt_cudnn.so.8")),
				elf(site+"nvidia/cuda_runtime/lib/libgpuimgt_cudart.so.12", lib("libgpuimgt_cudart.so.12")),
			},
			has: []string{"3 ELF objects", "/" + site + "tensorflow/libtensorflow_framework.so.2 opens libgpuimgt_cudart.so.12 at run time (dlopen), which it cannot find",
				"opens libgpuimgt_cudnn.so.8 at run time", "2 problem(s)"}},
		{name: "XLA finds ptxas and libdevice in pip's nvidia/cuda_nvcc", ok: true,
			modules: []string{"--xla=tensorflow/libtensorflow_framework.so.2"},
			files: []file{
				elf(site+"tensorflow/libtensorflow_framework.so.2", lib("libtensorflow_framework.so.2")),
				{path: site + "nvidia/cuda_nvcc/bin/ptxas", text: "#!/bin/sh\n"},
				{path: site + "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc", text: "BC\xc0\xde"},
			},
			has: []string{"XLA finds ptxas (", "/nvidia/cuda_nvcc/bin/ptxas) and libdevice ("}},
		{name: "XLA without libdevice names what it searched", ok: false,
			modules: []string{"--xla=tensorflow/libtensorflow_framework.so.2"},
			files: []file{
				elf(site+"tensorflow/libtensorflow_framework.so.2", lib("libtensorflow_framework.so.2")),
				{path: site + "nvidia/cuda_nvcc/bin/ptxas", text: "#!/bin/sh\n"},
			},
			has: []string{"XLA finds no nvvm/libdevice/libdevice.10.bc for ", "/usr/local/cuda, ", "1 problem(s)"}},
		{name: "each framework imports", ok: true, modules: []string{"gpuimgt_fw"},
			files: []file{{path: site + "gpuimgt_fw/__init__.py", text: "VERSION = '1'\n"}},
			has:   []string{"import gpuimgt_fw ok"}},
		{name: "an import that fails names its error", ok: false, modules: []string{"gpuimgt_fw", "gpuimgt_broken"},
			files: []file{
				{path: site + "gpuimgt_fw/__init__.py", text: "VERSION = '1'\n"},
				{path: site + "gpuimgt_broken/__init__.py", text: "raise ImportError('libgpuimgt_cudnn.so.9: cannot open shared object file: No such file or directory')\n"},
			},
			has: []string{"import gpuimgt_fw ok", "import gpuimgt_broken failed (exit 1): ImportError: libgpuimgt_cudnn.so.9: cannot open shared object file", "1 problem(s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			venv := t.TempDir()
			for _, f := range tt.files {
				p := filepath.Join(venv, f.path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				b := []byte(f.text)
				if f.elf != nil {
					b = so(t, *f.elf)
				}
				if err := os.WriteFile(p, b, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(py, append([]string{"-B", script, hostLibs, venv}, tt.modules...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PYTHONPATH=" + filepath.Join(venv, site), "HOME=" + venv}
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.ok {
				t.Fatalf("exit %v, want ok=%v:\n%s", err, tt.ok, out)
			}
			for _, s := range tt.has {
				if !strings.Contains(string(out), s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			if len(tt.modules) == 0 || strings.HasPrefix(tt.modules[0], "--") {
				agree(t, venv, tt.files, string(out))
			}
		})
	}
}

// agree checks that gpuimg validate's libs/closure check, on an image of
// the same files at /opt/venv, finds the same libraries missing as
// proof.py found in venv: the static check and the build's agree.
func agree(t *testing.T, venv string, files []file, proofOut string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(venv, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: "opt/venv/" + f.path, Mode: 0o755, Typeflag: tar.TypeReg, Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := validate.Inspect(t.Context(), img, validate.Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	var closure *validate.Check
	for i := range rep.Checks {
		if rep.Checks[i].Name == "libs/closure" {
			closure = &rep.Checks[i]
		}
	}
	var missing []string // "/opt/venv/REL needs LIB"
	for line := range strings.SplitSeq(proofOut, "\n") {
		if p, rest, ok := strings.Cut(strings.TrimPrefix(line, "gpuimg check: "), " needs "); ok && strings.HasPrefix(line, "gpuimg check: /") && strings.Contains(rest, ", which is not in the image") {
			lib, _, _ := strings.Cut(rest, ",")
			missing = append(missing, "/opt/venv"+strings.TrimPrefix(p, venv)+" needs "+lib)
		}
	}
	failed := closure != nil && closure.Status == matrix.Fail
	if failed != (len(missing) > 0) {
		t.Fatalf("validate's libs/closure says %+v; proof.py found missing %q", closure, missing)
	}
	for _, m := range missing {
		if !strings.Contains(closure.Message, m) {
			t.Errorf("validate's libs/closure lacks %q: %s", m, closure.Message)
		}
	}
}

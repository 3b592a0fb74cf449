package testenv

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The JAX twin: a structural twin of `pip install jax[cuda12_pip]==0.4.25
// -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html`,
// the monolithic CUDA jaxlib that JAX 0.4.17 to 0.4.29 install. jaxtwin.md
// beside this file records where each fact was read.
const (
	// JAXVersion is the twin's jax and jaxlib release.
	JAXVersion = "0.4.25"
	// JAXLibLocal is the local label of its CUDA jaxlib: setup.py at
	// jax-v0.4.25 pins jaxlib==0.4.25+cuda12.cudnn89 for cuda12_pip
	// (_default_cuda12_cudnn_version = '89').
	JAXLibLocal = "+cuda12.cudnn89"
	// JAXPagePath is the find-links page's path below its server's root,
	// and JAXPageDir the directory its CUDA 12 wheels lie in, relative
	// to the page (storage.googleapis.com/jax-releases/cuda12/jaxlib-…).
	JAXPagePath = "/jax-releases/jax_cuda_releases.html"
	JAXPageDir  = "cuda12"

	jaxSetup   = "jax-ml/jax setup.py at tag jax-v0.4.25 (read 2026-12-02)"
	jaxlibWhl  = "jax-ml/jax jaxlib/tools/build_wheel.py at tag jaxlib-v0.4.25 (read 2026-12-02)"
	uv4830Log  = "the resolution printed in astral-sh/uv#4830 for jax[cuda12-pip]==0.4.25 with -f jax_cuda_releases.html (read 2026-12-02)"
	jaxNoSizes = "sizes not read: the twin keeps none"
)

// jaxDeps are jax's and jaxlib's install_requires (jaxSetup, and jaxlib's
// setup.py at jaxlib-v0.4.25: scipy, numpy, ml_dtypes), at the versions
// uv4830Log resolved; they stand in as plain Python packages (their own
// ELF files are not what this twin is about).
var jaxDeps = []StackWheel{
	{Dist: "numpy", Version: "2.0.0", MB: 0.05, Source: uv4830Log},
	{Dist: "scipy", Version: "1.14.0", MB: 0.05, Source: uv4830Log},
	{Dist: "ml_dtypes", Version: "0.4.0", MB: 0.01, Source: uv4830Log},
	{Dist: "opt_einsum", Version: "3.3.0", MB: 0.01, Any: true, Source: uv4830Log},
}

// jaxNVIDIA are the nvidia-* distributions jax[cuda12_pip]==0.4.25 pins
// (jaxSetup), in its order, with its pins. The twins are the torch
// twin's (StackWheels: real versions that meet these pins), and
// nvidia-cuda-nvcc-cu12, which torch does not pull in, at the version
// uv4830Log resolved.
var jaxNVIDIA = []struct{ dist, pin string }{
	{"nvidia-cublas-cu12", ">=12.3.4.1"},
	{"nvidia-cuda-cupti-cu12", ">=12.3.101"},
	{"nvidia-cuda-nvcc-cu12", ">=12.3.107"},
	{"nvidia-cuda-runtime-cu12", ">=12.3.101"},
	{"nvidia-cudnn-cu12", ">=8.9.7.29"},
	{"nvidia-cufft-cu12", ">=11.0.12.1"},
	{"nvidia-cusolver-cu12", ">=11.5.4.101"},
	{"nvidia-cusparse-cu12", ">=12.2.0.103"},
	{"nvidia-nccl-cu12", ">=2.19.3"},
	{"nvidia-nvjitlink-cu12", ">=12.3.101"},
}

// nvccVersion is nvidia-cuda-nvcc-cu12's version in uv4830Log.
const nvccVersion = "12.5.82"

// jaxCuDNN8 is the cuDNN 8 the cudnn89 jaxlib needs: 8.9.7.29, the floor
// jax[cuda12_pip]==0.4.25 pins and the version jax-ml/jax#18027 lists
// installed with it. Beside it the index has the torch twin's cuDNN 9
// (9.1.0.70), as PyPI has newer ones, so pip takes 9 unless told <9.
// Its sublibraries (libcudnn_ops_infer.so.8, …, which libcudnn.so.8
// loads with dlopen) and its size were not read: the twin has
// libcudnn.so.8 only, unpadded; Requires-Dist as the torch twin's cuDNN
// (unconfirmed for 8.9).
var jaxCuDNN8 = StackWheel{Dist: "nvidia-cudnn-cu12", Version: "8.9.7.29", Any: true, Libs: []string{"nvidia/cudnn/lib/libcudnn.so.8"},
	Requires: []string{"nvidia-cublas-cu12"}, Source: "jax-ml/jax#18027 (pip list after jax[cuda12_pip] 0.4.25, 2024-03-11; read 2026-12-02)"}

// jaxCUDADirs are the nvidia/X/lib directories jaxlib's CUDA libraries
// reach through DT_RPATH: one per nvidia-* wheel jax[cuda12_pip] pins
// that ships a lib/ (.bazelrc at jaxlib-v0.4.25: build:cuda sets
// --@xla//xla/python:jax_cuda_pip_rpaths=true and links with
// --disable-new-dtags, so DT_RPATH). The exact list XLA writes was not
// read (unconfirmed).
var jaxCUDADirs = []string{"cublas", "cuda_cupti", "cuda_runtime", "cudnn", "cufft", "cusolver", "cusparse", "nccl", "nvjitlink"}

// jaxRPath is the DT_RPATH of a jaxlib library at depth levels below
// site-packages (1: jaxlib/X.so, 2: jaxlib/cuda/X.so): TSL's
// cuda_rpath_flags form, $ORIGIN/<up>nvidia/X/lib.
func jaxRPath(depth int) string {
	up := strings.Repeat("../", depth)
	var ds []string
	for _, d := range jaxCUDADirs {
		ds = append(ds, "$ORIGIN/"+up+"nvidia/"+d+"/lib")
	}
	return strings.Join(ds, ":")
}

// jaxlibExtensions are the extension modules of jaxlib 0.4.25's CUDA
// wheel the twin builds (jaxlibWhl: jaxlib/*.so, jaxlib/cpu/, jaxlib/cuda/
// with nvvm/libdevice/libdevice.10.bc, jaxlib/mlir/_mlir_libs/), by
// path; each is named X.so, not X.cpython-3XY-….so (build_wheel.py's
// pyext is "so"). Their DT_NEEDED lists name no CUDA library: XLA loads
// CUDA with dlopen through its stubs (JAX's FAQ, jax-ml/jax#19604), and
// the exact lists were not read (unconfirmed).
var jaxlibExtensions = []string{
	"jaxlib/cpu_feature_guard.so", "jaxlib/utils.so", "jaxlib/xla_extension.so",
	"jaxlib/cpu/_lapack.so", "jaxlib/cpu/_ducc_fft.so",
	"jaxlib/cuda/_solver.so", "jaxlib/cuda/_blas.so", "jaxlib/cuda/_linalg.so", "jaxlib/cuda/_prng.so",
	"jaxlib/cuda/_rnn.so", "jaxlib/cuda/_sparse.so", "jaxlib/cuda/_triton.so", "jaxlib/cuda/_versions.so",
	"jaxlib/mlir/_mlir_libs/_mlir.so",
}

// extensionSrc is a Python extension module named name (the last part
// of its import path) that, once loaded, is a module of that name: a
// stand-in for a jaxlib extension, on Python's stable ABI.
func extensionSrc(name string) string {
	return fmt.Sprintf(`#define Py_LIMITED_API 0x030b0000
#include <Python.h>
static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "%[1]s", "gpuimg test fixture standing in for jaxlib's %[1]s", -1, NULL};
PyMODINIT_FUNC PyInit_%[1]s(void) { return PyModule_Create(&m); }
`, name)
}

// JAXStackWheels writes the JAX twin: jax 0.4.25 (py3-none-any, its real
// Requires-Dist and extras), its dependencies and the nvidia-* wheels
// into indexDir (what the simple index serves, as PyPI does), with a
// CPU-only jaxlib 0.4.25 there too, as on PyPI; and the CUDA jaxlib
// 0.4.25+cuda12.cudnn89 for each CPython of pythons only into
// pageDir/cuda12/, for ServeFindLinks, as JAX publishes it. A build that
// does not pass the page to pip then fails as the real one does: pip
// finds no jaxlib==0.4.25+cuda12.cudnn89. `import jax` imports jaxlib's
// extension modules (jax/_src/lib's order: cpu_feature_guard,
// xla_extension, then jaxlib.cuda's), each built here with jaxlib's
// DT_RPATH to nvidia/X/lib; scale sizes the nvidia-* twins as
// LayeredStackWheels does.
func JAXStackWheels(ctx context.Context, indexDir, pageDir string, pythons []string, scale float64) error {
	inc, err := PythonIncludes(ctx)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "gpuimg-jaxtwin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for _, w := range jaxDeps {
		if err := writeStackWheel(ctx, work, indexDir, w, pythons, scale, Incompressible); err != nil {
			return err
		}
	}
	byDist := map[string]StackWheel{}
	for _, w := range stackWheels {
		byDist[w.Dist] = w
	}
	var cudaReq []string
	for _, n := range jaxNVIDIA {
		cudaReq = append(cudaReq, n.dist+n.pin)
		if n.dist == "nvidia-cuda-nvcc-cu12" {
			continue
		}
		w, ok := byDist[n.dist]
		if !ok {
			return fmt.Errorf("jax twin: no %s twin in StackWheels; add one", n.dist)
		}
		if err := writeStackWheel(ctx, work, indexDir, w, pythons, scale, Incompressible); err != nil {
			return err
		}
	}
	if err := writeStackWheel(ctx, work, indexDir, jaxCuDNN8, pythons, scale, Incompressible); err != nil {
		return err
	}
	if err := writeNVCCTwin(ctx, work, indexDir); err != nil {
		return err
	}
	if err := writeJAXWheel(indexDir, cudaReq); err != nil {
		return err
	}
	libReq := []string{"scipy>=1.9", `scipy>=1.11.1; python_version >= "3.12"`, "numpy>=1.22", "ml_dtypes>=0.2.0"}
	page := filepath.Join(pageDir, JAXPageDir)
	if err := os.MkdirAll(page, 0o755); err != nil {
		return err
	}
	for _, cuda := range []bool{false, true} {
		version, dir := JAXVersion, indexDir
		if cuda {
			version, dir = JAXVersion+JAXLibLocal, page
		}
		files := map[string]string{
			twinInfo("jaxlib", version):          twinMetadata("jaxlib", version, libReq),
			"jaxlib/__init__.py":                 "# gpuimg test fixture standing in for jaxlib " + version + " (" + jaxlibWhl + ")\nfrom .version import __version__\n",
			"jaxlib/version.py":                  fmt.Sprintf("__version__ = %q\n", JAXVersion),
			"jaxlib/xla_client.py":               "from . import xla_extension as _xla\n",
			"jaxlib/cpu/__init__.py":             "",
			"jaxlib/mlir/__init__.py":            "",
			"jaxlib/mlir/_mlir_libs/__init__.py": "",
		}
		for _, e := range jaxlibExtensions {
			if !cuda && strings.HasPrefix(e, "jaxlib/cuda/") {
				continue // the CPU jaxlib has no jaxlib/cuda/ (build_wheel.py copies it only when built with CUDA)
			}
			spec := ELFSpec{Source: extensionSrc(strings.TrimSuffix(path.Base(e), ".so")), CFlags: []string{inc}}
			if cuda {
				spec.SearchPath = jaxRPath(strings.Count(e, "/"))
			}
			b, err := SharedObject(ctx, work, spec)
			if err != nil {
				return err
			}
			files[e] = string(b)
		}
		if cuda {
			files["jaxlib/cuda/__init__.py"] = ""
			files["jaxlib/cuda/nvvm/libdevice/libdevice.10.bc"] = payload("libdevice.10.bc", 4096)
		}
		for _, py := range pythons {
			cp := "cp" + strings.ReplaceAll(py, ".", "")
			if _, err := Wheel(dir, "jaxlib", version, cp+"-"+cp+"-manylinux2014_x86_64", files); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeJAXWheel writes jax 0.4.25: its install_requires and its CPU and
// CUDA 12 extras as setuptools writes them into METADATA (jaxSetup; the
// cuda11, tpu and australis extras are left out), and a jax package whose
// import loads jaxlib as jax/_src/lib/__init__.py does.
func writeJAXWheel(dir string, cudaReq []string) error {
	req := []string{"ml_dtypes>=0.2.0", "numpy>=1.22", `numpy>=1.23.2; python_version >= "3.11"`, `numpy>=1.26.0; python_version >= "3.12"`,
		"opt_einsum", "scipy>=1.9", `scipy>=1.11.1; python_version >= "3.12"`, `importlib_metadata>=4.6; python_version < "3.10"`}
	extra := func(name string, reqs ...string) {
		for _, r := range reqs {
			req = append(req, fmt.Sprintf("%s; extra == %q", r, name))
		}
	}
	extra("cpu", "jaxlib=="+JAXVersion)
	extra("cuda12_pip", append([]string{"jaxlib==" + JAXVersion + JAXLibLocal}, cudaReq...)...)
	extra("cuda12", append([]string{"jaxlib==" + JAXVersion, "jax-cuda12-plugin==" + JAXVersion}, cudaReq...)...)
	extra("cuda12_local", "jaxlib=="+JAXVersion+JAXLibLocal)
	meta := twinMetadata("jax", JAXVersion, req, "cpu", "cuda12", "cuda12_local", "cuda12_pip")
	_, err := Wheel(dir, "jax", JAXVersion, "py3-none-any", map[string]string{
		twinInfo("jax", JAXVersion): meta,
		"jax/__init__.py":           "# gpuimg test fixture standing in for jax " + JAXVersion + " (" + jaxSetup + ")\nfrom jax.version import __version__\nfrom jax._src import lib as _lib\n",
		"jax/version.py":            fmt.Sprintf("__version__ = %q\n", JAXVersion),
		"jax/_src/__init__.py":      "",
		"jax/_src/lib/__init__.py": `# As jax/_src/lib/__init__.py at jax-v0.4.25: jaxlib's version first,
# then its C modules, the CUDA ones when this jaxlib has them.
import jaxlib.version
import jaxlib.cpu_feature_guard as cpu_feature_guard
import jaxlib.utils as utils
import jaxlib.xla_client as xla_client
try:
    import jaxlib.cuda._versions as cuda_versions
except ImportError:
    cuda_versions = None
else:
    import jaxlib.cuda._solver, jaxlib.cuda._blas, jaxlib.cuda._sparse, jaxlib.cuda._prng, jaxlib.cuda._linalg, jaxlib.cuda._rnn, jaxlib.cuda._triton
`,
	})
	return err
}

// writeNVCCTwin writes nvidia-cuda-nvcc-cu12: the two things jax looks
// for under nvidia/cuda_nvcc (jax/_src/lib/__init__.py's _cuda_path at
// jax-v0.4.25: bin/ptxas and nvvm/libdevice), ptxas as a small ELF
// executable; the rest of the real wheel's listing was not read.
func writeNVCCTwin(ctx context.Context, work, dir string) error {
	ptxas, err := SharedObject(ctx, work, ELFSpec{Executable: true})
	if err != nil {
		return err
	}
	note := "# gpuimg test fixture standing in for nvidia-cuda-nvcc-cu12 " + nvccVersion + " (" + uv4830Log + "; " + jaxNoSizes + ")\n"
	_, err = Wheel(dir, "nvidia-cuda-nvcc-cu12", nvccVersion, "py3-none-manylinux2014_x86_64", map[string]string{
		"nvidia/__init__.py":                              note,
		"nvidia/cuda_nvcc/__init__.py":                    note,
		"nvidia/cuda_nvcc/bin/ptxas":                      string(ptxas),
		"nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc": payload("nvcc-libdevice.10.bc", 4096),
	})
	return err
}

// FindLinks serves a directory as a pip find-links page in the layout of
// JAX's jax_cuda_releases.html: one <a> per wheel, its href relative to
// the page (cuda12/jaxlib-0.4.25+cuda12.cudnn89-cp311-cp311-manylinux2014_x86_64.whl),
// the wheels below the page's directory. It is no PEP 503 index: pip
// reads it only through --find-links (or find-links in pip.conf).
type FindLinks struct {
	// URL is the page's URL, for pip's --find-links.
	URL string
	srv *http.Server
}

// ServeFindLinks serves the wheels in dir's subdirectories on a page at
// JAXPagePath on 127.0.0.1 until Close.
func ServeFindLinks(dir string) (*FindLinks, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	base := path.Dir(JAXPagePath) + "/"
	mux := http.NewServeMux()
	mux.HandleFunc(JAXPagePath, func(w http.ResponseWriter, _ *http.Request) {
		wheels, err := filepath.Glob(filepath.Join(dir, "*", "*.whl"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		slices.Sort(wheels)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><head></head><body>\n")
		for _, p := range wheels {
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			fmt.Fprintf(w, "<a href=\"%s\">%s</a><br>\n", html.EscapeString(rel), html.EscapeString(rel))
		}
		fmt.Fprint(w, "</body></html>\n")
	})
	mux.Handle(base, http.StripPrefix(base, http.FileServer(http.Dir(dir))))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return &FindLinks{URL: "http://" + l.Addr().String() + JAXPagePath, srv: srv}, nil
}

// Close stops the page's server.
func (f *FindLinks) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return f.srv.Shutdown(ctx)
}

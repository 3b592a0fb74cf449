"""Check, inside the image being built, that a framework gpuimg installed is
the version and CUDA variant the stack pins.

Usage: python verify.py [--no-torch-compile] NAME VERSION CUDA
       (e.g. torch 2.3.1 12.1)

It reads package metadata and torch's version.py without importing the
framework (importing needs a GPU driver on some versions and is slow), and
exits non-zero with one line naming the mismatch, which fails the build
before a wrong wheel can be published.

When triton is installed, it also checks what torch.compile needs at its
first use, the way triton's runtime/build.py looks for it: a C compiler
($CC, else gcc, else clang on PATH) and Python.h in the include directory
of Python's default sysconfig scheme (posix_prefix for Debian's
posix_local). --no-torch-compile (the build's --torch-compile=false)
skips that check with a note.
"""

import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
import sysconfig

DISTS = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax"}
# The CUDA line of torch/version.py: gpuimg renders matrix.TorchCUDAPattern
# (matrix/torchversion.go) in here, the one rule its image validation
# reads torch's CUDA with too.
TORCH_CUDA = re.compile(r"""@TORCH_CUDA_PATTERN@""")


def fail(msg):
    print("gpuimg verify: " + msg, file=sys.stderr)
    sys.exit(1)


def torch_cuda():
    """Return torch's CUDA version from torch/version.py, or None for a CPU build."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        fail("torch is installed as a distribution but has no torch package")
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        fail("cannot read %s: %s" % (path, e))
    m = TORCH_CUDA.search(text)
    if m is None:
        fail("%s has no cuda = ... line" % path)
    return m.group(2)


POST = re.compile(r"[-_.]?(?:post|rev|r)[-_.]?[0-9]*$", re.I)


def release(version, post=True):
    """The version without its local label (+cu121): what the stack pins.
    With post False also without a post-release segment (.post1): a
    post-release is the same release republished (tensorflow 2.15.0.post1
    is 2.15.0 without the tensorrt pins no index serves), so it meets a
    pin of the release."""
    public = version.partition("+")[0]
    return public if post else POST.sub("", public)


def check(name, want_version, want_cuda):
    dist = DISTS.get(name)
    if dist is None:
        fail("unknown framework %r" % name)
    try:
        got = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        fail("%s is not installed" % dist)
    if release(got) != want_version and release(got, post=False) != want_version:
        fail("%s %s was installed, the stack pins %s" % (dist, got, want_version))
    if name == "torch":
        cuda = torch_cuda()
        if cuda is None:
            fail("torch %s is a CPU-only build; the index served the wrong variant (want CUDA %s)" % (got, want_cuda))
        if ".".join(cuda.split(".")[:2]) != want_cuda:
            fail("torch %s is built for CUDA %s, the stack needs CUDA %s: the index served another variant" % (got, cuda, want_cuda))
        return "torch %s (CUDA %s)" % (got, cuda)
    return "%s %s" % (dist, got)


TRITON_DISTS = ("triton", "pytorch-triton")
OPT_OUT = "build with --torch-compile=false (gpuimg.yaml torch_compile: false) to leave torch.compile out"


def triton_version():
    """The installed triton distribution as NAME VERSION, or None."""
    for dist in TRITON_DISTS:
        try:
            return "%s %s" % (dist, importlib.metadata.version(dist))
        except importlib.metadata.PackageNotFoundError:
            pass
    return None


def c_compiler():
    """The C compiler triton would use: $CC, else gcc, else clang on PATH
    (triton/runtime/build.py); (path or None, what was looked for)."""
    cc = os.environ.get("CC")
    if cc is not None:
        return shutil.which(cc), "$CC (%s)" % cc
    return shutil.which("gcc") or shutil.which("clang"), "gcc or clang on PATH ($CC unset)"


def python_include():
    """The include directory triton passes with -I: the default scheme's,
    with Debian's posix_local read as posix_prefix."""
    if hasattr(sysconfig, "get_default_scheme"):
        scheme = sysconfig.get_default_scheme()
    else:
        scheme = sysconfig._get_default_scheme()
    if scheme == "posix_local":
        scheme = "posix_prefix"
    return sysconfig.get_paths(scheme=scheme)["include"]


def check_torch_compile(opted_out):
    """None without triton; else a line saying what torch.compile builds
    with. Fails naming what is missing."""
    triton = triton_version()
    if triton is None:
        return None
    if opted_out:
        return "torch.compile left out (--torch-compile=false): %s has no C compiler or Python headers checked" % triton
    cc, looked = c_compiler()
    if cc is None:
        fail("torch.compile cannot work: %s compiles a C helper at first use and finds no C compiler (looked for %s): "
             "install gcc in the base image, or %s" % (triton, looked, OPT_OUT))
    header = os.path.join(python_include(), "Python.h")
    if not os.path.isfile(header):
        fail("torch.compile cannot work: %s compiles its C helper against %s, which is missing: install Python %s's headers "
             "(libpython%s-dev with apt, the Python's -devel package with dnf) in the base image, or %s"
             % (triton, header, sysconfig.get_python_version(), sysconfig.get_python_version(), OPT_OUT))
    return "torch.compile: %s builds with %s against %s" % (triton, cc, header)


def main(argv):
    args = argv[1:]
    opted_out = bool(args) and args[0] == "--no-torch-compile"
    if opted_out:
        args = args[1:]
    if len(args) != 3:
        fail("usage: verify.py [--no-torch-compile] NAME VERSION CUDA")
    print("gpuimg verify: " + check(args[0], args[1], args[2]) + " ok")
    line = check_torch_compile(opted_out)
    if line is not None:
        print("gpuimg verify: " + line)


if __name__ == "__main__":
    main(sys.argv)

"""Check, inside the image being built, that a framework gpuimg installed is
the version and CUDA variant the stack pins.

Usage: python verify.py NAME VERSION CUDA    (e.g. torch 2.3.1 12.1)

It reads package metadata and torch's version.py without importing the
framework (importing needs a GPU driver on some versions and is slow), and
exits non-zero with one line naming the mismatch, which fails the build
before a wrong wheel can be published.
"""

import importlib.metadata
import importlib.util
import os
import re
import sys

DISTS = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax"}
TORCH_CUDA = re.compile(r"""^cuda(?:\s*:\s*[^=]+)?\s*=\s*(None|['"]([^'"]*)['"])""", re.M)


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


def main(argv):
    if len(argv) != 4:
        fail("usage: verify.py NAME VERSION CUDA")
    print("gpuimg verify: " + check(argv[1], argv[2], argv[3]) + " ok")


if __name__ == "__main__":
    main(sys.argv)

"""Record, inside the image being built, which pip step installed each
distribution, and list them with their installed size and whether they
can live in the shared, Python-version-independent site directory.

Usage:
  python -B plan.py record STEP STATE   after pip step STEP (0: the new venv)
  python -B plan.py finish STATE OUT    write the plan (JSON) to OUT
  python -B plan.py copy VENV ROOT NAME==VERSION...
  python -B plan.py copy --shared VENV SITE NAME==VERSION...
                                        copy what pip installed of each
                                        distribution in the venv VENV (the
                                        framework steps' environment) into a
                                        layer: to ROOT/<this venv's path>/…,
                                        or, --shared, into the site directory
                                        SITE without the .pyc files pip
                                        compiled
  python -B plan.py link SITE PLAN      in this Python's venv, link each
                                        top-level directory of each shared
                                        distribution of PLAN to its place in
                                        the shared site directory SITE
  python -B plan.py prune VENV PLAN     remove from VENV (this Python's venv
                                        as the python stage made it) every
                                        distribution that PLAN lists at
                                        another version, as pip uninstall
                                        would: a framework step upgraded it,
                                        and its layer brings the new one
  python -B plan.py pycs [DIR...]       recompile each stale timestamp .pyc
                                        under each DIR (default: this
                                        Python's standard library)
  python -B plan.py ossplit T0 OWN SHARED [ROOT]
                                        split the paths an OS package step
                                        changed (NUL-separated on stdin)
                                        into OWN and SHARED (NUL-separated
                                        lists): SHARED has the files of the
                                        packages the step installed (dpkg's
                                        lists newer than T0) that are not
                                        Python's, OWN everything else

A .pyc checked by timestamp records its source's mtime and size; when a
step clamps the source's time (the base's own build, or this build's
clamp of what the OS packages installed), Python finds the .pyc stale and
compiles the module again at every start, and pip's first import in each
pip step does so for a hundred modules. pycs rewrites only the .pyc files
that exist and are stale, as timestamp .pyc files of the source's times
as they are now, with PYTHONHASHSEED 0 (set by the caller) so that sets
are written in one order.

The state file maps each distribution to the step that installed its
current version; a later step that replaces a version takes it over, one
that removes a distribution drops it, so the plan lists exactly what the
sequence of pip installs left in the environment.
"""

import csv
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import stat
import sys
import sysconfig


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def dists():
    out = {}
    for d in importlib.metadata.distributions():
        name = d.metadata["Name"]
        if name and norm(name) not in out:  # the first on sys.path wins, as for imports
            out[norm(name)] = d
    return out


def record(step, state):
    try:
        with open(state, encoding="utf-8") as f:
            known = json.load(f)
    except FileNotFoundError:
        known = {}
    now = {}
    for n, d in dists().items():
        k = known.get(n)
        if k is not None and k["version"] == d.version:
            now[n] = k
        else:
            now[n] = {"version": d.version, "step": step}
    with open(state, "w", encoding="utf-8") as f:
        json.dump(now, f, sort_keys=True, indent=1)


def shared(d):
    """A wheel for any Python 3 and ABI (every tag py3-none-PLATFORM) whose
    files all lie in the site directory (no scripts, headers or data
    elsewhere) and that has no .pth file at its top (site only reads .pth
    files in the venv's own site directory, not in the shared one, which a
    .pth line puts on sys.path): its files are the same, and work the
    same, under any Python version."""
    wheel = d.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    if not tags:
        return False
    for t in tags:
        parts = t.split("-")
        if len(parts) != 3 or not parts[0].startswith("py") or parts[1] != "none":
            return False
    for f in d.files or []:
        if str(f).startswith("..") or os.path.isabs(str(f)):
            return False
        if len(f.parts) == 1 and f.name.endswith(".pth"):
            return False
    return True


def compiled(f):
    """A .pyc file pip compiled at install: RECORD lists it without a hash
    (one the wheel itself ships has one)."""
    return f.name.endswith(".pyc") and f.hash is None


def inside(path, root):
    """Whether the normalised path lies in root (or is root)."""
    return os.path.commonpath([path, root]) == root


def tops(d):
    """The top-level directories of the site directory that d's RECORD
    puts files in (nvidia, cusparselt, torch), its .dist-info and
    __pycache__ left out."""
    out = set()
    for f in d.files or []:
        if len(f.parts) > 1 and f.parts[0] not in ("..", "__pycache__") and not f.parts[0].endswith(".dist-info"):
            out.add(f.parts[0])
    return sorted(out)


def finish(state, out):
    """Write the plan: each distribution the framework steps installed,
    with its size, whether it is shared, and its top-level directories
    ("top"). A shared distribution's top-level directories are linked
    into the venv (link), so one that a version-specific distribution
    also installs into cannot be shared: both are then version-specific."""
    with open(state, encoding="utf-8") as f:
        known = json.load(f)
    plan = []
    for n, d in sorted(dists().items()):
        k = known.get(n)
        if k is None or k["step"] == 0:
            continue
        size = 0
        for f in d.files or []:
            p = d.locate_file(f)
            if os.path.isfile(p) and not os.path.islink(p):
                size += os.path.getsize(p)
        plan.append({"name": d.metadata["Name"], "version": d.version, "step": k["step"], "size": size, "shared": shared(d), "top": tops(d)})
    own = {t for p in plan if not p["shared"] for t in p["top"]}
    for p in plan:
        if p["shared"] and own.intersection(p["top"]):
            p["shared"] = False
    with open(out, "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=1)


def link(site, plan_file):
    """Make every top-level directory of the plan's shared distributions
    resolve from this Python's venv: a symbolic link
    <platlib>/NAME -> SITE/NAME for each. Python finds them through the
    .pth file either way; the dynamic loader does not: torch's libraries
    find their CUDA libraries through RPATH entries relative to their own
    directory ($ORIGIN/../../nvidia/cublas/lib, and for cuSPARSELt 0.6,
    which installs to a top-level cusparselt/, $ORIGIN/../../cusparselt/lib)."""
    with open(plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    platlib = sysconfig.get_path("platlib")
    for name in sorted({t for p in plan if p["shared"] for t in p.get("top", [])}):
        if "/" in name or name in (".", ".."):
            fail("plan lists top-level directory %r" % name)
        dst, src = os.path.join(platlib, name), os.path.join(site, name)
        if os.path.islink(dst) and os.readlink(dst) == src:
            continue
        if os.path.lexists(dst):
            fail("%s exists in the venv; a shared distribution's %s cannot be linked there" % (dst, name))
        os.symlink(src, dst)


def fail(msg):
    print("plan.py: " + msg, file=sys.stderr)
    sys.exit(1)


def copy(venv, dest, wanted, shared_site):
    """Copy each distribution NAME==VERSION of wanted, as pip installed it
    in venv (this Python's venv, mounted elsewhere), file by file from its
    RECORD: the same bytes and modes one pip install gave, installed once.

    Without shared_site, a file at venv/P goes to dest/<sys.prefix>/P (where
    it was installed, under a root). With shared_site, the distribution
    must lie entirely in the site directory; its files go to dest/P (P
    relative to site-packages), without the .pyc files pip compiled (they
    depend on the Python version), and its RECORD loses their rows.

    A file RECORD lists that is gone was removed by a later step (pip
    uninstalling an older version of another distribution that shipped
    the same path, such as nvidia/__init__.py): the layer holds what the
    environment holds, so it is skipped; a missing file of its .dist-info
    directory is an error."""
    venv = os.path.normpath(venv)
    sites, found = installed(venv)
    for want in wanted:
        name, sep, version = want.partition("==")
        d = found.get(norm(name))
        if not sep or d is None:
            fail("%s is not installed in %s (the plan and the framework steps disagree)" % (want, venv))
        if d.version != version:
            fail("%s: %s has version %s (the plan and the framework steps disagree)" % (want, venv, d.version))
        if d.files is None:
            fail("%s: no RECORD file in %s" % (want, venv))
        # The rows a shared copy leaves out of RECORD: those of the files
        # it leaves out.
        dropped = {str(f) for f in d.files if compiled(f)}
        for f in d.files:
            src = os.path.normpath(str(d.locate_file(f)))
            if not inside(src, venv):
                fail("%s: %s lies outside %s" % (want, f, venv))
            pyc = compiled(f)
            if shared_site:
                site = next((s for s in sites if inside(src, s)), None)
                if site is None:
                    fail("%s: %s lies outside the site directory; it cannot be shared" % (want, f))
                if pyc:
                    continue
                dst = os.path.join(dest, os.path.relpath(src, site))
            else:
                dst = os.path.join(dest, sys.prefix.lstrip("/"), os.path.relpath(src, venv))
            if not os.path.lexists(src):
                if f.parent.name.endswith(".dist-info"):
                    fail("%s: RECORD lists %s, which is missing" % (want, f))
                continue  # not compiled, or removed by a later step
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if shared_site and f.name == "RECORD" and f.parent.name.endswith(".dist-info"):
                with open(src, "rb") as r:
                    lines = r.read().splitlines(keepends=True)
                kept = [line for line in lines if (next(csv.reader([line.decode("utf-8")]), None) or [""])[0] not in dropped]
                with open(dst, "wb") as w:
                    w.writelines(kept)
            else:
                shutil.copyfile(src, dst, follow_symlinks=False)
            if not os.path.islink(dst):
                os.chmod(dst, stat.S_IMODE(os.lstat(src).st_mode))


def installed(venv):
    """The site directories of venv (for this Python) and the
    distributions installed there, by normalised name."""
    sites = []
    for key in ("purelib", "platlib"):
        rel = os.path.relpath(sysconfig.get_path(key), sys.prefix)
        site = os.path.join(venv, rel)
        if site not in sites:
            sites.append(site)
    found = {}
    for d in importlib.metadata.distributions(path=sites):
        name = d.metadata["Name"]
        if name and norm(name) not in found:
            found[norm(name)] = d
    return sites, found


def prune(venv, plan_file):
    """Remove from venv each distribution plan_file lists at a version
    other than the one installed there, file by file from its RECORD, then
    the directories that leaves empty, as pip uninstall does; only paths
    inside venv are touched."""
    venv = os.path.normpath(venv)
    with open(plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    sites, found = installed(venv)
    for p in plan:
        d = found.get(norm(p["name"]))
        if d is None or d.version == p["version"]:
            continue
        version, dirs = d.version, set()
        for f in d.files or []:
            src = os.path.normpath(str(d.locate_file(f)))
            if not inside(src, venv):
                fail("%s %s: %s lies outside %s" % (p["name"], version, f, venv))
            if os.path.lexists(src) and not os.path.isdir(src):
                os.remove(src)
            dirs.add(os.path.dirname(src))
        for path in sorted(dirs, key=len, reverse=True):
            while path != venv and path not in sites and inside(path, venv):
                try:
                    os.rmdir(path)
                except OSError:
                    break
                path = os.path.dirname(path)
        print("plan.py: removed %s %s from %s (the framework steps installed %s)" % (p["name"], version, venv, p["version"]))


def pycs(dirs):
    """Recompile each stale timestamp .pyc under dirs (this Python's
    standard library directories when none are given), one process per
    CPU; print how many."""
    import concurrent.futures

    roots = sorted({os.path.realpath(d) for d in dirs or [sysconfig.get_path(k) for k in ("stdlib", "platstdlib")]})
    todo = []
    for root in roots:
        for dirpath, _, files in os.walk(root):
            if os.path.basename(dirpath) == "__pycache__":
                todo += [c for c in (os.path.join(dirpath, f) for f in sorted(files)) if stale(c)]
    if len(todo) > 16 and (os.cpu_count() or 1) > 1:
        with concurrent.futures.ProcessPoolExecutor() as pool:
            list(pool.map(recompile, todo, chunksize=16))
    else:
        for cfile in todo:
            recompile(cfile)
    print("plan.py: recompiled %d stale .pyc files under %s (Python %s)" % (len(todo), ", ".join(roots), sysconfig.get_python_version()))


def recompile(cfile):
    """Write cfile again from its source, as a timestamp .pyc of the
    source's time now, at the optimization level its name gives."""
    import py_compile

    opt = re.search(r"\.opt-([12])\.pyc$", cfile)
    py_compile.compile(importlib.util.source_from_cache(cfile), cfile=cfile, optimize=int(opt.group(1)) if opt else 0,
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)


def stale(cfile):
    """Whether cfile is a timestamp .pyc of this Python whose source exists
    and no longer has the mtime and size it records."""
    try:
        src = importlib.util.source_from_cache(cfile)
        with open(cfile, "rb") as f:
            head = f.read(16)
        st = os.stat(src)
    except (OSError, ValueError):
        return False
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER or int.from_bytes(head[4:8], "little") != 0:
        return False  # another Python's, or checked by hash
    mtime, size = int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")
    return mtime != int(st.st_mtime) & 0xFFFFFFFF or size != st.st_size & 0xFFFFFFFF


# PYTHON_PACKAGE names the Debian packages that belong to one Python
# version: python3.11, python3.11-minimal, python3.11-venv, python3.11-dev,
# libpython3.11-stdlib, libpython3.11-dev, python3-pip-whl.
PYTHON_PACKAGE = re.compile(r"^(lib)?python3")


def ossplit(t0, own_out, shared_out, root="/"):
    """Split the paths on stdin (NUL-separated, under root) into the files
    of packages the step installed that are not Python's (shared_out: the
    compiler, the C library's headers, what a Python pulls in that any
    Python could use) and the rest (own_out: Python's packages, dpkg's
    database, files no package owns); print how many of each."""
    info = os.path.join(root, "var/lib/dpkg/info")
    shared = set()
    try:
        names = sorted(os.listdir(info))
    except OSError:
        names = []  # not a dpkg system: everything is the step's own
    for n in names:
        if not n.endswith(".list") or PYTHON_PACKAGE.match(n):
            continue
        lst = os.path.join(info, n)
        if os.stat(lst).st_ctime <= t0:
            continue  # the base's, not installed by this step
        with open(lst, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                p = line.rstrip("\n")
                if p.startswith("/") and p != "/":
                    shared.add(canonical(root, p))
    data = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    own, sh = [], []
    for p in (x for x in data.split("\0") if x):
        rel = "/" + os.path.relpath(p, root)
        (sh if canonical(root, rel) in shared else own).append(p)
    for out, paths in ((own_out, own), (shared_out, sh)):
        with open(out, "wb") as f:
            f.write("".join(x + "\0" for x in paths).encode("utf-8", "surrogateescape"))
    print("plan.py: %d paths the OS packages changed: %d of packages any Python shares, %d of this Python's or unowned" % (len(own) + len(sh), len(sh), len(own)))


def canonical(root, rel):
    """rel (a path inside root, as dpkg lists it) with its directory's
    links resolved inside root: dpkg lists /lib/x86_64-linux-gnu/libc.so.6
    where a merged /usr has /usr/lib/x86_64-linux-gnu/libc.so.6."""
    d, base = os.path.split(rel)
    real = os.path.realpath(os.path.join(root, d.lstrip("/")))
    return "/" + os.path.relpath(os.path.join(real, base), os.path.realpath(root))


def main(argv):
    if len(argv) == 4 and argv[1] == "record":
        record(int(argv[2]), argv[3])
    elif len(argv) == 4 and argv[1] == "finish":
        finish(argv[2], argv[3])
    elif len(argv) >= 5 and argv[1] == "copy" and argv[2] == "--shared":
        copy(argv[3], argv[4], argv[5:], True)
    elif len(argv) >= 4 and argv[1] == "copy":
        copy(argv[2], argv[3], argv[4:], False)
    elif len(argv) == 4 and argv[1] == "link":
        link(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "prune":
        prune(argv[2], argv[3])
    elif len(argv) >= 2 and argv[1] == "pycs":
        pycs(argv[2:])
    elif len(argv) in (5, 6) and argv[1] == "ossplit":
        ossplit(float(argv[2]), argv[3], argv[4], *argv[5:])
    else:
        print("usage: plan.py record STEP STATE | finish STATE OUT | copy [--shared] VENV DEST NAME==VERSION... | link SITE PLAN | prune VENV PLAN | pycs [DIR...] | ossplit T0 OWN SHARED [ROOT]", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)

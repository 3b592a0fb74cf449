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
                                        SITE without .pyc files

The state file maps each distribution to the step that installed its
current version; a later step that replaces a version takes it over, one
that removes a distribution drops it, so the plan lists exactly what the
sequence of pip installs left in the environment.
"""

import csv
import importlib.metadata
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
    elsewhere): its files are the same under any Python version."""
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
    return True


def finish(state, out):
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
        plan.append({"name": d.metadata["Name"], "version": d.version, "step": k["step"], "size": size, "shared": shared(d)})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=1)


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
    relative to site-packages), without .pyc files (they depend on the
    Python version), and its RECORD loses their rows."""
    venv = os.path.normpath(venv)
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
    for want in wanted:
        name, sep, version = want.partition("==")
        d = found.get(norm(name))
        if not sep or d is None:
            fail("%s is not installed in %s (the plan and the framework steps disagree)" % (want, venv))
        if d.version != version:
            fail("%s: %s has version %s (the plan and the framework steps disagree)" % (want, venv, d.version))
        if d.files is None:
            fail("%s: no RECORD file in %s" % (want, venv))
        for f in d.files:
            src = os.path.normpath(str(d.locate_file(f)))
            if os.path.commonpath([src, venv]) != venv:
                fail("%s: %s lies outside %s" % (want, f, venv))
            pyc = src.endswith(".pyc")
            if shared_site:
                site = next((s for s in sites if os.path.commonpath([src, s]) == s), None)
                if site is None:
                    fail("%s: %s lies outside the site directory; it cannot be shared" % (want, f))
                if pyc:
                    continue
                dst = os.path.join(dest, os.path.relpath(src, site))
            else:
                dst = os.path.join(dest, sys.prefix.lstrip("/"), os.path.relpath(src, venv))
            if not os.path.lexists(src):
                if pyc:  # listed but not compiled: nothing to copy
                    continue
                fail("%s: RECORD lists %s, which is missing" % (want, f))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if shared_site and f.name == "RECORD" and f.parent.name.endswith(".dist-info"):
                with open(src, "rb") as r:
                    lines = r.read().splitlines(keepends=True)
                kept = [line for line in lines if not next(csv.reader([line.decode("utf-8")]), [""])[0].endswith(".pyc")]
                with open(dst, "wb") as w:
                    w.writelines(kept)
            else:
                shutil.copyfile(src, dst, follow_symlinks=False)
            if not os.path.islink(dst):
                os.chmod(dst, stat.S_IMODE(os.lstat(src).st_mode))


def main(argv):
    if len(argv) == 4 and argv[1] == "record":
        record(int(argv[2]), argv[3])
    elif len(argv) == 4 and argv[1] == "finish":
        finish(argv[2], argv[3])
    elif len(argv) >= 5 and argv[1] == "copy" and argv[2] == "--shared":
        copy(argv[3], argv[4], argv[5:], True)
    elif len(argv) >= 4 and argv[1] == "copy":
        copy(argv[2], argv[3], argv[4:], False)
    else:
        print("usage: plan.py record STEP STATE | finish STATE OUT | copy [--shared] VENV DEST NAME==VERSION...", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)

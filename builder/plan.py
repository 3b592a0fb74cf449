"""Record, inside the image being built, which pip step installed each
distribution, and list them with their installed size and whether they
can live in the shared, Python-version-independent site directory.

Usage:
  python -B plan.py record STEP STATE   after pip step STEP (0: the new venv)
  python -B plan.py finish STATE OUT    write the plan (JSON) to OUT

The state file maps each distribution to the step that installed its
current version; a later step that replaces a version takes it over, one
that removes a distribution drops it, so the plan lists exactly what the
sequence of pip installs left in the environment.
"""

import importlib.metadata
import json
import os
import re
import sys


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


def main(argv):
    if len(argv) == 4 and argv[1] == "record":
        record(int(argv[2]), argv[3])
    elif len(argv) == 4 and argv[1] == "finish":
        finish(argv[2], argv[3])
    else:
        print("usage: plan.py record STEP STATE | finish STATE OUT", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)

"""Prove, inside the image being built, that it works the way its user
will first use it: every ELF file of the Python environment and of CUDA's
library directories finds each library it needs, and each framework
imports.

Usage: python -B proof.py HOSTLIBS VENV [--dlopen=LIB:NAME,...] [--xla=LIB] [MODULE...]

HOSTLIBS is the JSON list of libraries the host provides (gpuimg's
matrix.HostLibsJSON: the NVIDIA driver's libraries, by name, and optional
plugins), the same list `gpuimg validate` uses. VENV is the virtual
environment (every ELF file under it is checked); the directories under
/usr/local/cuda* named lib, lib64 or compat (not the link stubs, not
Nsight's) are checked too. Each MODULE is imported, in a fresh
interpreter, without a GPU, while the closure is checked (one process per
module, started first).

The search for a needed library is ld.so's (glibc elf/dl-load.c): DT_RPATH
of the object and of the objects that load it, unless the object has
DT_RUNPATH; LD_LIBRARY_PATH (this step's environment, which is the
image's); DT_RUNPATH; the directories /etc/ld.so.conf names (ldconfig's
cache); the default directories. $ORIGIN is the object's directory, $LIB
and $PLATFORM take the machine's values. A name missing on the object's
own path counts as found when an object that loads it (transitively)
found it, or finds it on its RPATH: ld.so loads those first. Only the ELF
header, the program headers, the dynamic segment and the string table are
read.

--dlopen=LIB:NAME,... checks that each NAME resolves as dlopen(NAME)
called from LIB would find it (LIB is a path relative to the venv's
site directories, tensorflow/libtensorflow_framework.so.2): LIB's
DT_RPATH unless it has DT_RUNPATH, LD_LIBRARY_PATH, its DT_RUNPATH, the
directories /etc/ld.so.conf names, the default directories. TensorFlow
opens its CUDA libraries that way (tsl's dso_loader), not through
DT_NEEDED, so the closure check alone cannot see them missing.
--xla=LIB checks that XLA finds ptxas and libdevice.10.bc from LIB (a
path like --dlopen's): in each CUDA root it tries (XLA_FLAGS'
--xla_gpu_cuda_data_dir, /usr/local/cuda, and LIB's directory's
../nvidia/cuda_nvcc and ../../nvidia/cuda_nvcc, as tsl's
CandidateCudaRoots), ptxas in bin/ (PATH first) and
nvvm/libdevice/libdevice.10.bc.

Each problem is one line naming the file and the library; the exit status
is non-zero when there is one, which fails the build before anything is
tagged.
"""

import glob
import json
import os
import re
import struct
import subprocess
import sys
import time

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 15, 29
MACHINES = {62: ("x86_64-linux-gnu", "x86_64"), 183: ("aarch64-linux-gnu", "aarch64"), 21: ("powerpc64le-linux-gnu", "ppc64le")}
CUDA_SCOPE = re.compile(r"^(?:[^/]+/)*(?:lib|lib64|compat)/[^/]+$")
MAX_STRTAB = 1 << 30
MAX_STRING = 64 << 10  # the longest name or search path read


class Obj:
    __slots__ = ("path", "machine", "needed", "rpath", "runpath", "has_runpath")

    def __init__(self, path, machine):
        self.path, self.machine = path, machine
        self.needed, self.rpath, self.runpath, self.has_runpath = [], [], [], False


class Unreadable(Exception):
    pass


def read_elf(path):
    """The dynamic section of the ELF executable or shared object at path,
    None for any other file (a static executable included)."""
    with open(path, "rb") as f:
        h = f.read(64)
        if len(h) < 52 or h[:4] != b"\x7fELF":
            return None
        cls, data = h[4], h[5]
        if cls not in (1, 2) or data not in (1, 2):
            raise Unreadable("unknown ELF class or byte order")
        e = "<" if data == 1 else ">"
        e_type, machine = struct.unpack_from(e + "HH", h, 16)
        if e_type not in (2, 3):  # ET_EXEC, ET_DYN
            return None
        if cls == 2:
            (phoff,) = struct.unpack_from(e + "Q", h, 32)
            phent, phnum = struct.unpack_from(e + "HH", h, 54)
            ph, word = e + "IIQQQQ", e + "qQ"
        else:
            (phoff,) = struct.unpack_from(e + "I", h, 28)
            phent, phnum = struct.unpack_from(e + "HH", h, 42)
            ph, word = e + "IIIII", e + "iI"
        if phnum == 0 or phent < struct.calcsize(ph):
            return None
        f.seek(phoff)
        table = f.read(phent * phnum)
        if len(table) < phent * phnum:
            raise Unreadable("truncated program headers")
        loads, dyn = [], None
        for i in range(phnum):
            if cls == 2:
                typ, _, off, vaddr, _, filesz = struct.unpack_from(ph, table, i * phent)
            else:
                typ, off, vaddr, _, filesz = struct.unpack_from(ph, table, i * phent)
            if typ == PT_LOAD:
                loads.append((vaddr, off, filesz))
            elif typ == PT_DYNAMIC:
                dyn = (off, filesz)
        if dyn is None:
            return None  # static
        f.seek(dyn[0])
        raw = f.read(min(dyn[1], 1 << 20))
        size = struct.calcsize(word)
        entries = []
        for i in range(0, len(raw) - size + 1, size):
            tag, val = struct.unpack_from(word, raw, i)
            if tag == DT_NULL:
                break
            entries.append((tag, val))
        tags = dict(entries)
        if DT_STRTAB not in tags:
            if any(t in (DT_NEEDED, DT_RPATH, DT_RUNPATH) for t, _ in entries):
                raise Unreadable("no DT_STRTAB")
            return Obj(path, machine)
        addr, strsz = tags[DT_STRTAB], min(tags.get(DT_STRSZ, MAX_STRTAB), MAX_STRTAB)
        stroff = next((off + addr - vaddr for vaddr, off, filesz in loads if vaddr <= addr < vaddr + filesz), None)
        if stroff is None:
            raise Unreadable("DT_STRTAB outside the loaded segments")

        def string(off):
            """The string at off in the string table, read by itself (a
            C++ library's table is many MB of symbol names)."""
            if off >= strsz:
                raise Unreadable("string %d outside the string table" % off)
            f.seek(stroff + off)
            b = f.read(min(MAX_STRING, strsz - off))
            end = b.find(b"\0")
            if end < 0:
                raise Unreadable("string %d is not terminated" % off)
            return b[:end].decode("utf-8", "surrogateescape")

        o = Obj(path, machine)
        for tag, val in entries:
            if tag == DT_NEEDED:
                o.needed.append(string(val))
            elif tag == DT_RPATH:
                o.rpath += string(val).split(":")
            elif tag == DT_RUNPATH:
                o.runpath += string(val).split(":")
                o.has_runpath = True
        return o


def candidates(venv):
    """The files to check: every regular file under venv, and under each
    /usr/local/cuda* directory those in a lib, lib64 or compat directory,
    not a link stub nor Nsight's; each real path once, sorted. Symbolic
    links are left out (what they point to is checked where it lies)."""
    roots = [(os.path.realpath(venv), None)]
    for d in sorted(glob.glob("/usr/local/cuda*")):
        if os.path.isdir(d):
            roots.append((os.path.realpath(d), CUDA_SCOPE))
    seen = set()
    for root, scope in roots:
        for dirpath, _, files in os.walk(root):
            for name in files:
                p = os.path.join(dirpath, name)
                rel = os.path.relpath(p, root)
                if p in seen or scope is not None and (not scope.match(rel) or "/stubs/" in "/" + rel or "/nsight" in "/" + rel):
                    continue
                seen.add(p)
    return sorted(seen)


def scan(paths):
    """The ELF objects among paths that have a dynamic section, and the
    (path, reason) of those that could not be read."""
    objs, bad = [], []
    for p in paths:
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not os.path.isfile(p) or os.path.islink(p) or st.st_size < 64:
            continue
        if ".so" not in os.path.basename(p) and not st.st_mode & 0o111:
            continue
        try:
            o = read_elf(p)
        except (OSError, ValueError, struct.error, Unreadable) as e:
            bad.append((p, str(e)))
            continue
        if o is not None:
            objs.append(o)
    return objs, bad


def ld_conf_dirs(conf="/etc/ld.so.conf"):
    """The directories ldconfig caches: /etc/ld.so.conf's lines, following
    its include lines, or without it every /etc/ld.so.conf.d/*.conf."""
    dirs, seen = [], set()

    def read(p, depth):
        if p in seen or depth > 8:
            return
        seen.add(p)
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return
        for line in lines:
            line = line.split("#", 1)[0]
            words = line.split()
            if not words or words[0] == "hwcap":
                continue
            if words[0] == "include":
                for pat in words[1:]:
                    if not pat.startswith("/"):
                        pat = os.path.join(os.path.dirname(p), pat)
                    for m in sorted(glob.glob(pat)):
                        read(m, depth + 1)
                continue
            for d in re.split(r"[:, \t]+", line):
                d = d.split("=", 1)[0]
                if d.startswith("/"):
                    dirs.append(d)

    if os.path.exists(conf):
        read(conf, 0)
    else:
        for m in sorted(glob.glob(os.path.join(os.path.dirname(conf), "ld.so.conf.d", "*.conf"))):
            read(m, 0)
    return dirs


def default_dirs(machine):
    t = MACHINES.get(machine, MACHINES[62])[0]
    return ["/lib/" + t, "/usr/lib/" + t, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


def expand(paths, obj):
    """An RPATH or RUNPATH list of obj with $ORIGIN, $LIB and $PLATFORM
    expanded; empty and relative entries (the process's working
    directory) are left out."""
    triplet, platform = MACHINES.get(obj.machine, MACHINES[62])
    origin = os.path.dirname(obj.path)
    out = []
    for d in paths:
        if not d:
            continue
        for k, v in (("${ORIGIN}", origin), ("$ORIGIN", origin), ("${PLATFORM}", platform), ("$PLATFORM", platform)):
            d = d.replace(k, v)
        variants = [d]
        if "$LIB" in d or "${LIB}" in d:
            variants = [d.replace("${LIB}", lib).replace("$LIB", lib) for lib in ("lib64", "lib/" + triplet)]
        out += [v for v in variants if v.startswith("/") and "$" not in v]
    return out


class Closure:
    def __init__(self, host, ld_path, conf):
        self.driver = set(host.get("driver_libs", []))
        self.prefix = host.get("driver_prefix", "")
        self.optional = host.get("optional", [])
        self.ld_path = [d for d in re.split(r"[:;]", ld_path or "") if d.startswith("/") and "$" not in d]
        self.conf = conf
        self.cache = {}

    def host_driver(self, name):
        return name in self.driver or bool(self.prefix) and name.startswith(self.prefix) and ".so" in name

    def host_driver_file(self, path):
        """Whether the file is a driver library (matrix.IsHostDriverFile):
        its own needs are the host driver's."""
        base = os.path.basename(path)
        stem, sep, _ = base.partition(".so")
        return bool(sep) and (self.host_driver(base) or any(l.startswith(stem + ".so") for l in self.driver))

    def optional_plugin(self, path, missing):
        for o in self.optional:
            if os.path.basename(path).startswith(o["prefix"]) and all(n in o["host_libs"] for n in missing):
                return o
        return None

    def dirs(self, obj, loaders):
        ds = []
        if not obj.has_runpath:
            ds += expand(obj.rpath, obj)
            for l in loaders:
                if not l.has_runpath:
                    ds += expand(l.rpath, l)
        return ds + self.ld_path + expand(obj.runpath, obj) + self.conf + default_dirs(obj.machine)

    def find(self, name, dirs):
        """The real path of the file ld.so would take for name, or None;
        True for a relative path name (relative to the working
        directory: not checkable)."""
        if "/" in name:
            return self.exists(name) if name.startswith("/") else True
        for d in dirs:
            r = self.exists(d + "/" + name)
            if r:
                return r
        return None

    def exists(self, p):
        r = self.cache.get(p)
        if r is None:
            r = os.path.realpath(p) if os.path.isfile(p) else ""
            self.cache[p] = r
        return r or None

    def resolve(self, objs):
        """(found, driver, missing): missing is [(path, [name...])]."""
        by_path = {os.path.realpath(o.path): o for o in objs}
        loaded_by, miss, found = {}, {}, {}
        n_found = n_driver = 0
        for o in objs:
            dirs = self.dirs(o, [])
            found[o.path] = set()
            for n in o.needed:
                if self.host_driver(n):
                    n_driver += 1
                    continue
                r = self.find(n, dirs)
                if not r:
                    miss.setdefault(o.path, []).append(n)
                    continue
                n_found += 1
                found[o.path].add(n)
                dep = by_path.get(r) if isinstance(r, str) else None
                if dep is not None and dep is not o:
                    loaded_by.setdefault(dep.path, []).append(o)
        missing = []
        for o in objs:
            names = miss.get(o.path)
            if not names:
                continue
            anc = ancestors(o, loaded_by)
            dirs = self.dirs(o, anc)
            still = []
            for n in names:
                loaded = any(n in found[a.path] for a in anc)
                if loaded or self.find(n, dirs) and not o.has_runpath:
                    n_found += 1
                else:
                    still.append(n)
            if still:
                missing.append((o.path, still))
        return n_found, n_driver, missing


def ancestors(o, loaded_by):
    """The objects that load o, and theirs, nearest first."""
    seen, out, queue = {o.path}, [], [o]
    while queue:
        cur = queue.pop(0)
        for l in loaded_by.get(cur.path, []):
            if l.path not in seen:
                seen.add(l.path)
                out.append(l)
                queue.append(l)
    return out


def say(msg):
    print("gpuimg check: " + msg, flush=True)


def closure(host, venv):
    """Check the closure; return the number of problems."""
    start = time.monotonic()
    objs, bad = scan(candidates(venv))
    c = Closure(host, os.environ.get("LD_LIBRARY_PATH", ""), ld_conf_dirs())
    objs = [o for o in objs if not c.host_driver_file(o.path)]
    n_found, n_driver, missing = c.resolve(objs)
    problems = 0
    for p, names in missing:
        o = c.optional_plugin(p, names)
        if o is not None:
            say("not counted: %s needs %s (%s)" % (p, ", ".join(names), o["what"]))
            continue
        for n in names:
            say("%s needs %s, which is not in the image (searched: its RPATH/RUNPATH, LD_LIBRARY_PATH, /etc/ld.so.conf's directories, the default directories)" % (p, n))
            problems += 1
    for p, why in bad:
        say("warning: %s looks like an ELF file but cannot be read (%s); its libraries are not checked" % (p, why))
    if problems == 0:
        say("%d ELF objects in %s and CUDA's library directories find all %d needed libraries (%d driver libraries left to the host; %.2f s)" % (len(objs), venv, n_found, n_driver, time.monotonic() - start))
    return problems


def site_file(venv, rel):
    """The path of rel in one of venv's site directories, or None."""
    for d in sorted(glob.glob(os.path.join(venv, "lib", "*", "site-packages"))):
        p = os.path.join(d, rel)
        if os.path.isfile(p):
            return p
    return None


def dlopens(host, venv, spec):
    """Check that each name of spec (LIB:NAME,...) resolves as a dlopen
    from LIB would; return the number of problems."""
    rel, _, names = spec.partition(":")
    lib = site_file(venv, rel)
    if lib is None:
        say("%s is not in %s's site directories: the libraries it opens at run time (%s) cannot be checked" % (rel, venv, names))
        return 1
    try:
        o = read_elf(lib)
    except (OSError, ValueError, struct.error, Unreadable) as e:
        o, why = None, str(e)
    else:
        why = "not a dynamic ELF object"
    if o is None:
        say("%s cannot be read (%s): the libraries it opens at run time (%s) cannot be checked" % (lib, why, names))
        return 1
    c = Closure(host, os.environ.get("LD_LIBRARY_PATH", ""), ld_conf_dirs())
    dirs = c.dirs(o, [])
    problems = 0
    for n in [n for n in names.split(",") if n]:
        if not c.find(n, dirs):
            say("%s opens %s at run time (dlopen), which it cannot find (searched: its RPATH/RUNPATH, LD_LIBRARY_PATH, /etc/ld.so.conf's directories, the default directories): the framework would see no GPU" % (lib, n))
            problems += 1
    if problems == 0:
        say("%s finds the %d libraries it opens at run time" % (lib, len([n for n in names.split(",") if n])))
    return problems


def xla_flag_dir():
    for f in os.environ.get("XLA_FLAGS", "").split():
        if f.startswith("--xla_gpu_cuda_data_dir="):
            return f.partition("=")[2]
    return None


def xla_toolkit(venv, rel):
    """Check that XLA finds ptxas and libdevice.10.bc from rel's library;
    return the number of problems."""
    lib = site_file(venv, rel)
    if lib is None:
        say("%s is not in %s's site directories: where XLA finds ptxas and libdevice cannot be checked" % (rel, venv))
        return 1
    roots = [r for r in [xla_flag_dir(), "/usr/local/cuda"] if r]
    for d in (os.path.dirname(lib), os.path.join(os.path.dirname(lib), "python")):
        roots += [os.path.normpath(os.path.join(d, "..", "nvidia", "cuda_nvcc")), os.path.normpath(os.path.join(d, "..", "..", "nvidia", "cuda_nvcc"))]
    problems = 0
    ptxas = next((p for p in [os.path.join(d, "ptxas") for d in os.environ.get("PATH", "").split(":") if d] + [os.path.join(r, "bin", "ptxas") for r in roots] if os.path.isfile(p) and os.access(p, os.X_OK)), None)
    libdevice = next((p for p in [os.path.join(r, "nvvm", "libdevice", "libdevice.10.bc") for r in roots] if os.path.isfile(p)), None)
    if ptxas is None:
        say("XLA finds no ptxas for %s (searched: PATH, bin/ of %s): it would compile no GPU kernel (Keras optimizers, jit_compile)" % (lib, ", ".join(roots)))
        problems += 1
    if libdevice is None:
        say("XLA finds no nvvm/libdevice/libdevice.10.bc for %s (searched: %s): it would compile no GPU kernel (Keras optimizers, jit_compile)" % (lib, ", ".join(roots)))
        problems += 1
    if problems == 0:
        say("XLA finds ptxas (%s) and libdevice (%s)" % (ptxas, libdevice))
    return problems


def start_imports(modules):
    """Start importing each module in a fresh interpreter, all at once,
    so that the imports run while the closure is checked; finish_imports
    reads the results."""
    started = []
    for m in modules:
        p = subprocess.Popen([sys.executable, "-B", "-c", "import " + m], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        started.append((m, time.monotonic(), p))
    return started


def finish_imports(started):
    """Wait for the imports start_imports began; return the number that
    failed."""
    failed = 0
    for m, start, p in started:
        out, _ = p.communicate()
        took = time.monotonic() - start
        if p.returncode == 0:
            say("import %s ok (%.2f s)" % (m, took))
            continue
        lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
        say("import %s failed (exit %d): %s" % (m, p.returncode, lines[-1] if lines else "no output"))
        for line in lines[-20:-1]:
            print("    " + line, file=sys.stderr)
        failed += 1
    return failed


def main(argv):
    opts = [a for a in argv[3:] if a.startswith("--")]
    modules = [a for a in argv[3:] if not a.startswith("--")]
    if len(argv) < 3 or not re.match(r"^[A-Za-z0-9_.]*$", "".join(modules)) or any(not re.match(r"^--(dlopen=[^:]+:[A-Za-z0-9_.,+-]+|xla=.+)$", o) for o in opts):
        print("usage: proof.py HOSTLIBS VENV [--dlopen=LIB:NAME,...] [--xla=LIB] [MODULE...]", file=sys.stderr)
        sys.exit(2)
    with open(argv[1], encoding="utf-8") as f:
        host = json.load(f)
    started = start_imports(modules)
    problems = closure(host, argv[2])
    for o in opts:
        key, _, val = o[2:].partition("=")
        problems += dlopens(host, argv[2], val) if key == "dlopen" else xla_toolkit(argv[2], val)
    problems += finish_imports(started)
    if problems:
        say("%d problem(s): the image would not work as built; nothing is tagged" % problems)
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)

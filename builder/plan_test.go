package builder

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// planPyIn writes plan.py into a new temporary directory and returns
// python3's path, the directory and the script; without python3 the test
// is skipped.
func planPyIn(t *testing.T) (py, dir, script string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	dir = t.TempDir()
	script = filepath.Join(dir, "plan.py")
	must(t, os.WriteFile(script, planPy, 0o644))
	return py, dir, script
}

// writeWheel writes a wheel of dist==version (tag py3-none-any) holding
// files (path → content; a path ending in "*" is written executable,
// without the "*") and an entry_points.txt when scripts is set.
func writeWheel(t *testing.T, dir, dist, version string, files map[string]string, scripts string) string {
	t.Helper()
	return writeTaggedWheel(t, dir, dist, version, "py3-none-any", files, scripts)
}

// writeTaggedWheel is writeWheel with the wheel tag tag.
func writeTaggedWheel(t *testing.T, dir, dist, version, tag string, files map[string]string, scripts string) string {
	t.Helper()
	info := strings.ReplaceAll(dist, "-", "_") + "-" + version + ".dist-info/"
	p := filepath.Join(dir, strings.ReplaceAll(dist, "-", "_")+"-"+version+"-"+tag+".whl")
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	z := zip.NewWriter(f)
	all := map[string]string{
		info + "METADATA": fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", dist, version),
		info + "WHEEL":    "Wheel-Version: 1.0\nGenerator: gpuimg-test\nRoot-Is-Purelib: " + strconv.FormatBool(strings.HasPrefix(tag, "py3-none-any")) + "\nTag: " + tag + "\n",
	}
	if scripts != "" {
		all[info+"entry_points.txt"] = "[console_scripts]\n" + scripts + "\n"
	}
	maps.Copy(all, files)
	var record strings.Builder
	for _, name := range slices.Sorted(maps.Keys(all)) {
		mode := fs.FileMode(0o644)
		path, exec := strings.CutSuffix(name, "*")
		if exec {
			mode = 0o755
		}
		h := &zip.FileHeader{Name: path, Method: zip.Deflate}
		h.SetMode(mode)
		w, err := z.CreateHeader(h)
		must(t, err)
		_, err = w.Write([]byte(all[name]))
		must(t, err)
		sum := sha256.Sum256([]byte(all[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", path, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[name]))
	}
	w, err := z.Create(info + "RECORD")
	must(t, err)
	_, err = w.Write([]byte(record.String() + info + "RECORD,,\n"))
	must(t, err)
	must(t, z.Close())
	return p
}

// site returns venv's site-packages directory.
func site(t *testing.T, venv string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if err != nil || len(m) != 1 {
		t.Fatalf("site-packages of %s: %v %v", venv, m, err)
	}
	return m[0]
}

// tree lists the files under dir with their modes and contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if st.Mode()&fs.ModeSymlink != 0 {
			dest, err := os.Readlink(p)
			out[rel] = "-> " + dest
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%v %s", st.Mode(), b)
		return nil
	}))
	return out
}

// TestPlanPyCopy installs two wheels into a real venv with its pip, as a
// framework step does, and checks what plan.py copy makes of them: a
// shared distribution's files are exactly what `pip install --no-deps
// --no-compile --target` gives (no .pyc files, none in RECORD), a
// distribution with a script goes to its installed place under a root,
// .pyc files included, and is refused as shared; a version the venv does
// not hold is an error.
func TestPlanPyCopy(t *testing.T) {
	py, dir, script := planPyIn(t)
	venv := filepath.Join(dir, "venv")
	runPy := func(t *testing.T, name string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := runPy(t, py, "-m", "venv", venv); err != nil {
		t.Skipf("python3 -m venv: %v\n%s", err, out)
	}
	vpy := filepath.Join(venv, "bin", "python")
	nv := writeWheel(t, dir, "nvidia-fake-cu12", "1.0", map[string]string{
		"nvidia/__init__.py":            "",
		"nvidia/fake/__init__.py":       "X = 1\n",
		"nvidia/fake/lib/libfake.so.1*": "\x7fELF fake library",
		"nvidia/fake/include/fake.h":    "int fake(void);\n",
		// A .pyc the wheel itself ships (RECORD has its hash) is one of
		// its files: only those pip compiles are left out of a shared layer.
		"nvidia/fake/__pycache__/shipped.cpython-39.pyc": "shipped bytecode",
	}, "")
	pth := writeWheel(t, dir, "gpuimg-pth", "1.0", map[string]string{
		"gpuimg_pth/__init__.py": "",
		"gpuimg-pth-hook.pth":    "import os\n",
	}, "")
	tool := writeWheel(t, dir, "gpuimg-tool", "2.0", map[string]string{"gpuimg_tool/__init__.py": "def main():\n    return 0\n"}, "gpuimg-tool = gpuimg_tool:main")
	if out, err := runPy(t, vpy, "-m", "pip", "install", "--no-index", "--no-deps", nv, tool, pth); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}

	shared := filepath.Join(dir, "shared")
	if out, err := runPy(t, vpy, "-B", script, "copy", "--shared", venv, shared, "nvidia-fake-cu12==1.0"); err != nil {
		t.Fatalf("copy --shared: %v\n%s", err, out)
	}
	target := filepath.Join(dir, "target")
	if out, err := runPy(t, vpy, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--target", target, nv); err != nil {
		t.Fatalf("pip install --target: %v\n%s", err, out)
	}
	got, want := tree(t, shared), tree(t, target)
	if len(got) == 0 || len(got) != len(want) {
		t.Errorf("copy --shared gave %d files, pip install --target %d:\n%v\n%v", len(got), len(want), slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: copy --shared gave %q, pip install --no-compile --target %q", p, got[p], w)
		}
	}
	if !strings.HasPrefix(got["nvidia/fake/lib/libfake.so.1"], "-rwxr-xr-x ") {
		t.Errorf("libfake.so.1 lost its mode: %q", got["nvidia/fake/lib/libfake.so.1"])
	}

	root := filepath.Join(dir, "root")
	if out, err := runPy(t, vpy, "-B", script, "copy", venv, root, "gpuimg-tool==2.0"); err != nil {
		t.Fatalf("copy: %v\n%s", err, out)
	}
	copied := tree(t, filepath.Join(root, venv))
	installed := tree(t, venv)
	pyc := 0
	for p, c := range copied {
		if installed[p] != c {
			t.Errorf("%s: copied %q, installed %q", p, c, installed[p])
		}
		if strings.HasSuffix(p, ".pyc") {
			pyc++
		}
	}
	if _, ok := copied["bin/gpuimg-tool"]; !ok || pyc == 0 {
		t.Errorf("copy of gpuimg-tool: %d .pyc files, bin/gpuimg-tool copied %v: %v", pyc, ok, slices.Sorted(maps.Keys(copied)))
	}

	// finish: a wheel with a .pth file at its top is not shared (site
	// reads .pth files only in the venv's own site directory).
	state, planOut := filepath.Join(dir, "state.json"), filepath.Join(dir, "plan.json")
	must(t, os.WriteFile(state, []byte(`{"nvidia-fake-cu12": {"version": "1.0", "step": 1}, "gpuimg-tool": {"version": "2.0", "step": 1}, "gpuimg-pth": {"version": "1.0", "step": 1}}`), 0o644))
	if out, err := runPy(t, vpy, "-B", script, "finish", state, planOut); err != nil {
		t.Fatalf("finish: %v\n%s", err, out)
	}
	var plan []PlannedDist
	b, err := os.ReadFile(planOut)
	must(t, err)
	must(t, json.Unmarshal(b, &plan))
	isShared := map[string]bool{}
	for _, p := range plan {
		isShared[p.Name] = p.Shared
	}
	if want := map[string]bool{"nvidia-fake-cu12": true, "gpuimg-tool": false, "gpuimg-pth": false}; !maps.Equal(isShared, want) {
		t.Errorf("finish: shared %v, want %v", isShared, want)
	}

	// A file a later step removed (pip uninstalling an older distribution
	// that shipped the same path) is skipped; a missing file of the
	// .dist-info directory is not (below).
	must(t, os.Remove(filepath.Join(site(t, venv), "nvidia", "__init__.py")))
	if out, err := runPy(t, vpy, "-B", script, "copy", "--shared", venv, filepath.Join(dir, "shared2"), "nvidia-fake-cu12==1.0"); err != nil {
		t.Errorf("copy --shared with nvidia/__init__.py removed: %v\n%s", err, out)
	}

	// prune removes what the plan lists at another version, files, script
	// and dist-info, and leaves the rest.
	pruned := filepath.Join(dir, "pruned")
	if out, err := runPy(t, "cp", "-a", venv, pruned); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	must(t, os.WriteFile(planOut, []byte(`[{"name": "gpuimg-tool", "version": "3.0"}, {"name": "nvidia-fake-cu12", "version": "1.0"}]`), 0o644))
	before := tree(t, pruned)
	if out, err := runPy(t, vpy, "-B", script, "prune", pruned, planOut); err != nil || !strings.Contains(out, "removed gpuimg-tool 2.0") {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	after := tree(t, pruned)
	for p := range before {
		_, kept := after[p]
		tool := strings.Contains(p, "gpuimg_tool") || strings.HasSuffix(p, "bin/gpuimg-tool")
		if kept == tool {
			t.Errorf("prune: %s kept %v", p, kept)
		}
	}
	if _, err := os.Stat(filepath.Join(site(t, pruned), "gpuimg_tool")); !os.IsNotExist(err) {
		t.Errorf("prune left the package directory gpuimg_tool: %v", err)
	}

	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"copy", "--shared", venv, filepath.Join(dir, "x"), "gpuimg-tool==2.0"}, "lies outside the site directory"},
		{[]string{"copy", venv, filepath.Join(dir, "y"), "gpuimg-tool==2.1"}, "gpuimg-tool==2.1: " + venv + " has version 2.0"},
		{[]string{"copy", venv, filepath.Join(dir, "z"), "numpy==2.1.3"}, "numpy==2.1.3 is not installed"},
		{[]string{"copy", venv, filepath.Join(dir, "w"), "gpuimg-pth==1.0"}, "RECORD lists gpuimg_pth-1.0.dist-info/INSTALLER, which is missing"},
	} {
		if strings.Contains(tt.msg, "INSTALLER") {
			must(t, os.Remove(filepath.Join(site(t, venv), "gpuimg_pth-1.0.dist-info", "INSTALLER")))
		}
		out, err := runPy(t, vpy, append([]string{"-B", script}, tt.args...)...)
		if err == nil || !strings.Contains(out, tt.msg) {
			t.Errorf("plan.py %s: err %v, output %q (want an error with %q)", strings.Join(tt.args, " "), err, out, tt.msg)
		}
	}
}

// TestPlanPyPycs gives plan.py pycs a directory with a timestamp .pyc
// whose source's time changed after it was written (as the clamp changes
// it), a fresh one, one checked by hash and one of another Python: only
// the stale one is rewritten, and it then records the source's time and
// size; a second run rewrites nothing.
func TestPlanPyPycs(t *testing.T) {
	py, dir, script := planPyIn(t)
	lib := filepath.Join(dir, "lib")
	must(t, os.MkdirAll(lib, 0o755))
	for _, m := range []string{"stale", "fresh", "hashed", "other"} {
		must(t, os.WriteFile(filepath.Join(lib, m+".py"), []byte("X = {'a', 'b', '"+m+"'}\n"), 0o644))
	}
	compile := `import py_compile, sys, importlib.util as u
for m in ("stale", "fresh", "other"):
    py_compile.compile(sys.argv[1] + "/" + m + ".py", invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
py_compile.compile(sys.argv[1] + "/hashed.py", invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
c = u.cache_from_source(sys.argv[1] + "/other.py")
b = open(c, "rb").read()
open(c, "wb").write(b"\x00\x00\r\n" + b[4:])
print(u.cache_from_source(sys.argv[1] + "/x.py").rsplit("/", 1)[1].split(".", 1)[1])`
	out, err := exec.Command(py, "-c", compile, lib).CombinedOutput()
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, out)
	}
	suffix := strings.TrimSpace(string(out)) // cpython-311.pyc
	pyc := func(m string) string { return filepath.Join(lib, "__pycache__", m+"."+suffix) }
	read := func(m string) []byte {
		b, err := os.ReadFile(pyc(m))
		must(t, err)
		return b
	}
	before := map[string][]byte{}
	for _, m := range []string{"stale", "fresh", "hashed", "other"} {
		before[m] = read(m)
	}
	for _, m := range []string{"stale", "hashed", "other"} {
		must(t, os.Chtimes(filepath.Join(lib, m+".py"), time.Unix(1700000000, 0), time.Unix(1700000000, 0)))
	}
	runPycs := func() string {
		cmd := exec.Command(py, "-B", script, "pycs", lib)
		cmd.Env = append(os.Environ(), "PYTHONHASHSEED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("plan.py pycs: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := runPycs(); !strings.Contains(out, "recompiled 1 stale .pyc files under "+lib) {
		t.Errorf("first run: %s", out)
	}
	after := read("stale")
	if mtime := binary.LittleEndian.Uint32(after[8:12]); mtime != 1700000000 {
		t.Errorf("stale.pyc records mtime %d after pycs, want the source's 1700000000", mtime)
	}
	if string(after[16:]) != string(before["stale"][16:]) {
		t.Errorf("stale.pyc's code changed: only its header should")
	}
	for _, m := range []string{"fresh", "hashed", "other"} {
		if string(read(m)) != string(before[m]) {
			t.Errorf("%s.pyc was rewritten; only stale timestamp .pyc files of this Python are", m)
		}
	}
	if out := runPycs(); !strings.Contains(out, "recompiled 0 stale") {
		t.Errorf("second run: %s", out)
	}
}

// TestPlanPyOSSplit splits what an OS package step changed by dpkg's
// lists, in a tree shaped as a merged-/usr Debian: the files of packages
// the step installed that are not Python's (gcc-16's, and libc6-dev's
// listed under /lib, a link to usr/lib) are shared; python3.13-dev's,
// dpkg's database, a file no package owns and those of a package the
// base had already (its list older than the step) are the step's own.
func TestPlanPyOSSplit(t *testing.T) {
	py, dir, script := planPyIn(t)
	root := filepath.Join(dir, "root")
	for _, d := range []string{"usr/bin", "usr/lib/x86_64-linux-gnu", "usr/include/python3.13", "var/lib/dpkg/info", "etc"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(t, os.Symlink("usr/lib", filepath.Join(root, "lib")))
	files := []string{"usr/bin/gcc-16", "usr/lib/x86_64-linux-gnu/crt1.o", "usr/include/python3.13/Python.h", "etc/ld.so.cache", "usr/bin/old-tool", "var/lib/dpkg/status"}
	for _, f := range files {
		must(t, os.WriteFile(filepath.Join(root, f), []byte(f), 0o644))
	}
	list := func(pkg string, paths ...string) {
		must(t, os.WriteFile(filepath.Join(root, "var/lib/dpkg/info", pkg+".list"), []byte("/.\n"+strings.Join(paths, "\n")+"\n"), 0o644))
	}
	list("old-tool", "/usr/bin/old-tool")
	time.Sleep(20 * time.Millisecond)
	t0 := float64(time.Now().UnixNano()) / 1e9
	time.Sleep(20 * time.Millisecond)
	list("gcc-16", "/usr/bin", "/usr/bin/gcc-16")
	list("libc6-dev:amd64", "/lib/x86_64-linux-gnu/crt1.o")
	list("python3.13-dev", "/usr/include/python3.13/Python.h")
	var in strings.Builder
	for _, f := range files {
		in.WriteString(filepath.Join(root, f) + "\x00")
	}
	own, shared := filepath.Join(dir, "own"), filepath.Join(dir, "shared")
	cmd := exec.Command(py, "-B", script, "ossplit", fmt.Sprintf("%.9f", t0), own, shared, root)
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "2 of packages any Python shares, 4 of this Python's or unowned") {
		t.Fatalf("ossplit: %v\n%s", err, out)
	}
	read := func(p string) []string {
		b, err := os.ReadFile(p)
		must(t, err)
		var out []string
		for s := range strings.SplitSeq(strings.TrimSuffix(string(b), "\x00"), "\x00") {
			out = append(out, strings.TrimPrefix(s, root+"/"))
		}
		return out
	}
	if got, want := read(shared), []string{"usr/bin/gcc-16", "usr/lib/x86_64-linux-gnu/crt1.o"}; !slices.Equal(got, want) {
		t.Errorf("shared = %q, want %q", got, want)
	}
	if got, want := read(own), []string{"usr/include/python3.13/Python.h", "etc/ld.so.cache", "usr/bin/old-tool", "var/lib/dpkg/status"}; !slices.Equal(got, want) {
		t.Errorf("own = %q, want %q", got, want)
	}
}

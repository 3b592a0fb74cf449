package testenv

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// StandalonePython is an archive in python-build-standalone's
// install_only layout, made here from Debian's packages (DebianStandalone),
// and what a matrix row for it says.
type StandalonePython struct {
	// Version is the CPython release (Debian's upstream version, 3.13.5).
	Version string
	// Release is the fixture's release tag, StandaloneRelease.
	Release string
	// Name is the archive's name as python-build-standalone names its
	// assets: cpython-VERSION+RELEASE-x86_64-unknown-linux-gnu-install_only.tar.gz.
	Name string
	// Path is the archive; SHA256 its digest, hex.
	Path, SHA256 string
}

// StandaloneRelease is the release tag of the archives DebianStandalone
// makes: the date of python-build-standalone's fixed archive time
// (standaloneMTime).
const StandaloneRelease = "20240101"

// standaloneMTime is the time of every archive member, as
// python-build-standalone's normalize_tar_archive sets it (DEFAULT_MTIME
// in pythonbuild/utils.py: 2024-01-01T00:00:00Z).
const standaloneMTime = 1704067200

// standalonePackages are Debian 13's packages of a CPython minor: the
// interpreter (linked with libpython statically), its standard library,
// ensurepip (Debian ships its __main__ in pythonX.Y-venv), the shared
// libpython for embedders, the C headers (libpythonX.Y-dev: the real
// install_only archive has include/pythonX.Y, python-build-standalone#374)
// and the pip wheel ensurepip installs.
func standalonePackages(minor string) []string {
	return []string{"python" + minor + "-minimal", "libpython" + minor + "-minimal", "libpython" + minor + "-stdlib", "python" + minor + "-venv", "libpython" + minor,
		"libpython" + minor + "-dev", "python3-pip-whl"}
}

// standaloneKey names the cached packages and archive of minor: a change
// to the packages or to standaloneArchive's layout (standaloneLayout)
// makes new ones.
func standaloneKey(minor string) string {
	sum := sha256.Sum256([]byte(strings.Join(standalonePackages(minor), ",") + " " + standaloneLayout))
	return fmt.Sprintf("python%s-%x", minor, sum[:4])
}

// standaloneLayout is the version of standaloneArchive's output; bump it
// when the archive changes.
const standaloneLayout = "3"

// DebianStandalone makes an archive of CPython minor (3.13) in the layout
// of python-build-standalone's install_only archives, from Debian 13
// (trixie)'s packages, for linux/amd64, cached under CacheDir. The layout
// is python-build-standalone's (src/release.rs convert_to_install_only
// keeps python/install/ of the full archive as python/;
// cpython-unix/build-cpython.sh removes every __pycache__;
// pythonbuild/utils.py normalize_tar_archive drops directory entries,
// sorts the members and gives each the time 2024-01-01, owner root and
// u+rw,g+rw): python/bin/pythonX.Y with python3 and python links to it,
// python/lib/pythonX.Y/ (lib-dynload included), python/lib/libpythonX.Y.so.1.0
// and its libpythonX.Y.so link, python/include/pythonX.Y/ (Python.h and
// the rest of libpythonX.Y-dev's headers, pyconfig.h being Debian's
// multiarch one, which its include/pythonX.Y/pyconfig.h only includes). Debian's interpreter links libpython
// statically, as python-build-standalone's does, and finds its prefix from
// where it lies, so it runs from any directory. The differences: its
// extension modules load the OS's libssl, libffi, libexpat and friends
// (python-build-standalone links them in), so the image's base must
// carry Debian 13's or newer (TwoPythonsRootfs does); ensurepip's pip
// wheel is Debian's python3-pip-whl, put in ensurepip/_bundled/, and
// WHEEL_PKG_DIR (Debian's /usr/share/python-wheels/) is unset so ensurepip
// uses it; and Debian's sitecustomize link to /etc is left out.
func DebianStandalone(ctx context.Context, minor string) (StandalonePython, error) {
	key := standaloneKey(minor)
	dir := filepath.Join(CacheDir(), "standalone-"+key)
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return StandalonePython{}, err
	}
	defer unlock()
	root, err := debianNonFree(ctx, "debian-trixie-"+key, "trixie", standalonePackages(minor))
	if err != nil {
		return StandalonePython{}, err
	}
	version, err := debianUpstreamVersion(root, minor)
	if err != nil {
		return StandalonePython{}, err
	}
	sp := StandalonePython{Version: version, Release: StandaloneRelease,
		Name: "cpython-" + version + "+" + StandaloneRelease + "-x86_64-unknown-linux-gnu-install_only.tar.gz"}
	sp.Path = filepath.Join(dir, sp.Name)
	b, err := os.ReadFile(sp.Path)
	if err != nil {
		if b, err = standaloneArchive(root, minor); err != nil {
			return StandalonePython{}, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return StandalonePython{}, err
		}
		if err := os.WriteFile(sp.Path+".tmp", b, 0o644); err != nil {
			return StandalonePython{}, err
		}
		if err := os.Rename(sp.Path+".tmp", sp.Path); err != nil {
			return StandalonePython{}, err
		}
	}
	sum := sha256.Sum256(b)
	sp.SHA256 = hex.EncodeToString(sum[:])
	return sp, nil
}

var debianVersionRE = regexp.MustCompile(`^python3\.[0-9]+ \(([0-9]+\.[0-9]+\.[0-9]+)-`)

// debianUpstreamVersion reads the CPython release from the first line of
// the interpreter package's changelog ("python3.13 (3.13.5-2+deb13u5) …").
func debianUpstreamVersion(root, minor string) (string, error) {
	p := filepath.Join(root, "usr", "share", "doc", "python"+minor+"-minimal", "changelog.Debian.gz")
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	head := make([]byte, 200)
	n, _ := zr.Read(head)
	m := debianVersionRE.FindSubmatch(head[:n])
	if m == nil {
		return "", fmt.Errorf("%s does not start with python%s (X.Y.Z-…)", p, minor)
	}
	return string(m[1]), nil
}

// standaloneArchive builds the install_only archive of root (Debian's
// unpacked packages) in memory.
func standaloneArchive(root, minor string) ([]byte, error) {
	type member struct {
		name, link string // link: a symlink's target
		body       []byte
		mode       int64
	}
	var ms []member
	add := func(name, src string) error {
		fi, err := os.Lstat(src)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if !path.IsAbs(t) { // Debian's links into /etc stay out
				ms = append(ms, member{name: name, link: t, mode: 0o777})
			}
			return nil
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		ms = append(ms, member{name: name, body: b, mode: int64(fi.Mode().Perm())})
		return nil
	}
	stdlib := filepath.Join(root, "usr", "lib", "python"+minor)
	err := filepath.WalkDir(stdlib, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "__pycache__":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case strings.HasSuffix(p, ".a") && strings.Contains(p, "/config-"+minor+"-"):
			// libpythonX.Y-dev's static libpythonX.Y.a and Debian's own
			// -pic.a (7 MB): whether the real archive has the first was not
			// read, and nothing gpuimg builds links them.
			return nil
		}
		rel, err := filepath.Rel(stdlib, p)
		if err != nil {
			return err
		}
		return add("python/lib/python"+minor+"/"+filepath.ToSlash(rel), p)
	})
	if err != nil {
		return nil, err
	}
	// The headers, as `make install` lays them out: Debian moves
	// pyconfig.h to its multiarch directory and leaves a wrapper that
	// includes it; the archive gets the real one in its place.
	include := filepath.Join(root, "usr", "include", "python"+minor)
	err = filepath.WalkDir(include, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(include, p)
		if err != nil {
			return err
		}
		if rel == "pyconfig.h" {
			p = filepath.Join(root, "usr", "include", "x86_64-linux-gnu", "python"+minor, "pyconfig.h")
		}
		return add("python/include/python"+minor+"/"+filepath.ToSlash(rel), p)
	})
	if err != nil {
		return nil, err
	}
	if err := add("python/bin/python"+minor, filepath.Join(root, "usr", "bin", "python"+minor)); err != nil {
		return nil, err
	}
	lib := "libpython" + minor + ".so.1.0"
	if err := add("python/lib/"+lib, filepath.Join(root, "usr", "lib", "x86_64-linux-gnu", lib)); err != nil {
		return nil, err
	}
	ms = append(ms, member{name: "python/bin/python3", link: "python" + minor, mode: 0o777},
		member{name: "python/bin/python", link: "python" + minor, mode: 0o777},
		member{name: "python/lib/libpython" + minor + ".so", link: lib, mode: 0o777})
	// ensurepip's pip: Debian's wheel, where upstream CPython bundles it.
	whls, _ := filepath.Glob(filepath.Join(root, "usr", "share", "python-wheels", "pip-*-py3-none-any.whl"))
	if len(whls) != 1 {
		return nil, fmt.Errorf("want one pip wheel from python3-pip-whl, found %v", whls)
	}
	for i := range ms {
		m := &ms[i]
		switch {
		case m.name == "python/lib/python"+minor+"/ensurepip/__init__.py":
			want := `_PIP_VERSION = "` + strings.TrimSuffix(strings.TrimPrefix(filepath.Base(whls[0]), "pip-"), "-py3-none-any.whl") + `"`
			if !bytes.Contains(m.body, []byte(want)) {
				return nil, fmt.Errorf("ensurepip does not ask for %s (%s)", filepath.Base(whls[0]), want)
			}
		case strings.HasPrefix(m.name, "python/lib/python"+minor+"/_sysconfigdata_") && m.link == "":
			unset := bytes.ReplaceAll(m.body, []byte(`'WHEEL_PKG_DIR': '/usr/share/python-wheels/'`), []byte(`'WHEEL_PKG_DIR': None`))
			if bytes.Equal(unset, m.body) {
				return nil, fmt.Errorf("%s sets no WHEEL_PKG_DIR /usr/share/python-wheels/", m.name)
			}
			m.body = unset
		}
	}
	if err := add("python/lib/python"+minor+"/ensurepip/_bundled/"+filepath.Base(whls[0]), whls[0]); err != nil {
		return nil, err
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf) // no name, no time: the same bytes every time
	tw := tar.NewWriter(zw)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: m.mode | 0o660, ModTime: time.Unix(standaloneMTime, 0), Uname: "root", Gname: "root", Format: tar.FormatPAX}
		if m.link != "" {
			h.Typeflag, h.Linkname = tar.TypeSymlink, m.link
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(m.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(m.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// MatrixRow is a matrix file's standalone_pythons row (with its source)
// for the archive, replacing the built-in row of its minor.
func (s StandalonePython) MatrixRow() string {
	return fmt.Sprintf(`sources:
  - id: gpuimg-testenv-standalone
    title: gpuimg test environment (a python-build-standalone-layout archive made from Debian 13's python packages, testenv.DebianStandalone)
    url: https://github.com/gpuimg/gpuimg/tree/main/internal/testenv
standalone_pythons:
  - version: "%s"
    release: "%s"
    source: gpuimg-testenv-standalone
    archives:
      - platform: linux/amd64
        name: %s
        sha256: %s
`, s.Version, s.Release, s.Name, s.SHA256)
}

// PythonMirror serves archives in the layout of python-build-standalone's
// releases (RELEASE/NAME under URL) on the loopback interface, as
// --python-mirror expects, until Close.
type PythonMirror struct {
	URL string
	srv *http.Server
}

// ServePythonMirror serves archives.
func ServePythonMirror(archives ...StandalonePython) (*PythonMirror, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for _, a := range archives {
		mux.HandleFunc("/"+a.Release+"/"+a.Name, func(w http.ResponseWriter, r *http.Request) {
			http.ServeFile(w, r, a.Path)
		})
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return &PythonMirror{URL: "http://" + l.Addr().String(), srv: srv}, nil
}

// Close stops the mirror.
func (m *PythonMirror) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.srv.Shutdown(ctx)
}

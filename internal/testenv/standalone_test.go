package testenv

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDebianStandalone: the archive has python-build-standalone's
// install_only layout (no directory entries, sorted, one time, root's;
// the C headers in include/python3.13, pyconfig.h among them),
// the same bytes when made again, and the mirror serves it where
// --python-mirror looks: RELEASE/NAME, the + escaped.
func TestDebianStandalone(t *testing.T) {
	Require(t, "downloads Debian's python3.13 packages", Slow)
	sp, err := DebianStandalone(t.Context(), "3.13")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sp.Version, "3.13.") || sp.Name != "cpython-"+sp.Version+"+"+StandaloneRelease+"-x86_64-unknown-linux-gnu-install_only.tar.gz" {
		t.Fatalf("archive %+v", sp)
	}
	f, err := os.Open(sp.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	links := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir || h.ModTime.Unix() != standaloneMTime || h.Uid != 0 || h.Gid != 0 || !strings.HasPrefix(h.Name, "python/") {
			t.Errorf("member %s: type %c, time %v, owner %d:%d", h.Name, h.Typeflag, h.ModTime, h.Uid, h.Gid)
		}
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
		}
		if h.Name == "python/include/python3.13/pyconfig.h" {
			// The configured header itself, not Debian's wrapper that
			// includes its multiarch copy.
			if b, err := io.ReadAll(tr); err != nil || !strings.Contains(string(b), "#define SIZEOF_VOID_P") {
				t.Errorf("pyconfig.h is not the configured header (%v):\n%.300s", err, b)
			}
		}
		names = append(names, h.Name)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("members not sorted: %s before %s", names[i-1], names[i])
		}
	}
	for _, want := range []string{"python/bin/python3.13", "python/lib/python3.13/os.py", "python/lib/python3.13/venv/__init__.py", "python/lib/python3.13/ensurepip/__main__.py", "python/lib/libpython3.13.so.1.0",
		"python/include/python3.13/Python.h", "python/include/python3.13/pyconfig.h"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s", want)
		}
	}
	if links["python/bin/python3"] != "python3.13" || links["python/lib/libpython3.13.so"] != "libpython3.13.so.1.0" {
		t.Errorf("links %v", links)
	}
	bundled := false
	for _, n := range names {
		bundled = bundled || strings.HasPrefix(n, "python/lib/python3.13/ensurepip/_bundled/pip-")
		if strings.Contains(n, "__pycache__") || strings.HasSuffix(n, "sitecustomize.py") {
			t.Errorf("member %s, which the layout has not", n)
		}
	}
	if !bundled {
		t.Error("ensurepip has no bundled pip wheel")
	}
	b, err := standaloneArchive(debianRoot(t), "3.13")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != sp.SHA256 {
		t.Error("made again, the archive differs")
	}

	m, err := ServePythonMirror(sp)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	resp, err := http.Get(m.URL + "/" + sp.Release + "/" + strings.ReplaceAll(sp.Name, "+", "%2B"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if sum := sha256.Sum256(got); resp.StatusCode != http.StatusOK || hex.EncodeToString(sum[:]) != sp.SHA256 {
		t.Errorf("mirror: %s, %d bytes", resp.Status, len(got))
	}
	if !strings.Contains(sp.MatrixRow(), "sha256: "+sp.SHA256) {
		t.Errorf("matrix row %s", sp.MatrixRow())
	}
}

func debianRoot(t *testing.T) string {
	t.Helper()
	root, err := debianNonFree(t.Context(), "debian-trixie-"+standaloneKey("3.13"), "trixie", standalonePackages("3.13"))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

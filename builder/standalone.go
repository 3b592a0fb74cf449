package builder

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// Stage names and paths of a standalone Python (matrix.PythonStandalone).
const (
	// stageCPython holds the unpacked CPython under cpythonRoot, its
	// files' times fixed (standaloneStages).
	stageCPython = "gpuimg-cpython"
	// cpythonRoot is the image's root in stageCPython: the Python is at
	// cpythonRoot + matrix.StandalonePrefix.
	cpythonRoot = "/gpuimg/cpython"
)

// CheckPythonMirror checks a --python-mirror URL: http or https (file://
// is not something BuildKit's ADD fetches) and without credentials, as
// the archive's URL is in the image's history.
func CheckPythonMirror(u string) error {
	if u == "" {
		return nil
	}
	p, err := url.Parse(u)
	switch {
	case err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "":
		return fmt.Errorf("python mirror %q is not an http or https URL: give the URL that replaces %s", u, matrix.StandalonePythonURL)
	case p.User != nil:
		return fmt.Errorf("python mirror %q holds credentials, which would end up in the image's history: use a mirror that needs none", p.Redacted())
	}
	return nil
}

// standalone says the stack's Python is a standalone CPython.
func (g *gen) standalone() bool {
	ps := g.d.Stack.PythonSource
	return ps != nil && ps.Kind == matrix.PythonStandalone
}

// standaloneStages writes the stages that fetch the stack's standalone
// CPython for the target's architecture (ADD checks the archive's sha256
// and unpacks it) and copy it under cpythonRoot with every file's and
// directory's time set to LayerMTime (fixTimes), as a layer stage's. The
// archive has no directory entries, so unpacking dates its directories at
// build time; with one time, every base (and every SOURCE_DATE_EPOCH)
// gets the same layer. python-build-standalone's archives carry no .pyc
// files (cpython-unix/build-cpython.sh removes __pycache__), so no
// bytecode goes stale.
func (g *gen) standaloneStages() {
	s := g.d.Stack
	ps := s.PythonSource
	base := g.d.PythonMirror
	from := "python-build-standalone"
	if base == "" {
		base = matrix.StandalonePythonURL
	} else {
		from = "the Python mirror"
	}
	g.w("\n# CPython %s (python-build-standalone %s) from %s, pinned by sha256: %s packages no Python %s.\n", ps.Version, ps.Release, from, s.OS, s.Python)
	for _, a := range ps.Archives {
		arch := path.Base(a.Platform)
		g.w("FROM scratch AS %s-%s\n", stageCPython, arch)
		g.w("ADD --checksum=sha256:%s --unpack=true %s /\n", a.SHA256, a.URL(base, ps.Release))
	}
	g.w("FROM %s-${TARGETARCH} AS %s-archive\n", stageCPython, stageCPython)
	g.w("FROM %s AS %s\n", g.d.Base, stageCPython)
	dest := cpythonRoot + matrix.StandalonePrefix
	g.w("RUN --mount=type=bind,from=%s-archive,source=/python,target=/tmp/gpuimg-cpython \\\n    mkdir -p %s && cp -a /tmp/gpuimg-cpython %s \\\n && %s\n",
		stageCPython, path.Dir(dest), dest, fixTimes(cpythonRoot))
}

// standaloneLayer adds the standalone CPython to the current stage as a
// layer of its own (COPY --link: its digest depends only on its files, so
// every variant with this Python shares it) and puts it on PATH, after
// the virtual environment's.
func (g *gen) standaloneLayer() {
	if !g.standalone() {
		return
	}
	g.w("COPY --link --from=%s %s/ /\n", stageCPython, cpythonRoot)
	g.w("ENV PATH=%s/bin:$PATH\n", matrix.StandalonePrefix)
}

// checkStandalonePlatform says whether the stack's standalone CPython, if
// it has one, has an archive for platform ("" is the daemon's: not
// checked here).
func checkStandalonePlatform(s matrix.Stack, platform string) error {
	ps := s.PythonSource
	if ps == nil || ps.Kind != matrix.PythonStandalone || platform == "" {
		return nil
	}
	if _, ok := ps.Archive(platform); !ok {
		var have []string
		for _, a := range ps.Archives {
			have = append(have, a.Platform)
		}
		return fmt.Errorf("the standalone CPython %s has no archive for %s (only %s): build for %s, or add one with --matrix-file (standalone_pythons:)",
			ps.Version, platform, strings.Join(have, ", "), strings.Join(have, ", "))
	}
	return nil
}

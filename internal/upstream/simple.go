package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"

	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// wheel is one file link of a PEP 503 project page.
type wheel struct {
	Filename string
	Dist     string // normalized distribution name (torch, torchvision)
	Version  string // normalized public version, without the local label (2.7.1, 1!2.0rc1)
	Local    string // normalized local label (cu128, cpu, rocm6.3), "" if none
	PEP440   pep440.Version
	Build    string // build tag (1 of jax_cuda12_plugin-0.4.30-1-…), "" if none
	Python   string // python tag (cp312, py2.py3)
	ABI      string
	Platform string // platform tag (manylinux_2_28_x86_64)
	URL      string // absolute, without the #sha256= fragment
	// Metadata says the page offers the core metadata file (PEP 658/714);
	// MetadataSHA256 is its hash as the page gives it ("" = not given).
	Metadata       bool
	MetadataSHA256 string
}

// MetadataURL is where PEP 658 serves the wheel's METADATA file.
func (w wheel) MetadataURL() string { return w.URL + ".metadata" }

// linux reports whether the wheel installs on Linux.
func (w wheel) linux() bool {
	return strings.HasPrefix(w.Platform, "manylinux") || strings.HasPrefix(w.Platform, "linux_") || strings.HasPrefix(w.Platform, "musllinux")
}

// x8664 reports whether the wheel is for x86_64 Linux, the platform the
// matrix's pins describe.
func (w wheel) x8664() bool { return w.linux() && strings.HasSuffix(w.Platform, "x86_64") }

var hexRE = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// parseSimplePage reads a PEP 503 project page and returns its wheels.
// Links to other files (sdists) are skipped. A .whl link whose file name
// is not a wheel name (the binary distribution format's) is skipped too,
// and named in skipped: one odd file must not hide a project's releases. A
// metadata attribute that cannot be read is an error naming pageURL, and
// so is a page with no wheel at all: it is not the page asked for.
func parseSimplePage(pageURL string, body []byte) (wheels []wheel, skipped []string, err error) {
	base, err := url.Parse(pageURL)
	if err != nil {
		return nil, nil, fmt.Errorf("parse page URL %q: %w", pageURL, err)
	}
	bad := func(format string, args ...any) error {
		return &FormatError{URL: pageURL, Err: fmt.Errorf(format, args...)}
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return nil, nil, bad("not HTML: %w", err)
	}
	var (
		anchors int
		walkErr error
	)
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if walkErr != nil {
			return
		}
		if n.Type == html.ElementNode && n.Data == "a" {
			anchors++
			w, isWheel, err := wheelFromAnchor(base, n)
			if nameErr, ok := errors.AsType[*wheelNameError](err); ok {
				skipped = append(skipped, nameErr.Error())
				return
			}
			if err != nil {
				walkErr = bad("%w", err)
				return
			}
			if isWheel {
				wheels = append(wheels, w)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if walkErr != nil {
		return nil, nil, walkErr
	}
	if len(wheels) == 0 {
		return nil, nil, bad("no wheel links among %d anchors (%d skipped); is this a PEP 503 project page?", anchors, len(skipped))
	}
	return wheels, skipped, nil
}

func wheelFromAnchor(base *url.URL, n *html.Node) (wheel, bool, error) {
	attrs := map[string]string{}
	has := map[string]bool{}
	for _, a := range n.Attr {
		attrs[a.Key] = a.Val
		has[a.Key] = true
	}
	href, ok := attrs["href"]
	if !ok {
		return wheel{}, false, nil
	}
	ref, err := url.Parse(href)
	if err != nil {
		return wheel{}, false, fmt.Errorf("link %q: %w", href, err)
	}
	abs := base.ResolveReference(ref)
	abs.Fragment = ""
	// Keep the file name as the page escapes it: PyTorch's hosts serve
	// torch-2.7.1%2Bcu128-….whl, and an S3-style host reads a bare "+"
	// in a path as a space.
	esc := ref.EscapedPath()
	lastEsc := esc[strings.LastIndex(esc, "/")+1:]
	dirEsc := abs.EscapedPath()
	abs.RawPath = dirEsc[:strings.LastIndex(dirEsc, "/")+1] + lastEsc
	name := abs.Path[strings.LastIndex(abs.Path, "/")+1:]
	if !strings.HasSuffix(name, ".whl") {
		return wheel{}, false, nil
	}
	w, err := parseWheelName(name)
	if err != nil {
		return wheel{}, false, &wheelNameError{href: href, err: err}
	}
	w.URL = abs.String()
	// PEP 714: data-core-metadata is the name; data-dist-info-metadata
	// the PEP 658 spelling older pages (and older clients) use.
	for _, key := range []string{"data-core-metadata", "data-dist-info-metadata"} {
		if !has[key] {
			continue
		}
		v := attrs[key]
		w.Metadata = true
		switch {
		case v == "" || v == "true":
		case strings.HasPrefix(v, "sha256="):
			h := strings.TrimPrefix(v, "sha256=")
			if !hexRE.MatchString(h) {
				return wheel{}, false, fmt.Errorf("link %s: %s=%q is not a sha256 hex digest", name, key, v)
			}
			w.MetadataSHA256 = strings.ToLower(h)
		case strings.Contains(v, "="):
			// Another hashlib algorithm: PEP 658 allows it; gpuimg
			// verifies sha256 only, so the file is read unverified.
		default:
			return wheel{}, false, fmt.Errorf("link %s: %s=%q is neither \"true\" nor hashname=hexdigest", name, key, v)
		}
		break
	}
	return w, true, nil
}

// wheelNameError is a .whl link whose file name is not a wheel name.
type wheelNameError struct {
	href string
	err  error
}

func (e *wheelNameError) Error() string { return fmt.Sprintf("link %q: %v", e.href, e.err) }
func (e *wheelNameError) Unwrap() error { return e.err }

var (
	// wheelNameRE is a distribution name as a wheel file name escapes it:
	// letters and digits of any script, "_" and "." (packaging's
	// _wheel_name_regex, [\w._]+ with re.UNICODE).
	wheelNameRE  = regexp.MustCompile(`^[\pL\pN_.]+$`)
	buildTagRE   = regexp.MustCompile(`^[0-9]+`)
	identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// maxWheelName bounds a wheel file name (the spec sets none; 255 bytes is
// what common file systems hold).
const maxWheelName = 255

// parseWheelName splits a wheel file name as the binary distribution
// format specifies it (packaging.python.org/specifications/
// binary-distribution-format, "File name convention" and "Escaping and
// Unicode"): {distribution}-{version}(-{build tag})?-{python tag}-{abi
// tag}-{platform tag}.whl. The name may hold letters of any script, the
// version is any PEP 440 version (epochs, post releases, local labels),
// the build tag starts with a digit, and each tag may be a compressed set
// (py2.py3). The checks are pypa/packaging's parse_wheel_filename's.
func parseWheelName(name string) (wheel, error) {
	if len(name) > maxWheelName {
		return wheel{}, fmt.Errorf("wheel name of %d bytes: longer than %d", len(name), maxWheelName)
	}
	stem, ok := strings.CutSuffix(name, ".whl")
	parts := strings.Split(stem, "-")
	if !ok || len(parts) != 5 && len(parts) != 6 {
		return wheel{}, fmt.Errorf("wheel name %q is not {name}-{version}(-{build})?-{python}-{abi}-{platform}.whl", name)
	}
	if !wheelNameRE.MatchString(parts[0]) || strings.Contains(parts[0], "__") {
		return wheel{}, fmt.Errorf("wheel name %q: %q is not an escaped distribution name", name, parts[0])
	}
	v, err := pep440.Parse(parts[1])
	if err != nil {
		return wheel{}, fmt.Errorf("wheel name %q: %w", name, err)
	}
	n := len(parts)
	w := wheel{Filename: name, Dist: normalizeName(parts[0]), Version: v.Public(), Local: v.Local(), PEP440: v,
		Python: parts[n-3], ABI: parts[n-2], Platform: parts[n-1]}
	if n == 6 {
		if w.Build = parts[2]; !buildTagRE.MatchString(w.Build) {
			return wheel{}, fmt.Errorf("wheel name %q: build tag %q does not start with a digit", name, w.Build)
		}
	}
	for i, tag := range parts[n-3:] {
		for member := range strings.SplitSeq(tag, ".") {
			if member == "" || i == 0 && !identifierRE.MatchString(member) {
				return wheel{}, fmt.Errorf("wheel name %q: tag %q has an empty or odd member %q", name, tag, member)
			}
		}
	}
	return w, nil
}

// final reports whether w is a final release the matrix can hold: no pre-,
// post- or dev-release part and no epoch.
func (w wheel) final() bool { return w.PEP440.IsFinal() && !strings.Contains(w.Version, "!") }

// normalizeName is PEP 503's name normalization.
func normalizeName(s string) string { return strings.ToLower(nameSepRE.ReplaceAllString(s, "-")) }

var nameSepRE = regexp.MustCompile(`[-_.]+`)

// metadata is the part of a core metadata file (METADATA) gpuimg reads.
type metadata struct {
	Name           string
	Version        string
	RequiresPython string
	RequiresDist   []string
}

// parseMetadata reads the header block of a core metadata file (RFC 822
// style, ends at the first blank line).
func parseMetadata(u string, b []byte) (metadata, error) {
	var m metadata
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			break
		}
		// Continuation lines (folded headers) belong to the previous one.
		for i+1 < len(lines) && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t")) {
			l += " " + strings.TrimSpace(lines[i+1])
			i++
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return metadata{}, &FormatError{URL: u, Err: fmt.Errorf("line %d %q is not a \"Field: value\" header", i+1, l)}
		}
		v = strings.TrimSpace(v)
		switch strings.ToLower(k) {
		case "name":
			m.Name = v
		case "version":
			m.Version = v
		case "requires-python":
			m.RequiresPython = v
		case "requires-dist":
			m.RequiresDist = append(m.RequiresDist, v)
		}
	}
	if m.Name == "" || m.Version == "" {
		return metadata{}, &FormatError{URL: u, Err: fmt.Errorf("no Name and Version headers; not a core metadata file")}
	}
	return m, nil
}

// readMetadata fetches w's core metadata, verified against the page's
// hash, and checks it describes w.
func (o *options) readMetadata(ctx context.Context, w wheel) (metadata, error) {
	u := w.MetadataURL()
	if !w.Metadata {
		return metadata{}, &FormatError{URL: w.URL, Err: fmt.Errorf("the index page offers no core metadata for this wheel (no data-core-metadata attribute); gpuimg does not download wheels")}
	}
	b, err := o.getVerified(ctx, u, w.MetadataSHA256)
	if err != nil {
		return metadata{}, err
	}
	m, err := parseMetadata(u, b)
	if err != nil {
		return metadata{}, err
	}
	mv, err := pep440.Parse(m.Version)
	if err != nil {
		return metadata{}, &FormatError{URL: u, Err: err}
	}
	if normalizeName(m.Name) != w.Dist || mv.ComparePublic(w.PEP440) != 0 {
		return metadata{}, &FormatError{URL: u, Err: fmt.Errorf("describes %s %s, not the wheel %s", m.Name, m.Version, w.Filename)}
	}
	return m, nil
}

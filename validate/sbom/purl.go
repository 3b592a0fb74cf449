package sbom

import (
	"sort"
	"strings"
)

// PURL is a package URL (github.com/package-url/purl-spec): its parts,
// written by String with every character outside the unreserved set
// percent-encoded and the qualifiers sorted by key, so one package
// always gives one string.
type PURL struct {
	Type, Namespace, Name, Version string
	Qualifiers                     map[string]string
}

// String writes the package URL.
func (p PURL) String() string {
	var b strings.Builder
	b.WriteString("pkg:")
	b.WriteString(p.Type)
	b.WriteByte('/')
	if p.Namespace != "" {
		b.WriteString(escape(p.Namespace))
		b.WriteByte('/')
	}
	b.WriteString(escape(p.Name))
	if p.Version != "" {
		b.WriteByte('@')
		b.WriteString(escape(p.Version))
	}
	keys := make([]string, 0, len(p.Qualifiers))
	for k, v := range p.Qualifiers {
		if v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(escapeKeep(p.Qualifiers[k], '/'))
	}
	return b.String()
}

// escape percent-encodes all but the unreserved characters of RFC 3986
// (the purl spec: "2.35-0ubuntu3+b1" is "2.35-0ubuntu3%2Bb1", a digest's
// colon is %3A).
func escape(s string) string { return escapeKeep(s, 0) }

// escapeKeep is escape that also leaves keep alone (qualifier values keep
// their slashes: repository_url=docker.io/library/debian, as the purl
// spec's examples write them).
func escapeKeep(s string, keep byte) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~', keep != 0 && c == keep:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// DebPURL is a Debian or Ubuntu package's URL as scanners match it:
// pkg:deb/debian/libc6@2.36-9%2Bdeb12u7?arch=amd64&distro=debian-12.
func DebPURL(osID, osVersion, name, version, arch string) PURL {
	q := map[string]string{"arch": arch}
	if osID != "" && osVersion != "" {
		q["distro"] = osID + "-" + osVersion
	}
	return PURL{Type: "deb", Namespace: osID, Name: name, Version: version, Qualifiers: q}
}

// PyPIPURL is a Python distribution's URL: the name normalized (PEP 503,
// lowercase with runs of -_. as -) and the bare PEP 440 version, without
// the local label ("+cu121"), which scanners' advisories never carry.
func PyPIPURL(name, version string) PURL {
	v, _, _ := strings.Cut(version, "+")
	return PURL{Type: "pypi", Name: normalize(name), Version: v}
}

// CUDAPURL is a CUDA component found by file, which no package manager
// records: pkg:generic/nvidia/cublasLt@11.11.3.6.
func CUDAPURL(name, version string) PURL {
	return PURL{Type: "generic", Namespace: "nvidia", Name: name, Version: version}
}

// OCIPURL is an image's URL: pkg:oci/NAME@sha256%3A…?repository_url=REPO
// (NAME is the repository's last path component).
func OCIPURL(ref, digest string) PURL {
	repo := ref
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i] // a tag
	}
	name := repo
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	var q map[string]string
	if repo != name {
		q = map[string]string{"repository_url": repo}
	}
	return PURL{Type: "oci", Name: strings.ToLower(name), Version: digest, Qualifiers: q}
}

func normalize(name string) string {
	var b strings.Builder
	sep := false
	for _, c := range strings.ToLower(name) {
		if c == '-' || c == '_' || c == '.' {
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(c)
	}
	return b.String()
}

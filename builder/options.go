package builder

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/console"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/cmd/buildctl/build"
	"github.com/moby/buildkit/session/secrets/secretsprovider"
)

// BuildKit's options, parsed once where they enter (flags, gpuimg.yaml,
// publish), into BuildKit's own types where those carry no side effect:
// cache entries are client.CacheOptionsEntry and secrets
// secretsprovider.Source, as buildctl parses them. An output is Output,
// not client.ExportEntry: buildctl's parser creates the destination file
// as it parses, and a build writes a file output under a temporary name
// that it renames when the build succeeds (run.exports).

// Output is an extra build output (--output), BuildKit's CSV syntax
// parsed: type=oci,dest=FILE, type=docker,dest=FILE, type=tar,dest=FILE,
// type=local,dest=DIR, type=image,name=REF,push=true.
type Output struct {
	Type string // client.ExporterOCI, ExporterDocker, ExporterTar, ExporterLocal, ExporterImage …
	// Dest is the file or directory the output writes, "-" for standard
	// output; "" for an exporter that writes none (image).
	Dest string
	// Attrs are the exporter's other attributes (name, push, tar, …).
	Attrs map[string]string
}

// ParseOutput parses one output in BuildKit's CSV syntax (buildctl's
// --output), checking what buildctl checks: a type, no output= key, a
// destination where the exporter writes one and none where it does not.
func ParseOutput(s string) (Output, error) {
	fields, err := csv.NewReader(strings.NewReader(s)).Read()
	if err != nil {
		return Output{}, fmt.Errorf("output %q: %w", s, err)
	}
	o := Output{Attrs: map[string]string{}}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Output{}, fmt.Errorf("output %q: %q is not key=value", s, f)
		}
		switch k = strings.ToLower(k); k {
		case "type":
			o.Type = v
		case "dest":
			o.Dest = v
		case "output":
			return Output{}, fmt.Errorf("output %q: output=%s is not a key of --output; did you mean dest=%s?", s, v, v)
		default:
			o.Attrs[k] = v
		}
	}
	if o.Type == "" {
		return Output{}, fmt.Errorf("output %q: give its type=, e.g. type=oci,dest=image.tar", s)
	}
	file, dir := o.writes()
	switch {
	case dir && o.Dest == "":
		return Output{}, fmt.Errorf("output %q: the %s exporter writes a directory: give dest=DIR", s, o.Type)
	case !file && !dir && o.Dest != "":
		return Output{}, fmt.Errorf("output %q: the %s exporter writes no file; drop dest=", s, o.Type)
	}
	return o, nil
}

// ParseOutputs parses each of specs (ParseOutput).
func ParseOutputs(specs []string) ([]Output, error) {
	var out []Output
	for _, s := range specs {
		o, err := ParseOutput(s)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// writes says whether the output writes a file (a tarball: tar, and oci
// and docker unless tar=false) or a directory (local, and oci or docker
// with tar=false), as buildctl decides.
func (o Output) writes() (file, dir bool) {
	switch o.Type {
	case client.ExporterLocal:
		return false, true
	case client.ExporterTar:
		return true, false
	case client.ExporterOCI, client.ExporterDocker:
		tar, err := strconv.ParseBool(o.Attrs["tar"])
		if err != nil {
			tar = true
		}
		return tar, !tar
	}
	return false, false
}

// String is the output in BuildKit's syntax.
func (o Output) String() string {
	fields := []string{"type=" + o.Type}
	if o.Dest != "" {
		fields = append(fields, "dest="+o.Dest)
	}
	for _, k := range slices.Sorted(maps.Keys(o.Attrs)) {
		fields = append(fields, k+"="+o.Attrs[k])
	}
	return strings.Join(fields, ",")
}

// staged is the output's export entry, a file written under a temporary
// name beside Dest (partial, "" for any other output) so that a failed
// build leaves no half-written archive. The file is created when BuildKit
// starts writing it.
func (o Output) staged() (e client.ExportEntry, partial string, err error) {
	e = client.ExportEntry{Type: o.Type, Attrs: maps.Clone(o.Attrs)}
	if e.Attrs == nil {
		e.Attrs = map[string]string{}
	}
	file, dir := o.writes()
	switch {
	case dir:
		e.OutputDir = o.Dest
	case file && o.Dest == "-":
		if _, err := console.ConsoleFromFile(os.Stdout); err == nil {
			return e, "", fmt.Errorf("output %s: standard output is a terminal; give dest=FILE, or redirect it", o)
		}
		e.Output = func(map[string]string) (io.WriteCloser, error) { return nopCloser{os.Stdout}, nil }
	case file:
		if fi, err := os.Stat(o.Dest); err == nil && fi.IsDir() {
			return e, "", fmt.Errorf("output %s: %s is a directory; give a file name", o, o.Dest)
		}
		partial = filepath.Join(filepath.Dir(o.Dest), "."+filepath.Base(o.Dest)+".gpuimg-partial")
		e.Output = func(map[string]string) (io.WriteCloser, error) { return os.Create(partial) }
	}
	return e, partial, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// ParseCacheImports parses cache imports in BuildKit's syntax (buildctl's
// --import-cache: type=registry,ref=R, type=local,src=DIR …).
func ParseCacheImports(specs []string) ([]client.CacheOptionsEntry, error) {
	e, err := build.ParseImportCache(specs)
	if err != nil {
		return nil, fmt.Errorf("--cache-from: %w", err)
	}
	return e, nil
}

// ParseCacheExports parses cache exports in BuildKit's syntax (buildctl's
// --export-cache: type=registry,ref=R,mode=max, type=local,dest=DIR …).
func ParseCacheExports(specs []string) ([]client.CacheOptionsEntry, error) {
	e, err := build.ParseExportCache(specs)
	if err != nil {
		return nil, fmt.Errorf("--cache-to: %w", err)
	}
	return e, nil
}

// ParseSecret parses a BuildKit secret, id=ID,src=FILE or id=ID,env=VAR
// (buildctl's syntax; id=ID alone reads the variable ID), into the
// source the session serves. The id gpuimg's pip.conf uses is refused.
func ParseSecret(s string) (secretsprovider.Source, error) {
	src := secretsprovider.Source{}
	for f := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "id":
			src.ID = v
		case "src", "source":
			src.FilePath = v
		case "env":
			src.Env = v
		default:
			return src, fmt.Errorf("secret %q: unknown key %q (use id, src, env)", s, k)
		}
	}
	if src.ID == "" {
		return src, fmt.Errorf("secret %q: want id=ID,src=FILE or id=ID,env=VAR", s)
	}
	if err := checkSecretID(src.ID); err != nil {
		return src, err
	}
	if src.FilePath == "" && src.Env == "" {
		src.Env = src.ID
	}
	return src, nil
}

// checkSecretID refuses the id gpuimg's own pip.conf secret uses.
func checkSecretID(id string) error {
	if id == SecretPipMirror {
		return fmt.Errorf("secret id %s is reserved for gpuimg's pip mirror settings", id)
	}
	return nil
}

// ParseSecrets parses each of specs (ParseSecret).
func ParseSecrets(specs []string) ([]secretsprovider.Source, error) {
	var out []secretsprovider.Source
	for _, s := range specs {
		src, err := ParseSecret(s)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}

package validate

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/matrix"
)

// ent is one tar entry of a hostile layer: typ is tar's type flag, link a
// link's target.
type ent struct {
	name string
	typ  byte
	link string
	body string
}

func reg(name, body string) ent   { return ent{name: name, typ: tar.TypeReg, body: body} }
func dir(name string) ent         { return ent{name: name, typ: tar.TypeDir} }
func sym(name, target string) ent { return ent{name: name, typ: tar.TypeSymlink, link: target} }
func hard(name, target string) ent {
	return ent{name: name, typ: tar.TypeLink, link: target}
}

// tarOf writes entries as a tar stream, as they are given.
func tarOf(tb testing.TB, es ...ent) []byte {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			tb.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func entLayer(tb testing.TB, es ...ent) v1.Layer {
	tb.Helper()
	b := tarOf(tb, es...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// linkCase is one hostile (or harmless) arrangement of links over layers.
type linkCase struct {
	name   string
	layers [][]ent
	// unsafe are the entries that must be named, each "layer:path"; none
	// for a harmless case.
	unsafe []string
}

func linkCases() []linkCase {
	return []linkCase{
		{name: "hard link above the root", layers: [][]ent{{reg("etc/hosts", "x"), hard("shadow", "../../../etc/shadow")}}, unsafe: []string{"0:shadow"}},
		{name: "hard link with a leading slash stays inside", layers: [][]ent{{reg("etc/shadow", "x"), hard("s", "/etc/shadow")}}},
		{name: "hard link inside the root", layers: [][]ent{{reg("usr/bin/python3.11", "x"), hard("usr/bin/python3", "usr/bin/python3.11")}}},
		{name: "hard link climbing then returning", layers: [][]ent{{reg("a/x", "x"), hard("b", "a/../a/x")}}},
		{name: "symlink to /etc then a file through it", layers: [][]ent{{sym("lnk", "/etc"), reg("lnk/passwd", "root::0:0::/:/bin/sh\n")}}, unsafe: []string{"0:lnk/passwd"}},
		{name: "symlink in a lower layer, file through it in an upper one", layers: [][]ent{{sym("lnk", "/etc")}, {reg("lnk/passwd", "x")}}, unsafe: []string{"1:lnk/passwd"}},
		{name: "symlink then a directory and file through it", layers: [][]ent{{sym("usr/local", "/opt")}, {dir("usr/local/bin/"), reg("usr/local/bin/x", "x")}}, unsafe: []string{"1:usr/local/bin", "1:usr/local/bin/x"}},
		{name: "relative symlink climbing out", layers: [][]ent{{sym("a/up", "../../../../etc")}}, unsafe: []string{"0:a/up"}},
		{name: "chain of relative symlinks, the last absolute", layers: [][]ent{{sym("a", "b"), sym("b", "c/d"), dir("c/"), sym("c/d", "/root")}, {reg("a/.ssh/authorized_keys", "k")}}, unsafe: []string{"1:a/.ssh/authorized_keys"}},
		{name: "hard link through a symlink to the host", layers: [][]ent{{sym("h", "/etc"), hard("sh", "h/shadow")}}, unsafe: []string{"0:sh"}},
		{name: "symlink loop", layers: [][]ent{{sym("l1", "l2"), sym("l2", "l1"), reg("l1/x", "x")}}, unsafe: []string{"0:l1/x"}},
		{name: "merged /usr: relative symlink inside the root", layers: [][]ent{{dir("usr/lib/"), sym("lib", "usr/lib"), reg("lib/libc.so.6", "x")}}},
		{name: "absolute symlink alone is a container's business", layers: [][]ent{{sym("etc/alternatives/python", "/usr/bin/python3.11")}}},
		{name: "symlink replaced by a directory in a later layer", layers: [][]ent{{sym("lnk", "/etc")}, {dir("lnk/"), reg("lnk/passwd", "x")}}},
		{name: "symlink whited out in a later layer", layers: [][]ent{{sym("lnk", "/etc")}, {reg(".wh.lnk", ""), reg("lnk/passwd", "x")}}},
		{name: "symlink's parent made opaque in a later layer", layers: [][]ent{{dir("d/"), sym("d/lnk", "/etc")}, {dir("d/"), reg("d/.wh..wh..opq", ""), reg("d/lnk/passwd", "x")}}},
		{name: "a whiteout does not hide its own layer's symlink", layers: [][]ent{{reg(".wh.lnk", ""), sym("lnk", "/etc"), reg("lnk/passwd", "x")}}, unsafe: []string{"0:lnk/passwd"}},
		{name: "symlink re-laid after a whiteout", layers: [][]ent{{sym("lnk", "/tmp")}, {reg(".wh.lnk", "")}, {sym("lnk", "/etc")}, {reg("lnk/passwd", "x")}}, unsafe: []string{"3:lnk/passwd"}},
		{name: "parent replaced by a file removes the symlink below", layers: [][]ent{{dir("d/"), sym("d/lnk", "/etc")}, {reg("d", "file")}, {reg("d/lnk/x", "x")}}},
		{name: "name with .. (the old check)", layers: [][]ent{{reg("../../etc/cron.d/x", "x")}}, unsafe: []string{"0:../../etc/cron.d/x"}},
	}
}

// TestLinkEscapes runs each case through the walker and checks the
// entries it names, and that a harmless case names none.
func TestLinkEscapes(t *testing.T) {
	for _, c := range linkCases() {
		t.Run(c.name, func(t *testing.T) {
			var ls []v1.Layer
			for _, es := range c.layers {
				ls = append(ls, entLayer(t, es...))
			}
			_, res, err := walkAll(t, image(t, ls...), Limits{})
			must(t, err)
			var got []string
			for _, u := range res.Unsafe {
				got = append(got, itoaLayer(u.Layer)+":"+u.Name)
				if u.Name != strings.TrimPrefix(u.Name, "../") || u.Reason != "" {
					continue
				}
				t.Errorf("%s has no reason", u.Name)
			}
			if strings.Join(got, ",") != strings.Join(c.unsafe, ",") {
				t.Errorf("unsafe = %v, want %v (%+v)", got, c.unsafe, res.Unsafe)
			}
		})
	}
}

func itoaLayer(i int) string { return string(rune('0' + i)) }

// TestLinkEscapesFailTheCheck: the unsafe-paths check fails and says why,
// so validate and images import (validate.TargetCheck) refuse the image.
func TestLinkEscapesFailTheCheck(t *testing.T) {
	img := image(t,
		entLayer(t, reg("etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"), sym("lnk", "/etc")),
		entLayer(t, reg("lnk/passwd", "x"), hard("shadow", "../../../etc/shadow")),
	)
	r, err := Inspect(t.Context(), img, Options{DB: db(t)})
	must(t, err)
	c := checkNamed(r.Checks, "unsafe-paths")
	if c == nil || c.Status != matrix.Fail {
		t.Fatalf("unsafe-paths = %+v, want fail", c)
	}
	for _, want := range []string{
		`"lnk/passwd" (layer 1): its name passes through the symlink /lnk -> /etc, which leads outside the root when extracted`,
		`"shadow" (layer 1): a hard link to ../../../etc/shadow whose target climbs above the root`,
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, c.Message)
		}
	}
	if r.Verdict != matrix.Fail {
		t.Errorf("verdict = %s, want fail", r.Verdict)
	}
}

// FuzzLinkResolver: whatever the entries, the link table ends in time and
// memory linear in the input (no loop runs away), every entry it names has
// a reason, and a symlink to / laid last, with a file written through it,
// is always named. Entries are lines "KIND NAME TARGET", "---" between
// layers; KIND is tar's type flag.
func FuzzLinkResolver(f *testing.F) {
	for _, c := range linkCases() {
		var lines []string
		for i, es := range c.layers {
			if i > 0 {
				lines = append(lines, "---")
			}
			for _, e := range es {
				lines = append(lines, string(e.typ)+" "+e.name+" "+e.link)
			}
		}
		f.Add(strings.Join(lines, "\n"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		var lists [][]rec
		var cur []rec
		for line := range strings.SplitSeq(s, "\n") {
			if line == "---" {
				lists, cur = append(lists, cur), nil
				continue
			}
			kind, rest, _ := strings.Cut(line, " ")
			name, target, _ := strings.Cut(rest, " ")
			p, ok := cleanPath(name)
			if !ok || p == "" || kind == "" {
				continue
			}
			r := rec{path: p, kind: recFile}
			switch kind[0] {
			case tar.TypeDir:
				r.kind = recDir
			case tar.TypeSymlink:
				r.kind, r.link = recSymlink, target
			case tar.TypeLink:
				r.kind, r.link = recHardlink, target
			}
			cur = append(cur, r)
		}
		cur = append(cur, rec{path: "zzfuzz", kind: recSymlink, link: "/"}, rec{path: "zzfuzz/x", kind: recFile})
		lists = append(lists, cur)
		var got []Unsafe
		bounded(t, len(s), func() { got = linkEscapes(lists) })
		if len(got) == 0 || got[len(got)-1].Name != "zzfuzz/x" {
			t.Fatalf("a file written through a symlink to / was not named: %+v", got)
		}
		for _, u := range got {
			if u.Reason == "" {
				t.Fatalf("%q is named without a reason", u.Name)
			}
		}
	})
}

// typedLayer is a layer with another media type.
type typedLayer struct {
	v1.Layer
	mt types.MediaType
}

func (l typedLayer) MediaType() (types.MediaType, error) { return l.mt, nil }

// TestUnknownLayerMediaType: a layer of media type text/html (a proxy's
// error page pushed as a layer) fails layer-media-types; known types pass.
func TestUnknownLayerMediaType(t *testing.T) {
	for _, c := range []struct {
		mt   types.MediaType
		want matrix.Status
	}{
		{"text/html", matrix.Fail},
		{"application/vnd.oci.image.layer.v1.tar+bzip2", matrix.Fail},
		{types.OCILayerZStd, ""},
		{types.DockerLayer, ""},
	} {
		l := entLayer(t, reg("etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"))
		r, err := Inspect(t.Context(), image(t, typedLayer{l, c.mt}), Options{DB: db(t)})
		must(t, err)
		ch := checkNamed(r.Checks, "layer-media-types")
		switch {
		case c.want == "" && ch != nil:
			t.Errorf("%s: %+v, want no such check", c.mt, ch)
		case c.want != "" && (ch == nil || ch.Status != c.want || !strings.Contains(ch.Message, string(c.mt))):
			t.Errorf("%s: %+v, want %s naming it", c.mt, ch, c.want)
		}
	}
}

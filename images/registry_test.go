package images_test

// Fast tests of the registry verbs against go-containerregistry's
// in-process registry: no root, no daemons, a few seconds in all.

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

// newRegistry starts an in-process registry, optionally behind wrap, and
// returns its host:port.
func newRegistry(t *testing.T, wrap func(http.Handler) http.Handler, opts ...registry.Option) string {
	t.Helper()
	h := registry.New(append([]registry.Option{registry.Logger(log.New(io.Discard, "", 0))}, opts...)...)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// request is one request a registry saw.
type request struct {
	Method, Path, UserAgent string
}

// recorder wraps a registry and records every request.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (rc *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, request{r.Method, r.URL.Path, r.UserAgent()})
		rc.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (rc *recorder) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// headDigest is the digest a registry serves for ref.
func headDigest(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	d, err := remote.Head(r)
	if err != nil {
		t.Fatalf("head %s: %v", ref, err)
	}
	return d.Digest.String()
}

func digestOf(t *testing.T, x interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	d, err := x.Digest()
	must(t, err)
	return d.String()
}

// platformIndex is a two-platform index (amd64, arm64), as NVIDIA
// publishes its bases, and its images by architecture.
func platformIndex(t *testing.T) (v1.ImageIndex, map[string]v1.Image) {
	t.Helper()
	idx := v1.ImageIndex(empty.Index)
	imgs := map[string]v1.Image{}
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(1024, 2)
		must(t, err)
		cfg, err := img.ConfigFile()
		must(t, err)
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", arch
		img, err = mutate.ConfigFile(img, cfg)
		must(t, err)
		imgs[arch] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return idx, imgs
}

func TestParseRef(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    images.Ref
		str     string // String(), when it differs from in
		wantErr string
	}{
		{in: "registry.example.com/ml/torch:2.3", want: images.Ref{Transport: images.Registry, Name: "registry.example.com/ml/torch:2.3"}},
		{in: "docker://registry.example.com/ml/torch:2.3", want: images.Ref{Transport: images.Registry, Name: "registry.example.com/ml/torch:2.3"}, str: "registry.example.com/ml/torch:2.3"},
		{in: "  nvidia/cuda:12.2.2-runtime-ubuntu22.04 ", want: images.Ref{Transport: images.Registry, Name: "nvidia/cuda:12.2.2-runtime-ubuntu22.04"}, str: "nvidia/cuda:12.2.2-runtime-ubuntu22.04"},
		{in: "127.0.0.1:5000/ml/torch@sha256:" + strings.Repeat("a", 64), want: images.Ref{Transport: images.Registry, Name: "127.0.0.1:5000/ml/torch@sha256:" + strings.Repeat("a", 64)}},
		{in: "oci:/tmp/layout", want: images.Ref{Transport: images.OCI, Name: "/tmp/layout"}},
		{in: "oci:/tmp/layout:torch", want: images.Ref{Transport: images.OCI, Name: "/tmp/layout", Select: "torch"}},
		{in: "oci-archive:torch.tar", want: images.Ref{Transport: images.OCIArchive, Name: "torch.tar"}},
		{in: "docker-archive:torch.tar:ml/torch:2.3", want: images.Ref{Transport: images.DockerArchive, Name: "torch.tar", Select: "ml/torch:2.3"}},
		{in: "docker-daemon:ml/torch:dev", want: images.Ref{Transport: images.DockerDaemon, Name: "ml/torch:dev"}},
		{in: "", wantErr: "empty image reference"},
		{in: "oci:", wantErr: "oci needs a path"},
		{in: "docker-archive", wantErr: "docker-archive needs a path"},
		{in: "docker-daemon:Not A Ref", wantErr: `image "docker-daemon:Not A Ref"`},
		{in: "s3://bucket/torch", wantErr: `unknown transport "s3"`},
		{in: "registry.example.com/ML/Torch", wantErr: "is not a registry reference"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := images.ParseRef(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRef(%q) = %+v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseRef(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			str := tt.str
			if str == "" {
				str = tt.in
			}
			if got.String() != str {
				t.Errorf("String() = %q, want %q", got.String(), str)
			}
		})
	}
}

// TestCopy copies an image and a whole index to two registries at once
// (digests preserved), then again (nothing moves), and checks that each
// destination's tag is written last.
func TestCopy(t *testing.T) {
	src := newRegistry(t, nil)
	var recB recorder
	b := newRegistry(t, recB.wrap)
	c := newRegistry(t, nil)
	img, err := random.Image(4096, 3)
	must(t, err)
	idx, err := random.Index(2048, 2, 3)
	must(t, err)
	for _, tt := range []struct {
		name string
		tg   remote.Taggable
	}{{"image", img}, {"index", idx}} {
		t.Run(tt.name, func(t *testing.T) {
			want := push(t, src+"/ml/"+tt.name+":nightly", tt.tg)
			dsts := []string{b + "/ml/" + tt.name + ":stable", c + "/ml/" + tt.name + ":stable"}
			var progress images.Progress
			before := len(recB.requests())
			res, err := images.Copy(t.Context(), src+"/ml/"+tt.name+":nightly", dsts, images.WithProgress(func(p images.Progress) { progress = p }))
			must(t, err)
			if res.Digest != want || progress.Total == 0 || progress.Bytes != progress.Total {
				t.Errorf("result digest %s (want %s), progress at the end %+v", res.Digest, want, progress)
			}
			for i, d := range dsts {
				if got := headDigest(t, d); got != want {
					t.Errorf("%s serves %s, the source %s", d, got, want)
				}
				if dr := res.Destinations[i]; dr.Digest != want || dr.Blobs == 0 || dr.Present != 0 || dr.Bytes == 0 {
					t.Errorf("first copy to %s: %+v", d, dr)
				}
			}
			// Tag last: every PUT before the last one is a blob or a
			// manifest by digest; the last is the tag.
			var puts []string
			for _, r := range recB.requests()[before:] {
				if r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodPost {
					puts = append(puts, r.Path)
				}
			}
			if len(puts) < 2 || puts[len(puts)-1] != "/v2/ml/"+tt.name+"/manifests/stable" {
				t.Fatalf("writes to %s: %q; want the tag last", b, puts)
			}
			for _, p := range puts[:len(puts)-1] {
				if strings.Contains(p, "/manifests/") && !strings.Contains(p, "/manifests/sha256:") {
					t.Errorf("a tag was written before the last write: %q", puts)
				}
			}
			again, err := images.Copy(t.Context(), src+"/ml/"+tt.name+":nightly", dsts)
			must(t, err)
			for _, d := range again.Destinations {
				if d.Present != d.Blobs || d.PresentBytes != d.Bytes {
					t.Errorf("second copy to %s moved blobs again: %+v", d.Ref, d)
				}
			}
		})
	}

	t.Run("platform", func(t *testing.T) {
		pidx, byArch := platformIndex(t)
		push(t, src+"/ml/multi:nightly", pidx)
		res, err := images.Copy(t.Context(), src+"/ml/multi:nightly", []string{b + "/ml/multi:arm64"}, images.WithPlatform(&v1.Platform{OS: "linux", Architecture: "arm64"}))
		must(t, err)
		want := digestOf(t, byArch["arm64"])
		if got := headDigest(t, b+"/ml/multi:arm64"); got != want || res.Digest != want {
			t.Errorf("copied %s (result %s), want the arm64 image %s", got, res.Digest, want)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		push(t, src+"/ml/dry:nightly", img)
		res, err := images.Copy(t.Context(), src+"/ml/dry:nightly", []string{b + "/dry/torch:1"}, images.WithDryRun(true))
		must(t, err)
		if !res.DryRun || res.Destinations[0].Blobs != 4 || res.Destinations[0].Bytes < 3*4096 {
			t.Errorf("dry run: %+v", res.Destinations[0])
		}
		r, _ := name.ParseReference(b+"/dry/torch:1", name.Insecure)
		if _, err := remote.Head(r); err == nil {
			t.Error("a dry run wrote a tag")
		}
	})

	t.Run("read source once", func(t *testing.T) {
		var rec recorder
		once := newRegistry(t, rec.wrap)
		img, err := random.Image(4096, 3) // blobs no destination has
		must(t, err)
		push(t, once+"/ml/torch:nightly", img)
		dsts := []string{b + "/once/torch:1", c + "/once/torch:1"}
		_, err = images.Copy(t.Context(), once+"/ml/torch:nightly", dsts, images.WithReadSourceOnce(true), images.WithTempDir(t.TempDir()))
		must(t, err)
		gets := map[string]int{}
		for _, r := range rec.requests() {
			if r.Method == http.MethodGet && strings.Contains(r.Path, "/blobs/") {
				gets[r.Path]++
			}
		}
		layers, _ := img.Layers()
		for _, l := range layers {
			if n := gets["/v2/ml/torch/blobs/"+digestOf(t, l)]; n != 1 {
				t.Errorf("layer read %d times from the source for two destinations, want once", n)
			}
		}
		for _, d := range dsts {
			if got := headDigest(t, d); got != digestOf(t, img) {
				t.Errorf("%s: %s", d, got)
			}
		}
	})

	t.Run("missing source", func(t *testing.T) {
		_, err := images.Copy(t.Context(), src+"/ml/none:1", []string{b + "/ml/none:1"})
		if err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("copy of a missing image: %v", err)
		}
		if _, err := images.Copy(t.Context(), src+"/ml/none:1", nil); err == nil {
			t.Error("copy without a destination succeeded")
		}
	})
}

func TestExport(t *testing.T) {
	reg := newRegistry(t, nil)
	img, err := random.Image(2048, 2)
	must(t, err)
	pidx, byArch := platformIndex(t)
	push(t, reg+"/ml/torch:2.3", img)
	push(t, reg+"/ml/multi:2.3", pidx)
	arm := &v1.Platform{OS: "linux", Architecture: "arm64"}
	for _, tt := range []struct {
		src    string
		format images.Format
		pl     *v1.Platform
		want   string // the result's digest
		open   string // the digest Open reads back (arm64 from an index)
	}{
		{"/ml/torch:2.3", images.FormatOCI, nil, digestOf(t, img), digestOf(t, img)},
		{"/ml/torch:2.3", images.FormatOCIArchive, nil, digestOf(t, img), digestOf(t, img)},
		{"/ml/torch:2.3", images.FormatDockerArchive, nil, digestOf(t, img), ""},
		{"/ml/multi:2.3", images.FormatOCI, arm, digestOf(t, pidx), digestOf(t, byArch["arm64"])},
		{"/ml/multi:2.3", images.FormatOCIArchive, arm, digestOf(t, pidx), digestOf(t, byArch["arm64"])},
		{"/ml/multi:2.3", images.FormatDockerArchive, arm, digestOf(t, byArch["arm64"]), ""},
	} {
		t.Run(tt.src+" "+string(tt.format), func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "out")
			res, err := images.Export(t.Context(), reg+tt.src, dest, tt.format, images.WithPlatform(tt.pl))
			must(t, err)
			if res.Digest != tt.want || res.Format != tt.format || res.Size == 0 {
				t.Errorf("result %+v, want digest %s", res, tt.want)
			}
			ref, err := images.ParseRef(string(tt.format) + ":" + dest)
			must(t, err)
			o, err := images.Open(t.Context(), ref, images.WithPlatform(tt.pl), images.WithTempDir(t.TempDir()))
			must(t, err)
			defer o.Close()
			cfg, err := o.Image.ConfigName()
			must(t, err)
			src := img
			if tt.pl != nil {
				src = byArch["arm64"]
			}
			if wantCfg, _ := src.ConfigName(); cfg != wantCfg {
				t.Errorf("read back config %s, want %s", cfg, wantCfg)
			}
			if tt.open != "" && o.Digest != tt.open {
				t.Errorf("read back %s, want %s", o.Digest, tt.open)
			}
			if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*")); len(matches) != 0 {
				t.Errorf("temporary files left: %q", matches)
			}
		})
	}
	dest := filepath.Join(t.TempDir(), "exists")
	must(t, os.WriteFile(dest, nil, 0o644))
	if _, err := images.Export(t.Context(), reg+"/ml/torch:2.3", dest, images.FormatOCIArchive); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("export over a file: %v", err)
	}
	if _, err := images.Export(t.Context(), reg+"/ml/torch:2.3", dest+"2", "squashfs"); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestConvert(t *testing.T) {
	reg := newRegistry(t, nil)
	img, err := random.Image(8192, 2)
	must(t, err)
	cfg, err := img.ConfigFile()
	must(t, err)
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{"dev.gpuimg.stack": "{}"}
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	push(t, reg+"/ml/torch:2.3", img)
	srcDiffIDs := diffIDs(t, img)
	for _, tt := range []struct {
		comp    matrix.Compression
		mt      types.MediaType
		sameIDs bool // the uncompressed tars are unchanged
	}{
		{matrix.CompressionZstd, types.OCILayerZStd, true},
		{matrix.CompressionGzip, types.OCILayer, true},
		{matrix.CompressionEstargz, types.OCILayer, false},
	} {
		t.Run(string(tt.comp), func(t *testing.T) {
			dst := reg + "/ml/torch:2.3-" + string(tt.comp)
			res, err := images.Convert(t.Context(), reg+"/ml/torch:2.3", dst, tt.comp, images.WithTempDir(t.TempDir()))
			must(t, err)
			if res.Layers != 2 || res.SizeBefore == 0 || res.SizeAfter == 0 || res.Digest != headDigest(t, dst) {
				t.Errorf("result %+v", res)
			}
			r, _ := name.ParseReference(dst, name.Insecure)
			out, err := remote.Image(r)
			must(t, err)
			layers, err := out.Layers()
			must(t, err)
			for _, l := range layers {
				if mt, _ := l.MediaType(); mt != tt.mt {
					t.Errorf("layer media type %s, want %s", mt, tt.mt)
				}
			}
			m, err := out.Manifest()
			must(t, err)
			if _, ok := m.Layers[0].Annotations["containerd.io/snapshot/stargz/toc.digest"]; ok != (tt.comp == matrix.CompressionEstargz) {
				t.Errorf("eStargz TOC annotation present: %v", ok)
			}
			if got := diffIDs(t, out); (strings.Join(got, ",") == strings.Join(srcDiffIDs, ",")) != tt.sameIDs {
				t.Errorf("diff IDs %v, source %v", got, srcDiffIDs)
			}
			oc, err := out.ConfigFile()
			must(t, err)
			if oc.Config.Labels["dev.gpuimg.stack"] != "{}" || len(oc.History) != len(cfg.History) {
				t.Errorf("the configuration was not kept: labels %v, %d history entries", oc.Config.Labels, len(oc.History))
			}
		})
	}
	if _, err := images.Convert(t.Context(), reg+"/ml/torch:2.3", reg+"/ml/torch:x", "lz4"); err == nil || !strings.Contains(err.Error(), "unknown compression") {
		t.Errorf("unknown compression: %v", err)
	}
}

func diffIDs(t *testing.T, img v1.Image) []string {
	t.Helper()
	cfg, err := img.ConfigFile()
	must(t, err)
	var out []string
	for _, d := range cfg.RootFS.DiffIDs {
		out = append(out, d.String())
	}
	return out
}

// TestListDelete lists tags newest first with their stack summaries, and
// deletes by tag.
func TestListDelete(t *testing.T) {
	reg := newRegistry(t, nil)
	stack, err := json.Marshal(map[string]any{"cuda": "12.2.2", "python": "3.10", "os": "ubuntu22.04", "frameworks": map[string]any{"torch": map[string]string{"version": "2.3.1"}}})
	must(t, err)
	for i, tag := range []string{"old", "new"} {
		img, err := random.Image(1024, 1)
		must(t, err)
		cfg, _ := img.ConfigFile()
		cfg = cfg.DeepCopy()
		cfg.Created = v1.Time{Time: time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)}
		if tag == "new" {
			cfg.Config.Labels = map[string]string{"dev.gpuimg.stack": string(stack)}
		}
		img, err = mutate.ConfigFile(img, cfg)
		must(t, err)
		push(t, reg+"/ml/torch:"+tag, img)
	}
	tags, err := images.List(t.Context(), reg+"/ml/torch")
	must(t, err)
	if len(tags) != 2 || tags[0].Tag != "new" || tags[1].Tag != "old" {
		t.Fatalf("tags %+v, want new then old", tags)
	}
	if tags[0].Stack != "cuda12.2.2-torch2.3.1-py3.10 ubuntu22.04" || tags[1].Stack != "" || tags[0].Size == 0 || tags[0].Digest != headDigest(t, reg+"/ml/torch:new") {
		t.Errorf("tags %+v", tags)
	}

	d, err := images.Delete(t.Context(), reg+"/ml/torch:old")
	must(t, err)
	if d != tags[1].Digest {
		t.Errorf("deleted %s, want %s", d, tags[1].Digest)
	}
	r, _ := name.ParseReference(reg+"/ml/torch@"+d, name.Insecure)
	if _, err := remote.Head(r); err == nil {
		t.Error("the deleted manifest is still served")
	}
	if _, err := images.Delete(t.Context(), reg+"/ml/torch:gone"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("delete of a missing tag: %v", err)
	}
	if _, err := images.List(t.Context(), reg+"/ml/none"); err == nil {
		t.Error("listing a missing repository succeeded")
	}
}

// TestReferrersPromote attaches reports and promotes on them, on a
// registry with the referrers API and on one without (the tag fallback).
func TestReferrersPromote(t *testing.T) {
	for _, referrersAPI := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "tag fallback"}[referrersAPI], func(t *testing.T) {
			reg := newRegistry(t, nil, registry.WithReferrersSupport(referrersAPI))
			img, err := random.Image(1024, 1)
			must(t, err)
			digest := push(t, reg+"/ml/torch:nightly", img)
			ref := reg + "/ml/torch:nightly"

			_, err = images.Promote(t.Context(), ref, "stable", func(images.Attached) (bool, string) { return true, "" })
			if !errors.Is(err, images.ErrNotPromoted) || !strings.Contains(err.Error(), "has no gpuimg validation report attached") {
				t.Fatalf("promote without reports: %v", err)
			}

			ann := map[string]string{images.AnnotationKind: "static", images.AnnotationVerdict: "fail"}
			art, err := images.Attach(t.Context(), ref, images.ReportArtifactType, []byte(`{"verdict":"fail"}`), ann)
			must(t, err)
			// Another artifact type is not a report.
			_, err = images.Attach(t.Context(), ref, "application/vnd.example.sbom+json", []byte(`{}`), nil)
			must(t, err)
			dig, reports, err := images.Referrers(t.Context(), ref, images.ReportArtifactType)
			must(t, err)
			if dig.DigestStr() != digest || len(reports) != 1 || reports[0].Digest != art || string(reports[0].Payload) != `{"verdict":"fail"}` || reports[0].Annotations[images.AnnotationVerdict] != "fail" {
				t.Fatalf("referrers of %s: %s %+v", digest, dig, reports)
			}

			accept := func(a images.Attached) (bool, string) {
				if a.Annotations[images.AnnotationVerdict] == "pass" {
					return true, "passed"
				}
				return false, "failed"
			}
			_, err = images.Promote(t.Context(), ref, "stable", accept)
			if !errors.Is(err, images.ErrNotPromoted) || !strings.Contains(err.Error(), "report "+art[:19]+": failed") {
				t.Fatalf("promote on a failed report: %v", err)
			}
			r, _ := name.ParseReference(reg+"/ml/torch:stable", name.Insecure)
			if _, err := remote.Head(r); err == nil {
				t.Fatal("a refused promotion wrote the tag")
			}

			ann[images.AnnotationVerdict] = "pass"
			_, err = images.Attach(t.Context(), ref, images.ReportArtifactType, []byte(`{"verdict":"pass"}`), ann)
			must(t, err)
			msg, err := images.Promote(t.Context(), ref, "stable", accept)
			must(t, err)
			if got := headDigest(t, reg+"/ml/torch:stable"); got != digest || !strings.Contains(msg, "passed") {
				t.Errorf("promoted: %s; stable is %s, want %s", msg, got, digest)
			}
		})
	}
}

// TestOpenRegistry reads one platform of an index.
func TestOpenRegistry(t *testing.T) {
	reg := newRegistry(t, nil)
	pidx, byArch := platformIndex(t)
	push(t, reg+"/ml/multi:1", pidx)
	for _, arch := range []string{"", "amd64", "arm64"} {
		var opts []images.Option
		want := "amd64"
		if arch != "" {
			opts = append(opts, images.WithPlatform(&v1.Platform{OS: "linux", Architecture: arch}))
			want = arch
		}
		o, err := images.Open(t.Context(), images.Ref{Transport: images.Registry, Name: reg + "/ml/multi:1"}, opts...)
		must(t, err)
		if o.Digest != digestOf(t, byArch[want]) || o.Platform != "linux/"+want {
			t.Errorf("platform %q: opened %s (%s), want %s", arch, o.Digest, o.Platform, want)
		}
		o.Close()
	}
}

// TestListTagKinds lists a repository that holds, beside an image and an
// index, what cosign v2 and the referrers tag fallback keep beside a
// digest: each is marked, none is hidden.
func TestListTagKinds(t *testing.T) {
	reg := newRegistry(t, nil, registry.WithReferrersSupport(false))
	img, err := random.Image(1024, 1)
	must(t, err)
	digest := push(t, reg+"/ml/torch:2.3", img)
	idx, err := random.Index(512, 1, 1)
	must(t, err)
	r, err := name.ParseReference(reg+"/ml/torch:multi", name.Insecure)
	must(t, err)
	must(t, remote.WriteIndex(r, idx))
	tag := strings.Replace(digest, ":", "-", 1)
	for _, suffix := range []string{".sig", ".att", ".sbom"} {
		s, err := random.Image(256, 1)
		must(t, err)
		push(t, reg+"/ml/torch:"+tag+suffix, s)
	}
	fallback, err := name.ParseReference(reg+"/ml/torch:"+tag, name.Insecure)
	must(t, err)
	must(t, remote.WriteIndex(fallback, empty.Index))
	tags, err := images.List(t.Context(), reg+"/ml/torch")
	must(t, err)
	want := map[string]images.TagKind{"2.3": images.KindImage, "multi": images.KindIndex, tag + ".sig": images.KindSignature,
		tag + ".att": images.KindAttestation, tag + ".sbom": images.KindSBOM, tag: images.KindReferrers}
	got := map[string]images.TagKind{}
	for _, ti := range tags {
		got[ti.Tag] = ti.Kind
	}
	for tg, k := range want {
		if got[tg] != k {
			t.Errorf("tag %s: kind %q, want %q", tg, got[tg], k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

// TestProgressReportsReads reads every layer of an opened image, as
// validate, sbom, export and convert do, and copies it: the progress
// function sees every compressed byte and every layer, and a push's bytes.
func TestProgressReportsReads(t *testing.T) {
	reg := newRegistry(t, nil)
	img, err := random.Image(64<<10, 3)
	must(t, err)
	push(t, reg+"/ml/torch:2.3", img)
	var last images.Progress
	calls := 0
	o, err := images.Open(t.Context(), images.Ref{Transport: images.Registry, Name: reg + "/ml/torch:2.3"}, images.WithProgress(func(p images.Progress) { last = p; calls++ }))
	must(t, err)
	ls, err := o.Image.Layers()
	must(t, err)
	for _, l := range ls {
		rc, err := l.Uncompressed()
		must(t, err)
		_, err = io.Copy(io.Discard, rc)
		must(t, err)
		must(t, rc.Close())
	}
	if last.Layers != 3 || last.LayersDone != 3 || last.Total == 0 || last.Bytes != last.Total || calls < 3 {
		t.Errorf("after reading every layer: %+v in %d calls", last, calls)
	}
	last = images.Progress{}
	_, err = images.Copy(t.Context(), reg+"/ml/torch:2.3", []string{reg + "/ml/mirror:2.3"}, images.WithProgress(func(p images.Progress) { last = p }))
	must(t, err)
	if last.Total == 0 || last.Bytes != last.Total {
		t.Errorf("after a copy: %+v", last)
	}
}

// TestExportProgressCountsEveryPlatform: an export reports its layer
// reads; of a whole index (the OCI formats) every platform's layers
// count, each distinct layer once, and all are done at the end; a
// docker-archive counts the one platform it writes; a single image its
// own layers.
func TestExportProgressCountsEveryPlatform(t *testing.T) {
	reg := newRegistry(t, nil)
	idx, err := random.Index(2048, 3, 2) // 2 images of 3 layers
	must(t, err)
	push(t, reg+"/ml/multi:1", idx)
	img, err := random.Image(2048, 4)
	must(t, err)
	push(t, reg+"/ml/single:1", img)
	for _, tt := range []struct {
		src    string
		format images.Format
		layers int
	}{
		{reg + "/ml/multi:1", images.FormatOCIArchive, 6},
		{reg + "/ml/multi:1", images.FormatOCI, 6},
		{reg + "/ml/single:1", images.FormatOCIArchive, 4},
		{reg + "/ml/single:1", images.FormatDockerArchive, 4},
	} {
		var last images.Progress
		dest := filepath.Join(t.TempDir(), "out")
		_, err := images.Export(t.Context(), tt.src, dest, tt.format, images.WithProgress(func(p images.Progress) { last = p }))
		must(t, err)
		if last.Layers != tt.layers || last.LayersDone != tt.layers || last.Total == 0 || last.Bytes != last.Total {
			t.Errorf("export %s as %s: last progress %+v, want %d layers, all read", tt.src, tt.format, last, tt.layers)
		}
	}
}

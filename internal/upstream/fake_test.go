package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

// fakeUpstream serves, on loopback, PyTorch's wheel index in its real
// layout (an all-variants page per project whose hrefs point at
// /whl/cuXYZ/NAME-VER%2BcuXYZ-….whl#sha256=…, with data-dist-info-metadata
// and data-core-metadata attributes, and the .metadata file beside each
// wheel), PyPI's JSON API (info/releases/urls) and NVIDIA's redist
// directory with redistrib_X.Y.Z.json manifests. It mirrors what a DB
// already has, so that whatever a test adds is all the updater may find.
type fakeUpstream struct {
	t     *testing.T
	srv   *httptest.Server
	files map[string][]byte
	// links are the anchors of each project page (torch, torchvision, …);
	// a link's metadata hash is computed when the page is served, from
	// the file then held.
	links map[string][]link
	// badHash makes the page give a wrong hash for metadata paths in it.
	badHash map[string]bool
	// noRange makes wheels be served whole, Range ignored.
	noRange  bool
	mu       sync.Mutex
	served   int64 // wheel body bytes sent
	inflight sync.WaitGroup
}

// wheelBytes is the number of wheel body bytes sent, once every wheel
// request in flight has finished (a client can have read a whole body
// before its handler returns).
func (f *fakeUpstream) wheelBytes() int64 {
	f.inflight.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// link is one anchor: raw HTML, or a wheel whose metadata is served at
// mdPath.
type link struct {
	raw, href, name, mdPath string
	// bare links carry no metadata attributes (pages written before PEP 658).
	bare bool
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	f := &fakeUpstream{t: t, files: map[string][]byte{}, links: map[string][]link{}, badHash: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	for _, prefix := range []string{"/whl/", "/simple/"} {
		if !strings.HasPrefix(r.URL.Path, prefix) || strings.Count(r.URL.Path, "/") != 3 || !strings.HasSuffix(r.URL.Path, "/") {
			continue
		}
		key := strings.Trim(strings.TrimPrefix(r.URL.Path, "/whl/"), "/")
		if prefix == "/simple/" {
			key = strings.TrimPrefix(r.URL.Path, "/")
		}
		if links, ok := f.links[key]; ok {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for %s</h1>\n", strings.TrimSuffix(strings.TrimPrefix(key, "simple/"), "/"))
			for _, l := range links {
				if l.raw != "" {
					fmt.Fprintf(w, "    %s<br/>\n", l.raw)
					continue
				}
				if l.bare {
					fmt.Fprintf(w, "    <a href=\"%s\">%s</a><br/>\n", l.href, l.name)
					continue
				}
				h := sha(f.files[l.mdPath])
				if f.badHash[l.mdPath] {
					h = sha([]byte("something else"))
				}
				fmt.Fprintf(w, "    <a href=\"%s\" data-dist-info-metadata=\"sha256=%s\" data-core-metadata=\"sha256=%s\">%s</a><br/>\n", l.href, h, h, l.name)
			}
			fmt.Fprint(w, "  </body>\n</html>\n")
			return
		}
	}
	b, ok := f.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, ".whl") {
		// Wheels are served as a CDN serves them: Range honoured, unless
		// the test says otherwise; every body byte sent is counted.
		f.inflight.Add(1)
		defer f.inflight.Done()
		cw := &countingWriter{ResponseWriter: w}
		if f.noRange {
			r.Header.Del("Range")
		}
		http.ServeContent(cw, r, "", time.Time{}, bytes.NewReader(b))
		f.mu.Lock()
		f.served += cw.n
		f.mu.Unlock()
		return
	}
	if strings.HasSuffix(r.URL.Path, ".json") {
		w.Header().Set("Content-Type", "application/json")
	}
	_, _ = w.Write(b) // the client sees a short body if this fails
}

func (f *fakeUpstream) torchURL() string  { return f.srv.URL + "/whl" }
func (f *fakeUpstream) pypiURL() string   { return f.srv.URL }
func (f *fakeUpstream) redistURL() string { return f.srv.URL + "/compute/cuda/redist" }

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// addWheel lists one wheel on project's page and serves its metadata.
// local is the variant (cu128, cpu); requires are Requires-Dist lines.
func (f *fakeUpstream) addWheel(project, version, local, py, platform string, requires ...string) string {
	full := version
	if local != "" {
		full += "+" + local
	}
	name := fmt.Sprintf("%s-%s-%s-%s-%s.whl", project, full, py, py, platform)
	dir := "/whl/" + cmpOr(local, "cpu") + "/"
	path := dir + name
	var md strings.Builder
	fmt.Fprintf(&md, "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: test wheel\nRequires-Python: >=3.10.0\n", project, full)
	for _, r := range requires {
		fmt.Fprintf(&md, "Requires-Dist: %s\n", r)
	}
	md.WriteString("\nA long description that is not a header: like this.\n")
	f.files[path+".metadata"] = []byte(md.String())
	href := dir + strings.ReplaceAll(url.PathEscape(name), "+", "%2B") + "#sha256=" + sha([]byte(name))
	f.links[project] = append(f.links[project], link{href: href, name: name, mdPath: path + ".metadata"})
	return path
}

// addPyPITorch lists one torch wheel on PyPI's simple page
// (/simple/torch/) as PyPI lists it: no local label, the file under
// /packages/…, its core metadata beside it. requires are Requires-Dist
// lines.
func (f *fakeUpstream) addPyPITorch(version, py, platform string, requires ...string) string {
	const project = "torch"
	name := fmt.Sprintf("%s-%s-%s-%s-%s.whl", project, version, py, py, platform)
	path := "/packages/" + sha([]byte(name))[:2] + "/" + sha([]byte(name))[2:4] + "/" + name
	var md strings.Builder
	fmt.Fprintf(&md, "Metadata-Version: 2.4\nName: %s\nVersion: %s\nSummary: test wheel\nRequires-Python: >=3.10.0\n", project, version)
	for _, r := range requires {
		fmt.Fprintf(&md, "Requires-Dist: %s\n", r)
	}
	f.files[path+".metadata"] = []byte(md.String())
	href := f.srv.URL + path + "#sha256=" + sha([]byte(name))
	key := "simple/" + project + "/"
	f.links[key] = append(f.links[key], link{href: href, name: name, mdPath: path + ".metadata"})
	return path
}

// pypiRuntime is the CUDA runtime requirement a PyPI torch wheel built
// for cuda has, in the shape of its CUDA major: nvidia-cuda-runtime-cu12
// up to 12, the cuda-toolkit metapackage from 13.
func pypiRuntime(cuda matrix.Version) string {
	if cuda.Major() >= 13 {
		return fmt.Sprintf(`cuda-toolkit[cublas,cudart,nvtx]==%s.2; platform_system == "Linux"`, cuda.Trunc(2))
	}
	return fmt.Sprintf(`nvidia-cuda-runtime-cu%d==%s.77; platform_system == "Linux" and platform_machine == "x86_64"`, cuda.Major(), cuda.Trunc(2))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// mirrorTorch lists every torch release of db with its variants (and a
// cpu wheel each), so that the page offers nothing db lacks.
func (f *fakeUpstream) mirrorTorch(db *matrix.DB) {
	for _, t := range db.Torch {
		f.addWheel("torch", t.Version.String(), "cpu", "cp312", "manylinux_2_28_x86_64")
		for _, v := range t.Variants {
			f.addWheel("torch", t.Version.String(), "cu"+cudaTagOf(v.CUDA), "cp312", "manylinux_2_28_x86_64")
		}
	}
	// An old release below the data's floor is out of scope.
	f.addWheel("torch", "1.0.0", "cu90", "cp37", "linux_x86_64")
	f.mirrorTorchPyPI(db)
}

// mirrorTorchPyPI lists on PyPI's simple page, for every torch release of
// db that flags PyPI's variant, a Linux x86_64 wheel requiring that
// variant's CUDA runtime (and an aarch64 one without it), so that PyPI
// says nothing db does not.
func (f *fakeUpstream) mirrorTorchPyPI(db *matrix.DB) {
	f.addPyPITorch("1.0.0", "cp37", "manylinux1_x86_64")
	for _, t := range db.Torch {
		for _, v := range t.Variants {
			if v.PyPI {
				f.addPyPITorch(t.Version.String(), "cp312", "manylinux_2_28_x86_64", "filelock", pypiRuntime(v.CUDA))
				f.addPyPITorch(t.Version.String(), "cp312", "manylinux_2_28_aarch64", "filelock")
			}
		}
	}
}

func cudaTagOf(v matrix.Version) string { return fmt.Sprintf("%d%d", v.Major(), v.Minor()) }

// addPyPI serves GET /pypi/NAME/json (all releases) and
// /pypi/NAME/VERSION/json for each release with its requires_dist.
func (f *fakeUpstream) addPyPI(name string, releases map[string][]string) {
	f.addPyPIFiles(name, releases, func(v string) []string {
		return []string{strings.ReplaceAll(name, "-", "_") + "-" + v + "-py3-none-any.whl"}
	})
}

// addPyPIFiles is addPyPI with each release's file names given.
func (f *fakeUpstream) addPyPIFiles(name string, releases map[string][]string, filenames func(v string) []string) {
	type file struct {
		Filename    string            `json:"filename"`
		PackageType string            `json:"packagetype"`
		UploadTime  string            `json:"upload_time_iso_8601"`
		URL         string            `json:"url"`
		Yanked      bool              `json:"yanked"`
		Digests     map[string]string `json:"digests"`
	}
	type info struct {
		Name           string   `json:"name"`
		Version        string   `json:"version"`
		RequiresPython string   `json:"requires_python"`
		RequiresDist   []string `json:"requires_dist"`
		Summary        string   `json:"summary"`
	}
	all := map[string][]file{}
	var newest string
	for v, reqs := range releases {
		var fls []file
		for _, fn := range filenames(v) {
			fls = append(fls, file{Filename: fn, PackageType: "bdist_wheel", UploadTime: "2026-11-01T00:00:00.000000Z",
				URL: "https://files.example/" + fn, Digests: map[string]string{"sha256": sha([]byte(fn))}})
		}
		all[v] = fls
		b, _ := json.Marshal(map[string]any{
			"info":            info{Name: name, Version: v, RequiresPython: ">=3.11", RequiresDist: reqs, Summary: "test"},
			"last_serial":     1,
			"urls":            fls,
			"vulnerabilities": []any{},
		})
		f.files["/pypi/"+name+"/"+v+"/json"] = b
		if pv, err := matrix.ParseVersion(v); err == nil && (newest == "" || matrix.MustVersion(newest).Less(pv)) {
			newest = v
		}
	}
	b, _ := json.Marshal(map[string]any{
		"info":     info{Name: name, Version: newest, RequiresPython: ">=3.11", RequiresDist: releases[newest]},
		"releases": all,
		"urls":     all[newest],
	})
	f.files["/pypi/"+name+"/json"] = b
}

// mirrorJAX lists db's jax releases, plus an old one and a pre-release
// that are out of scope.
func (f *fakeUpstream) mirrorJAX(db *matrix.DB, extra map[string][]string) {
	rel := map[string][]string{"0.1.0": nil, "99.0.0rc1": nil}
	for _, j := range db.JAX {
		rel[j.Version.String()] = nil
	}
	maps.Copy(rel, extra)
	f.addPyPI("jax", rel)
}

// addRedistrib serves a manifest in NVIDIA's schema: release_* strings at
// the top level next to one object per component.
func (f *fakeUpstream) addRedistrib(version, date, cudart, driver string) {
	comp := func(name, ver, path string) map[string]any {
		return map[string]any{
			"name": name, "license": "CUDA Toolkit", "license_path": path + "/LICENSE.txt", "version": ver,
			"linux-x86_64": map[string]any{"relative_path": fmt.Sprintf("%s/linux-x86_64/%s-linux-x86_64-%s-archive.tar.xz", path, path, ver), "sha256": sha([]byte(path + ver)), "md5": "0", "size": "828300"},
			"linux-sbsa":   map[string]any{"relative_path": fmt.Sprintf("%s/linux-sbsa/%s-linux-sbsa-%s-archive.tar.xz", path, path, ver), "sha256": sha([]byte(path + ver + "sbsa")), "md5": "0", "size": "828300"},
		}
	}
	m := map[string]any{
		"release_date": date, "release_label": version, "release_product": "cuda",
		"cuda_cudart": comp("CUDA Runtime (cudart)", cudart, "cuda_cudart"),
		"cuda_nvcc":   comp("CUDA NVCC", cudart, "cuda_nvcc"),
	}
	if driver != "" {
		m["nvidia_driver"] = comp("NVIDIA Linux Driver", driver, "nvidia_driver")
	}
	b, _ := json.MarshalIndent(m, "", "    ")
	f.files["/compute/cuda/redist/redistrib_"+version+".json"] = b
}

// mirrorCUDA writes the redist directory listing: db's releases, an old
// one below the floor, and extra versions (served by addRedistrib).
func (f *fakeUpstream) mirrorCUDA(db *matrix.DB, extra ...string) {
	var b strings.Builder
	b.WriteString("<html>\n<head><title>Index of /compute/cuda/redist/</title></head>\n<body>\n<h1>Index of /compute/cuda/redist/</h1><hr><pre><a href=\"../\">../</a>\n")
	vs := []string{"10.0.130"}
	for _, c := range db.CUDA {
		vs = append(vs, c.Version.String())
	}
	vs = append(vs, extra...)
	slices.Sort(vs)
	for _, v := range vs {
		fmt.Fprintf(&b, "<a href=\"redistrib_%s.json\">redistrib_%s.json</a>     01-Oct-2026 12:00    41234\n", v, v)
	}
	b.WriteString("<a href=\"cuda_cudart/\">cuda_cudart/</a>\n</pre><hr></body>\n</html>\n")
	f.files["/compute/cuda/redist/"] = []byte(b.String())
}

// tfWheels are a tensorflow release's files as PyPI lists them: CPython
// wheels for Linux x86_64 and aarch64, macOS and Windows.
func tfWheels(v string) []string {
	var out []string
	for _, py := range []string{"cp310", "cp311", "cp312", "cp313"} {
		out = append(out,
			fmt.Sprintf("tensorflow-%s-%s-%s-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", v, py, py),
			fmt.Sprintf("tensorflow-%s-%s-%s-manylinux_2_17_aarch64.manylinux2014_aarch64.whl", v, py, py),
			fmt.Sprintf("tensorflow-%s-%s-%s-macosx_12_0_arm64.whl", v, py, py),
			fmt.Sprintf("tensorflow-%s-%s-%s-win_amd64.whl", v, py, py))
	}
	// A newer CPython only for macOS does not widen the Linux range.
	return append(out, fmt.Sprintf("tensorflow-%s-cp314-cp314-macosx_12_0_arm64.whl", v))
}

// mirrorTensorFlow lists db's tensorflow releases, an old one below the
// floor and a pre-release, plus extra ones with their Requires-Dist.
func (f *fakeUpstream) mirrorTensorFlow(db *matrix.DB, extra map[string][]string) {
	rel := map[string][]string{"2.0.0": nil, "99.0.0rc0": nil}
	for _, r := range db.TensorFlow {
		rel[r.Version.String()] = nil
	}
	maps.Copy(rel, extra)
	f.addPyPIFiles("tensorflow", rel, tfWheels)
}

// tfAndCUDA is a tensorflow release's Requires-Dist as PyPI gives it:
// plain requirements and the and-cuda extra's nvidia-* pins (cuDNN as a
// range, as the requirements of TensorFlow's master branch give it).
func tfAndCUDA(cuda, cudnn, nccl string) []string {
	return []string{
		"absl-py>=1.0.0",
		"numpy<2.2.0,>=1.26.0",
		`tensorflow-io-gcs-filesystem>=0.23.1; python_version < "3.12"`,
		`nvidia-cublas-cu12==12.5.3.2; extra == "and-cuda"`,
		`nvidia-cuda-cupti-cu12==` + cuda + `; extra == "and-cuda"`,
		`nvidia-cuda-nvcc-cu12==` + cuda + `; extra == "and-cuda"`,
		`nvidia-cuda-runtime-cu12==` + cuda + `; extra == "and-cuda"`,
		`nvidia-cudnn-cu12<10.0,>=` + cudnn + `; extra == "and-cuda"`,
		`nvidia-nccl-cu12==` + nccl + `; extra == "and-cuda"`,
	}
}

// addCuDNNRedistrib serves a cuDNN manifest in NVIDIA's schema (as
// redistrib_9.27.0.json): release_* strings, then cudnn, cudnn_jit and
// cudnn_samples components, platforms keyed by CUDA variant.
func (f *fakeUpstream) addCuDNNRedistrib(label, build, date string, majors ...string) {
	variants := func(comp, plat string) map[string]any {
		m := map[string]any{}
		for _, mj := range majors {
			m["cuda"+mj] = map[string]any{
				"relative_path": fmt.Sprintf("%s/%s/%s-%s-%s_cuda%s-archive.tar.xz", comp, plat, comp, plat, build, mj),
				"sha256":        sha([]byte(comp + plat + mj)), "md5": "0", "size": "1012666264",
			}
		}
		return m
	}
	comp := func(name, key string) map[string]any {
		return map[string]any{"name": name, "license": "cudnn", "license_path": key + "/LICENSE.txt", "version": build,
			"linux-x86_64": variants(key, "linux-x86_64"), "cuda_variant": majors, "linux-sbsa": variants(key, "linux-sbsa"),
			"windows-x86_64": variants(key, "windows-x86_64")}
	}
	m := map[string]any{
		"release_date": date, "release_label": label, "release_product": "cudnn",
		"cudnn":     comp("NVIDIA CUDA Deep Neural Network library", "cudnn"),
		"cudnn_jit": comp("NVIDIA CUDA Deep Neural Network Graph JIT library", "cudnn_jit"),
		"cudnn_samples": map[string]any{"name": "NVIDIA cuDNN samples", "license": "cudnn", "version": build,
			"source": map[string]any{"relative_path": "cudnn_samples/source/cudnn_samples-source-" + build + "-archive.tar.xz", "sha256": sha([]byte(build)), "md5": "0", "size": "1665944"}},
	}
	b, _ := json.MarshalIndent(m, "", "    ")
	f.files["/compute/cudnn/redist/redistrib_"+label+".json"] = b
}

// mirrorCuDNN writes cuDNN's redist directory listing: db's releases, an
// old one below the floor, and extra labels (served by addCuDNNRedistrib).
func (f *fakeUpstream) mirrorCuDNN(db *matrix.DB, extra ...string) {
	vs := []string{"7.6.5"}
	for _, c := range db.CuDNN {
		vs = append(vs, c.Version.String())
	}
	f.files["/compute/cudnn/redist/"] = listing("/compute/cudnn/redist/", append(vs, extra...), "redistrib_%s.json", "cudnn/", "cudnn_samples/")
}

// listing is an nginx-style directory index of NVIDIA's download host.
func listing(dir string, names []string, format string, more ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<html>\n<head><title>Index of %s</title></head>\n<body>\n<h1>Index of %s</h1><hr><pre><a href=\"../\">../</a>\n", dir, dir)
	for _, n := range names {
		name := fmt.Sprintf(format, n)
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>     05-Jun-2026 17:42    41234\n", name, name)
	}
	for _, m := range more {
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>     05-Jun-2026 17:42       -\n", m, m)
	}
	b.WriteString("</pre><hr></body>\n</html>\n")
	return []byte(b.String())
}

// mirrorNCCL writes NVIDIA's NCCL redist tree: a minor directory (v2.7/)
// below the floor holding two releases, a vX.Y.Z/ directory per db
// release and per extra release, each listing its builds (x86_64 and
// aarch64, an md5sum file) for the given CUDA versions.
func (f *fakeUpstream) mirrorNCCL(db *matrix.DB, extra map[string][]string) {
	dirs := []string{"2.7"}
	f.files["/compute/redist/nccl/v2.7/"] = listing("/compute/redist/nccl/v2.7/", []string{"2.7.3-1+cuda10.2", "2.7.3-1+cuda11.0"}, "nccl_%s_x86_64.txz")
	add := func(v string, cudas []string) {
		dirs = append(dirs, v)
		var names []string
		for _, c := range cudas {
			names = append(names, fmt.Sprintf("nccl_%s-1+cuda%s_x86_64.txz", v, c), fmt.Sprintf("nccl_%s-1+cuda%s_aarch64.txz", v, c))
		}
		f.files["/compute/redist/nccl/v"+v+"/"] = listing("/compute/redist/nccl/v"+v+"/", names, "%s", "md5sum.txt")
	}
	for _, n := range db.NCCL {
		add(n.Version.String(), []string{"12.9"})
	}
	for v, cudas := range extra {
		add(v, cudas)
	}
	f.files["/compute/redist/nccl/"] = listing("/compute/redist/nccl/", dirs, "v%s/")
}

func (f *fakeUpstream) cudnnURL() string { return f.srv.URL + "/compute/cudnn/redist" }
func (f *fakeUpstream) ncclURL() string  { return f.srv.URL + "/compute/redist/nccl" }

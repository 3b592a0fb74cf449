package upstream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

func builtin(t *testing.T) *matrix.DB {
	t.Helper()
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

var testDay = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// world is a fake upstream mirroring the built-in data plus, per source,
// one thing the data lacks: a torch release with two CUDA variants (and
// its torchvision/torchaudio), a jax release with cuda12/cuda13 extras,
// and a CUDA release.
type world struct {
	f                      *fakeUpstream
	torch, vision, audio   string
	tags                   []string
	cudnn, nccl            []string
	jax, cuda              string
	tf, newCuDNN, newNCCL  string
	reg                    *cudaRegistry
	torchMetadata          map[string]string // tag -> metadata path
	newestTorch, newestJAX matrix.Version
}

func bump(v matrix.Version) string { return fmt.Sprintf("%d.%d.0", v.Major(), v.Minor()+1) }

func newWorld(t *testing.T, db *matrix.DB) *world {
	w := &world{f: newFakeUpstream(t), torchMetadata: map[string]string{}}
	// torch: the next minor after the newest row, built for the CUDA of
	// the newest row's first and last variants (so base images exist).
	nt := db.Torch[0]
	w.newestTorch = nt.Version
	w.torch = bump(nt.Version)
	w.tags = []string{"cu" + cudaTagOf(nt.Variants[0].CUDA), "cu" + cudaTagOf(nt.Variants[len(nt.Variants)-1].CUDA)}
	w.cudnn = []string{"9.31.0.7", "9.32.1.2"}
	w.nccl = []string{"2.33.1", "2.34.0"}
	w.f.mirrorTorch(db)
	for i, tag := range w.tags {
		cu := "cu" + tag[2:len(tag)-1]
		w.torchMetadata[tag] = w.f.addWheel("torch", w.torch, tag, "cp313", "manylinux_2_28_x86_64",
			"filelock",
			fmt.Sprintf(`nvidia-cudnn-%s==%s; platform_system == "Linux" and platform_machine == "x86_64"`, cu, w.cudnn[i]),
			fmt.Sprintf(`nvidia-nccl-%s==%s; platform_system == "Linux" and platform_machine == "x86_64"`, cu, w.nccl[i]),
			`nvidia-nccl-cu99==0.0.1; platform_system == "Windows"`,
			`optree>=0.13.0; extra == "optree"`)
		w.f.addWheel("torch", w.torch, tag, "cp310", "manylinux_2_28_x86_64")
		w.f.addWheel("torch", w.torch, tag, "cp313t", "manylinux_2_28_aarch64")
		w.f.addWheel("torch", w.torch, tag, "cp312", "win_amd64")
	}
	w.f.addWheel("torch", w.torch, "cpu", "cp313", "manylinux_2_28_x86_64")
	w.f.addWheel("torch", w.torch+"rc1", w.tags[0], "cp313", "manylinux_2_28_x86_64")
	// Companions: an older torchvision pins the previous torch; the new
	// one pins the new torch, with or without a local label.
	w.vision, w.audio = "0.99.0", "2.99.0"
	for _, tag := range w.tags {
		w.f.addWheel("torchvision", "0.98.0", tag, "cp313", "manylinux_2_28_x86_64", "torch=="+nt.Version.String())
		w.f.addWheel("torchvision", w.vision, tag, "cp313", "manylinux_2_28_x86_64", "numpy", "torch=="+w.torch+"+"+tag)
		w.f.addWheel("torchaudio", w.audio, tag, "cp313", "manylinux_2_28_x86_64", "torch=="+w.torch)
	}
	// A torchaudio built later for another torch must not be taken.
	w.f.addWheel("torchaudio", "2.100.0", w.tags[0], "cp313", "manylinux_2_28_x86_64", "torch==9.9.9")

	// jax: the next minor after the newest row, with cuda12 and cuda13
	// extras through the plugin wheels, as jax publishes them.
	w.newestJAX = db.JAX[0].Version
	w.jax = bump(w.newestJAX)
	w.f.mirrorJAX(db, map[string][]string{w.jax: {
		"jaxlib<=" + w.jax + ",>=" + w.jax,
		"ml_dtypes>=0.5.0",
		`jax-cuda12-plugin[with-cuda]<=` + w.jax + `,>=` + w.jax + `; extra == "cuda12"`,
		`jaxlib<=` + w.jax + `,>=` + w.jax + `; extra == "cuda12"`,
		`jax-cuda13-plugin[with-cuda]<=` + w.jax + `,>=` + w.jax + `; extra == "cuda13"`,
		`jax-cuda12-plugin<=` + w.jax + `,>=` + w.jax + `; extra == "cuda12-local"`,
		`libtpu==0.0.20; extra == "tpu"`,
	}})
	w.f.addPyPI("jax-cuda12-plugin", map[string][]string{w.jax: {
		"jax-cuda12-pjrt==" + w.jax,
		`nvidia-cublas-cu12>=12.1.3.1; extra == "with-cuda"`,
		`nvidia-cuda-runtime-cu12>=12.1.105; extra == "with-cuda"`,
		`nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"`,
		`nvidia-nccl-cu12>=2.18.1; extra == "with-cuda"`,
	}})
	w.f.addPyPI("jax-cuda13-plugin", map[string][]string{w.jax: {
		"jax-cuda13-pjrt==" + w.jax,
		`nvidia-cuda-runtime~=13.0; extra == "with-cuda"`,
		`nvidia-cuda-nvcc-cu13>=13.0.48; extra == "with-cuda"`,
		`nvidia-cudnn-cu13<10.0,>=9.13; extra == "with-cuda"`,
	}})

	// tensorflow: the next minor after the newest row, with and-cuda pins.
	w.tf = bump(db.TensorFlow[0].Version)
	w.f.mirrorTensorFlow(db, map[string][]string{w.tf: tfAndCUDA("12.9.79", "9.10.2.21", "2.27.3")})

	// cuDNN: the next minor after the newest row, for CUDA 12 and 13.
	w.newCuDNN = bump(db.CuDNN[0].Version)
	w.f.mirrorCuDNN(db, w.newCuDNN)
	w.f.addCuDNNRedistrib(w.newCuDNN, w.newCuDNN+".12", "2026-11-20", "12", "13")

	// NCCL: the next minor after the newest row, built for two CUDAs.
	w.newNCCL = bump(db.NCCL[0].Version)
	w.f.mirrorNCCL(db, map[string][]string{w.newNCCL: {"13.4", "12.9"}})

	// CUDA: the next minor after the newest release.
	w.cuda = bump(db.CUDA[0].Version)
	w.f.mirrorCUDA(db, w.cuda)
	w.f.addRedistrib(w.cuda, "2026-11-18", matrix.MustVersion(w.cuda).Trunc(2).String()+".41", "599.10.02")

	// Base images for the new CUDA release: ubuntu24.04 with every
	// flavor, ubuntu22.04 without cuDNN, and rockylinux10, which has no
	// os: row.
	w.reg = newCUDARegistry(t)
	w.reg.mirrorImages("nvidia/cuda", db)
	cudaEnv := "CUDA_VERSION=" + w.cuda
	for _, fl := range []string{"base", "runtime", "devel"} {
		for _, os := range []string{"ubuntu24.04", "ubuntu22.04", "rockylinux10"} {
			w.reg.push("nvidia/cuda", w.cuda+"-"+fl+"-"+os, cudaEnv)
		}
	}
	for _, fl := range []string{"cudnn-runtime", "cudnn-devel"} {
		w.reg.push("nvidia/cuda", w.cuda+"-"+fl+"-ubuntu24.04", cudaEnv, "NV_CUDNN_VERSION=9.41.0.5-1", "NV_CUDNN_PACKAGE_NAME=libcudnn9-cuda-13")
	}
	return w
}

func (w *world) opts() []Option {
	return []Option{WithTorchIndexURL(w.f.torchURL()), WithPyPIURL(w.f.pypiURL()), WithCUDARedistURL(w.f.redistURL()), WithClock(testDay),
		WithCuDNNRedistURL(w.f.cudnnURL()), WithNCCLRedistURL(w.f.ncclURL()),
		WithRegistry(images.Mirrors{"index.docker.io": w.reg.host})}
}

// TestUpdateFindsWhatTheTestAdded runs every source against the fake
// upstream: the overlay holds exactly the added torch, jax and CUDA
// releases with their pins, and resolving the new torch through it works.
func TestUpdateFindsWhatTheTestAdded(t *testing.T) {
	db := builtin(t)
	w := newWorld(t, db)
	var progress []string
	ov, err := Update(t.Context(), db, append(w.opts(), WithProgress(func(s Source, m string) { progress = append(progress, string(s)+": "+m) }))...)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range ov.Found {
		found = append(found, f.What)
	}
	want := []string{
		fmt.Sprintf("torch %s (%s)", w.torch, strings.Join(w.tags, ", ")),
		fmt.Sprintf("jax %s (cuda12, cuda13)", w.jax),
		"tensorflow " + w.tf,
		"CUDA " + w.cuda,
		"cuDNN " + w.newCuDNN,
		"NCCL " + w.newNCCL,
		"base images for CUDA " + w.cuda,
	}
	if !slices.Equal(found, want) {
		t.Fatalf("found\n  %s\nwant\n  %s", strings.Join(found, "\n  "), strings.Join(want, "\n  "))
	}
	for _, s := range Sources {
		if !slices.ContainsFunc(progress, func(p string) bool {
			return strings.HasPrefix(p, string(s)+": reading ") || strings.HasPrefix(p, string(s)+": listing ")
		}) {
			t.Errorf("no progress for %s: %q", s, progress)
		}
	}

	// The torch row: pins from metadata, Python from the cp tags,
	// companions by their torch pin, index URL per variant.
	if len(ov.File.Torch) != 1 {
		t.Fatalf("torch rows %+v", ov.File.Torch)
	}
	tr := ov.File.Torch[0]
	if tr.Version.String() != w.torch || tr.Python.String() != ">=3.10,<3.14" || tr.Torchvision != w.vision || tr.Torchaudio != w.audio {
		t.Errorf("torch row %s python %q vision %q audio %q", tr.Version, tr.Python, tr.Torchvision, tr.Torchaudio)
	}
	for i, v := range tr.Variants {
		tag := "cu" + cudaTagOf(v.CUDA)
		if tag != w.tags[i] || v.CuDNN.String() != w.cudnn[i] || v.NCCL.String() != w.nccl[i] || v.Status != "experimental" || v.IndexURL != w.f.torchURL()+"/"+tag {
			t.Errorf("variant %d = %+v", i, v)
		}
		if len(v.Pins) != 2 || v.Pins[0].Version.String() != w.cudnn[i] || v.Pins[1].Version.String() != w.nccl[i] {
			t.Errorf("variant %s pins %v: want its Linux nvidia-cudnn and nvidia-nccl pins", tag, v.Pins)
		}
		if len(v.Archs) == 0 || !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, "copied from torch "+w.newestTorch.String()) }) {
			t.Errorf("variant %s archs %v not copied from %s with a note: %q", tag, v.Archs, w.newestTorch, v.Notes)
		}
		if !slices.ContainsFunc(v.Notes, func(n string) bool { return strings.Contains(n, w.f.srv.URL+"/whl/"+tag+"/torch-"+w.torch+"%2B"+tag) }) {
			t.Errorf("variant %s notes do not name the metadata URL: %q", tag, v.Notes)
		}
	}
	src := ov.File.Sources
	if !slices.ContainsFunc(src, func(s matrix.Source) bool {
		return s.ID == tr.Source && s.URL == w.f.torchURL()+"/torch/" && s.Retrieved == "2026-11-30"
	}) {
		t.Errorf("torch row source %q not defined with URL and date: %+v", tr.Source, src)
	}

	// The jax row: minimums from the plugins' [with-cuda] extra.
	if len(ov.File.JAX) != 1 || len(ov.File.JAX[0].Variants) != 2 {
		t.Fatalf("jax rows %+v", ov.File.JAX)
	}
	j := ov.File.JAX[0]
	got := fmt.Sprintf("%s python %s; %s %s %s %s; %s %s %s %s", j.Version, j.Python,
		j.Variants[0].Extra, j.Variants[0].CUDA, j.Variants[0].MinCUDA, j.Variants[0].MinCuDNN,
		j.Variants[1].Extra, j.Variants[1].CUDA, j.Variants[1].MinCUDA, j.Variants[1].MinCuDNN)
	if want := w.jax + " python >=3.11; cuda12 12 12.1 9.8; cuda13 13 13.0 9.13"; got != want {
		t.Errorf("jax row = %s, want %s", got, want)
	}
	// The plugins' ranges are recorded, CUDA 13's suffix-less names
	// included, and min_cuda of cuda13 comes from the suffix-less
	// nvidia-cuda-runtime (the CUDA 13 shape), not the nvcc fallback.
	var ranges []string
	for _, r := range j.Variants[1].Requires {
		ranges = append(ranges, r.String())
	}
	if want := "nvidia-cuda-runtime~=13.0 nvidia-cuda-nvcc-cu13>=13.0.48 nvidia-cudnn-cu13<10.0,>=9.13"; strings.Join(ranges, " ") != want ||
		!slices.Contains(j.Variants[1].Notes, "min_cuda: nvidia-cuda-runtime>=13.0") {
		t.Errorf("cuda13 requires %q notes %q; want %s and the min_cuda note naming nvidia-cuda-runtime", ranges, j.Variants[1].Notes, want)
	}

	// The tensorflow row: cuda and cudnn from the and-cuda pins, Python
	// from the Linux x86_64 wheels.
	if len(ov.File.TensorFlow) != 1 {
		t.Fatalf("tensorflow rows %+v", ov.File.TensorFlow)
	}
	tf := ov.File.TensorFlow[0]
	if got := fmt.Sprintf("%s python %s cuda %s cudnn %s", tf.Version, tf.Python, tf.CUDA, tf.CuDNN); got != w.tf+" python >=3.10,<3.14 cuda 12.9 cudnn 9.10" {
		t.Errorf("tensorflow row = %s", got)
	}
	if !slices.ContainsFunc(tf.Notes, func(n string) bool {
		return strings.Contains(n, "cuda: tensorflow[and-cuda] pins nvidia-cuda-runtime-cu12==12.9.79")
	}) ||
		!slices.ContainsFunc(tf.Notes, func(n string) bool {
			return strings.Contains(n, "cudnn: tensorflow[and-cuda] requires (lower bound) nvidia-cudnn-cu12>=9.10.2.21")
		}) {
		t.Errorf("tensorflow row notes do not name the pin: %q", tf.Notes)
	}
	// Its exact nvidia-* pins, for matrix.PinConflicts (the cuDNN range is not one).
	var tfPins []string
	for _, p := range tf.Pins {
		tfPins = append(tfPins, p.String())
	}
	if got := strings.Join(tfPins, " "); got != "nvidia-cublas-cu12==12.5.3.2 nvidia-cuda-cupti-cu12==12.9.79 nvidia-cuda-nvcc-cu12==12.9.79 nvidia-cuda-runtime-cu12==12.9.79 nvidia-nccl-cu12==2.27.3" { // tfAndCUDA("12.9.79", "9.10.2.21", "2.27.3")
		t.Errorf("tensorflow pins %s", got)
	}

	// cuDNN and NCCL rows: CUDA majors from the manifest, CUDA versions
	// from the builds listed.
	if len(ov.File.CuDNN) != 1 || ov.File.CuDNN[0].Version.String() != w.newCuDNN || ov.File.CuDNN[0].CUDA.String() != "12 || 13" || !ov.File.CuDNN[0].MinDriver.IsZero() {
		t.Errorf("cudnn rows %+v", ov.File.CuDNN)
	}
	if len(ov.File.NCCL) != 1 || ov.File.NCCL[0].Version.String() != w.newNCCL || ov.File.NCCL[0].CUDA.String() != "12.9 || 13.4" {
		t.Errorf("nccl rows %+v", ov.File.NCCL)
	}

	// The CUDA row: release and month from the manifest, no driver floor.
	if len(ov.File.CUDA) != 1 || ov.File.CUDA[0].Version.String() != w.cuda || ov.File.CUDA[0].Released != "2026-11" || !ov.File.CUDA[0].MinDriver.IsZero() {
		t.Errorf("cuda rows %+v", ov.File.CUDA)
	}

	// Base images: OSes with the same flavors share a row; cuDNN from the
	// cudnn flavor's env; an OS without an os: row is left out and said.
	var imgRows []string
	for _, b := range ov.File.BaseImages {
		imgRows = append(imgRows, fmt.Sprintf("%s %v %v %s", b.CUDA, b.OS, b.Flavors, b.CuDNN))
	}
	if want := []string{
		w.cuda + " [ubuntu22.04] [base runtime devel] ",
		w.cuda + " [ubuntu24.04] [base runtime devel cudnn-devel cudnn-runtime] 9.41.0.5",
	}; !slices.Equal(imgRows, want) {
		t.Errorf("base image rows\n  %s\nwant\n  %s", strings.Join(imgRows, "\n  "), strings.Join(want, "\n  "))
	}

	// What could not be filled is said, never guessed.
	unfilled := map[string]bool{}
	for _, u := range ov.Unfilled {
		unfilled[u.Field] = true
	}
	for _, f := range []string{"status", "archs", "released", "min_driver", "os"} {
		if !unfilled[f] {
			t.Errorf("unfilled lacks %s: %v", f, ov.Unfilled)
		}
	}

	// The rendered overlay loads with the built-in data and resolves.
	b, err := ov.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "# Could not fill") || !strings.Contains(string(b), "min_driver: the toolkit driver table") {
		t.Errorf("overlay lacks the could-not-fill comments:\n%s", b)
	}
	path := filepath.Join(t.TempDir(), "overlay.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := matrix.Load(path)
	if err != nil {
		t.Fatalf("overlay does not load: %v\n%s", err, b)
	}
	if len(loaded.Replaced) != 0 {
		t.Errorf("overlay replaced built-in rows: %v", loaded.Replaced)
	}
	for i, tag := range w.tags {
		tc := matrix.MustConstraint(w.torch)
		cc := matrix.MustConstraint(matrix.MustVersion(tag[2:len(tag)-1] + "." + tag[len(tag)-1:]).String())
		s, err := loaded.Resolve(matrix.Constraints{Torch: &tc, CUDA: cc})
		if err != nil {
			t.Fatalf("resolve torch %s on CUDA %s: %v", w.torch, cc, err)
		}
		fw := s.Frameworks["torch"]
		if fw.Version != w.torch || fw.CuDNN != w.cudnn[i] || fw.NCCL != w.nccl[i] || fw.IndexURL != w.f.torchURL()+"/"+tag {
			t.Errorf("resolved %+v", fw)
		}
	}
	jc := matrix.MustConstraint(w.jax)
	if _, err := loaded.Resolve(matrix.Constraints{JAX: &jc}); err != nil {
		t.Errorf("resolve jax %s: %v", w.jax, err)
	}
	if got := loaded.TensorFlow[0].Version.String(); got != w.tf {
		t.Errorf("newest tensorflow with the overlay is %s, want %s", got, w.tf)
	}

	// Once the overlay is part of the matrix, nothing is missing.
	again, err := Update(t.Context(), loaded, w.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Empty() {
		t.Errorf("with the overlay loaded, update still finds %v", again.Found)
	}
}

// TestUpdateNothingNew: a fake upstream that mirrors the data exactly
// gives an empty overlay that still loads.
func TestUpdateNothingNew(t *testing.T) {
	db := builtin(t)
	f := newFakeUpstream(t)
	f.mirrorTorch(db)
	f.mirrorJAX(db, nil)
	f.mirrorCUDA(db)
	f.mirrorTensorFlow(db, nil)
	f.mirrorCuDNN(db)
	f.mirrorNCCL(db, nil)
	reg := newCUDARegistry(t)
	reg.mirrorImages("nvidia/cuda", db)
	ov, err := Update(t.Context(), db, WithTorchIndexURL(f.torchURL()), WithPyPIURL(f.pypiURL()), WithCUDARedistURL(f.redistURL()), WithClock(testDay),
		WithCuDNNRedistURL(f.cudnnURL()), WithNCCLRedistURL(f.ncclURL()),
		WithRegistry(images.Mirrors{"index.docker.io": reg.host}))
	if err != nil {
		t.Fatal(err)
	}
	if !ov.Empty() || len(ov.File.Sources) != 0 {
		t.Errorf("found %v, sources %v", ov.Found, ov.File.Sources)
	}
	b, err := ov.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := matrix.ParseFile("empty", b); err != nil {
		t.Errorf("empty overlay does not parse: %v\n%s", err, b)
	}
}

// TestUpdateNewVariantOfKnownRelease: a CUDA variant added to a release
// the data has extends that row, keeping its own variants and source.
func TestUpdateNewVariantOfKnownRelease(t *testing.T) {
	db := builtin(t)
	f := newFakeUpstream(t)
	f.mirrorTorch(db)
	nt := db.Torch[0]
	f.addWheel("torch", nt.Version.String(), "cu199", "cp312", "manylinux_2_28_x86_64", "nvidia-cudnn-cu19==19.0.0.1")
	// A wheel listed without core metadata gives a variant without pins,
	// and says so; it is not an error.
	f.addWheel("torch", nt.Version.String(), "cu198", "cp312", "manylinux_2_28_x86_64", "nvidia-cudnn-cu19==19.0.0.0")
	f.links["torch"][len(f.links["torch"])-1].bare = true
	ov, err := Update(t.Context(), db, WithSources(SourceTorch), WithTorchIndexURL(f.torchURL()), WithClock(testDay))
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.File.Torch) != 1 {
		t.Fatalf("rows %+v", ov.File.Torch)
	}
	r := ov.File.Torch[0]
	n := len(nt.Variants)
	if r.Source != nt.Source || len(r.Variants) != n+2 || r.Variants[n].CUDA.String() != "19.8" || !r.Variants[n].CuDNN.IsZero() ||
		r.Variants[n+1].CUDA.String() != "19.9" || r.Variants[n+1].CuDNN.String() != "19.0.0.1" {
		t.Errorf("row %+v", r)
	}
	if want := fmt.Sprintf("torch %s: new variants cu198, cu199", nt.Version); len(ov.Found) != 1 || ov.Found[0].What != want {
		t.Errorf("found %v, want %s", ov.Found, want)
	}
	if !slices.ContainsFunc(ov.Unfilled, func(u Unfilled) bool {
		return u.Row == fmt.Sprintf("torch %s cu198", nt.Version) && u.Field == "cudnn" && strings.Contains(u.Reason, "offers no core metadata")
	}) {
		t.Errorf("unfilled does not say cu198 has no metadata: %v", ov.Unfilled)
	}
	b, err := ov.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "o.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := matrix.Load(path); err != nil {
		t.Errorf("overlay does not load: %v\n%s", err, b)
	}
}

// TestUpdateRefusesBadUpstream: a malformed page, a metadata file that
// is not metadata, and a hash mismatch are errors naming the URL, and
// no overlay comes back.
// TestUpdateSkipsGarbledWheelName: one link whose file name is not a wheel
// name is skipped with a warning that names it, and the page's releases
// are still read (issue 43: it failed the whole update).
func TestUpdateSkipsGarbledWheelName(t *testing.T) {
	db := builtin(t)
	w := newWorld(t, db)
	w.f.links["torchvision"] = append(w.f.links["torchvision"], link{raw: `<a href="/whl/cu126/torchvision-0.99.0.whl#sha256=00">torchvision-0.99.0.whl</a>`})
	var warnings []string
	ov, err := Update(t.Context(), db, append(w.opts(), WithProgress(func(s Source, m string) {
		if strings.HasPrefix(m, "warning: ") {
			warnings = append(warnings, m)
		}
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.File.Torch) == 0 {
		t.Error("no torch rows: the page with the garbled link was not read")
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "torchvision-0.99.0.whl") || !strings.Contains(warnings[0], "/torchvision/") {
		t.Errorf("warnings %q, want one naming the link and its page", warnings)
	}
}

func TestUpdateRefusesBadUpstream(t *testing.T) {
	db := builtin(t)
	tests := []struct {
		name    string
		setup   func(w *world)
		badHash func(w *world) string
		urlHas  func(w *world) string
		is      func(error) bool
	}{
		{
			name:   "page without wheel links",
			setup:  func(w *world) { w.f.links["torch"] = []link{{raw: `<p>Service temporarily unavailable</p>`}} },
			urlHas: func(w *world) string { return w.f.torchURL() + "/torch/" },
			is:     func(err error) bool { var fe *FormatError; return errors.As(err, &fe) },
		},
		{
			name: "metadata file is not metadata",
			setup: func(w *world) {
				w.f.files[w.torchMetadata[w.tags[1]]+".metadata"] = []byte("<html>404</html>\n")
			},
			urlHas: func(w *world) string { return "/torch-" },
			is:     func(err error) bool { var fe *FormatError; return errors.As(err, &fe) },
		},
		{
			name: "metadata hash mismatch",
			badHash: func(w *world) string {
				return fmt.Sprintf("/whl/%s/torch-%s+%s-cp313-cp313-manylinux_2_28_x86_64.whl.metadata", w.tags[0], w.torch, w.tags[0])
			},
			urlHas: func(w *world) string {
				return w.f.torchURL() + "/" + w.tags[0] + "/torch-" + w.torch + "%2B" + w.tags[0] + "-cp313-cp313-manylinux_2_28_x86_64.whl.metadata"
			},
			is: func(err error) bool {
				var ie *IntegrityError
				return errors.As(err, &ie) && errors.Is(err, ErrHashMismatch)
			},
		},
		{
			name: "redistrib manifest for another release",
			setup: func(w *world) {
				w.f.files["/compute/cuda/redist/redistrib_"+w.cuda+".json"] = []byte(`{"release_date": "2026-11-18", "release_label": "1.2.3", "release_product": "cuda"}`)
			},
			urlHas: func(w *world) string { return w.f.redistURL() + "/redistrib_" },
			is:     func(err error) bool { var fe *FormatError; return errors.As(err, &fe) },
		},
		{
			name: "cuDNN manifest of another product",
			setup: func(w *world) {
				w.f.files["/compute/cudnn/redist/redistrib_"+w.newCuDNN+".json"] = []byte(`{"release_date": "2026-11-20", "release_label": "` + w.newCuDNN + `", "release_product": "cusparselt"}`)
			},
			urlHas: func(w *world) string { return w.f.cudnnURL() + "/redistrib_" + w.newCuDNN + ".json" },
			is:     func(err error) bool { var fe *FormatError; return errors.As(err, &fe) },
		},
		{
			name: "NCCL release directory without builds",
			setup: func(w *world) {
				w.f.files["/compute/redist/nccl/v"+w.newNCCL+"/"] = []byte("<html><body>Access denied</body></html>")
			},
			urlHas: func(w *world) string { return w.f.ncclURL() + "/v" + w.newNCCL + "/" },
			is:     func(err error) bool { var fe *FormatError; return errors.As(err, &fe) },
		},
		{
			name: "tensorflow requirement that does not parse",
			setup: func(w *world) {
				w.f.addPyPIFiles("tensorflow", map[string][]string{w.tf: {`nvidia-cudnn-cu12 === ; extra == "and-cuda"`}}, tfWheels)
			},
			urlHas: func(w *world) string { return w.f.pypiURL() + "/pypi/tensorflow/" + w.tf + "/json" },
			is:     func(err error) bool { var fe *FormatError; return errors.As(err, &fe) },
		},
		{
			name:   "image whose config names another CUDA",
			setup:  func(w *world) { w.reg.push("nvidia/cuda", w.cuda+"-base-ubuntu22.04", "CUDA_VERSION=1.0.0") },
			urlHas: func(w *world) string { return w.reg.host + "/nvidia/cuda:" + w.cuda + "-base-ubuntu22.04" },
			is: func(err error) bool {
				var fe *FormatError
				return errors.As(err, &fe) && strings.Contains(err.Error(), `CUDA_VERSION="1.0.0"`)
			},
		},
		{
			name:   "PyPI answer that is not JSON",
			setup:  func(w *world) { w.f.files["/pypi/jax/json"] = []byte("<html>rate limited</html>") },
			urlHas: func(w *world) string { return w.f.pypiURL() + "/pypi/jax/json" },
			is:     func(err error) bool { var fe *FormatError; return errors.As(err, &fe) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, db)
			if tt.badHash != nil {
				w.f.badHash[tt.badHash(w)] = true
			}
			if tt.setup != nil {
				tt.setup(w)
			}
			ov, err := Update(t.Context(), db, w.opts()...)
			if err == nil {
				t.Fatalf("no error; overlay found %v", ov.Found)
			}
			if ov != nil {
				t.Errorf("an overlay came back with the error")
			}
			if !tt.is(err) {
				t.Errorf("error of the wrong kind: %T %v", err, err)
			}
			if u := tt.urlHas(w); !strings.Contains(err.Error(), u) {
				t.Errorf("error %q does not name %s", err, u)
			}
		})
	}
}

// TestUpdateIncompleteRowIsCommentedOut: a jax release whose cuda12 extra
// gives no CUDA lower bound cannot make a valid row; it is reported and
// written commented out with the reason, and the overlay still loads.
func TestUpdateIncompleteRowIsCommentedOut(t *testing.T) {
	db := builtin(t)
	f := newFakeUpstream(t)
	v := bump(db.JAX[0].Version)
	f.mirrorJAX(db, map[string][]string{v: {`jaxlib==` + v + `; extra == "cuda12"`, `nvidia-cudnn-cu12>=9.1; extra == "cuda12"`}})
	ov, err := Update(t.Context(), db, WithSources(SourceJAX), WithPyPIURL(f.pypiURL()), WithClock(testDay))
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.Found) != 1 || len(ov.File.JAX) != 0 || len(ov.Incomplete) != 1 {
		t.Fatalf("found %v, rows %v, incomplete %v", ov.Found, ov.File.JAX, ov.Incomplete)
	}
	b, err := ov.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# jax " + v + " is left out: cannot fill cuda12 min_cuda", "#   - version: " + v, "#     source: upstream-pypi-jax-2026-11-30"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("overlay lacks %q:\n%s", want, b)
		}
	}
	file, err := matrix.ParseFile("o.yaml", b)
	if err != nil {
		t.Fatalf("overlay does not parse: %v\n%s", err, b)
	}
	if len(file.JAX) != 0 {
		t.Errorf("the incomplete row was written live: %+v", file.JAX)
	}
}

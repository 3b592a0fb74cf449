package validate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/matrix"
)

// Inventory is everything an SBOM lists, collected in the same walk as
// the checks when Options.Inventory is set (Report.Inventory): the OS
// packages, the Python distributions, the CUDA components found by file
// with the GPU architectures in their fat binaries, and what the image
// config says about the driver. Every list is sorted, so the same image
// gives the same inventory.
type Inventory struct {
	// Created is the image config's creation time (zero when unset).
	Created time.Time `json:"created,omitzero"`
	OS      OSInfo    `json:"os"`
	// OSPackages are dpkg's installed packages (var/lib/dpkg/status and
	// the distroless status.d files). RPM databases are not read.
	OSPackages []OSPackage `json:"os_packages,omitempty"`
	// Python are the distributions of every site-packages (dist-info).
	Python []PythonDist `json:"python,omitempty"`
	// CUDA are CUDA components found by file: libraries by soname and
	// version, and the components of the toolkit's version.json.
	CUDA []CUDAComponent `json:"cuda,omitempty"`
	// CUDAVersion is the image's CUDA (Found.CUDA).
	CUDAVersion string `json:"cuda_version,omitempty"`
	// RequireCUDA is the config's NVIDIA_REQUIRE_CUDA, verbatim.
	RequireCUDA string `json:"require_cuda,omitempty"`
	// DriverFloor is the oldest driver that runs everything inside
	// without minor-version compatibility; DriverFloorCompat with it.
	DriverFloor       string `json:"driver_floor,omitempty"`
	DriverFloorCompat string `json:"driver_floor_compat,omitempty"`
	// Base is the image this one was built FROM, when its labels or
	// annotations say (org.opencontainers.image.base.*) or the
	// dev.gpuimg.stack label names it.
	Base BaseImage `json:"base,omitzero"`
}

// OSInfo is what os-release says.
type OSInfo struct {
	ID        string `json:"id,omitempty"`         // debian, ubuntu, rocky
	VersionID string `json:"version_id,omitempty"` // 12, 22.04
	Pretty    string `json:"pretty,omitempty"`
}

// OSPackage is one installed dpkg package.
type OSPackage struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch,omitempty"`
	// Source is the source package when it differs from Name (its
	// version, when it differs, in parentheses as dpkg writes it).
	Source string `json:"source,omitempty"`
}

// PythonDist is one installed Python distribution.
type PythonDist struct {
	// Name is normalized (PEP 503): lowercase, runs of -_. as -.
	Name string `json:"name"`
	// Version is the bare PEP 440 version ("2.3.1"); Local is the local
	// label after the + ("cu121"), empty when none.
	Version string `json:"version"`
	Local   string `json:"local,omitempty"`
	// Path is the dist-info directory.
	Path string `json:"path"`
	// CUDA is the CUDA torch says it was built for (torch/version.py).
	CUDA string `json:"cuda,omitempty"`
	// Kernels are the architectures in the distribution's own libraries
	// (torch/lib/libtorch_cuda.so …), merged.
	Kernels Kernels `json:"kernels,omitzero"`
}

// CUDAComponent is a CUDA library or toolkit component found by file.
type CUDAComponent struct {
	// Name is the library without lib and .so (cublasLt) or the
	// version.json key (cuda_cudart).
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Family groups libraries (cublas, cudnn, nccl, tensorrt …).
	Family string `json:"family,omitempty"`
	Path   string `json:"path"`
	Soname string `json:"soname,omitempty"`
	// Pip is true for a library of an NVIDIA pip wheel.
	Pip     bool    `json:"pip,omitempty"`
	Kernels Kernels `json:"kernels,omitzero"`
}

// BaseImage is the image an image was built FROM.
type BaseImage struct {
	Name   string `json:"name,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// The OCI annotation keys (also used as labels) for the base image.
const (
	AnnotationBaseName   = "org.opencontainers.image.base.name"
	AnnotationBaseDigest = "org.opencontainers.image.base.digest"
)

var (
	// reExtraLib are CUDA libraries only the inventory lists (TensorRT,
	// nvJPEG, NPP, CUPTI …); the checks do not look at them.
	reExtraLib    = regexp.MustCompile(`^lib(nvinfer|nvinfer_plugin|nvonnxparser|nvparsers|nvjpeg|npp[a-z]*|cupti|cusparseLt|nvToolsExt|cufile|nvrtc-builtins|cudnn_[a-z_]+)\.so\.([0-9][0-9.]*)$`)
	reDpkgStatusD = regexp.MustCompile(`^var/lib/dpkg/status\.d/[^/]+$`)
)

// invCollector is the detector's inventory state (nil when off).
type invCollector struct {
	dpkg      map[string][]OSPackage // status file → packages
	dists     []PythonDist
	toolkit   []CUDAComponent // from version.json
	extraLibs []Library
	os        OSInfo
}

// parseInventory reads what only the inventory wants from an entry; it
// returns nil when the entry holds nothing for it. b is the entry's
// content when the caller already read it.
func parseInventory(p string, r func(n int64) []byte) func(d *detector) {
	if p == "var/lib/dpkg/status" || reDpkgStatusD.MatchString(p) && !strings.HasSuffix(p, ".md5sums") {
		pkgs := parseDpkgStatus(r(64 << 20))
		return func(d *detector) { d.inv.dpkg[p] = pkgs }
	}
	if m := reExtraLib.FindStringSubmatch(path.Base(p)); m != nil {
		fam := strings.ToLower(m[1])
		switch {
		case strings.HasPrefix(fam, "nvinfer"), fam == "nvonnxparser", fam == "nvparsers":
			fam = "tensorrt"
		case strings.HasPrefix(fam, "cudnn_"):
			return nil // the checks' pattern reads these already
		case strings.HasPrefix(fam, "npp"):
			fam = "npp"
		}
		lib := Library{Family: fam, Version: m[2], Path: p, Pip: strings.Contains(p, "-packages/nvidia/")}
		return func(d *detector) { d.inv.extraLibs = append(d.inv.extraLibs, lib) }
	}
	return nil
}

// parseDpkgStatus reads the installed packages of a dpkg status file.
func parseDpkgStatus(b []byte) []OSPackage {
	var out []OSPackage
	for para := range strings.SplitSeq(string(b), "\n\n") {
		kv := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(para))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == ' ' || line[0] == '\t' {
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				kv[k] = strings.TrimSpace(v)
			}
		}
		if kv["Package"] == "" || kv["Version"] == "" {
			continue
		}
		// Distroless status.d files have no Status field; a status file
		// lists removed packages as "deinstall ok config-files".
		if st, ok := kv["Status"]; ok && !strings.HasSuffix(st, " installed") {
			continue
		}
		pkg := OSPackage{Name: kv["Package"], Version: kv["Version"], Arch: kv["Architecture"]}
		if src := kv["Source"]; src != "" && src != pkg.Name {
			pkg.Source = src
		}
		out = append(out, pkg)
	}
	return out
}

// parseToolkitComponents reads every component of a CUDA version.json
// ({"cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.2.140"}}).
func parseToolkitComponents(p string, b []byte) []CUDAComponent {
	var m map[string]struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	var out []CUDAComponent
	for k, v := range m {
		if v.Version == "" || k == "cuda" {
			continue
		}
		out = append(out, CUDAComponent{Name: k, Version: v.Version, Family: "toolkit", Path: p})
	}
	return out
}

func osReleaseKV(b []byte) OSInfo {
	kv := map[string]string{}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		k, v, ok := strings.Cut(string(line), "=")
		if ok {
			kv[k] = strings.Trim(v, `"'`)
		}
	}
	return OSInfo{ID: kv["ID"], VersionID: kv["VERSION_ID"], Pretty: kv["PRETTY_NAME"]}
}

// buildInventory assembles the inventory from the walk's findings and
// the image's config and manifest.
func (c *checker) buildInventory(d *detector, w *WalkResult, cfg *v1.ConfigFile, manifest *v1.Manifest) *Inventory {
	f := c.r.Found
	inv := &Inventory{OS: d.inv.os, CUDAVersion: f.CUDA, RequireCUDA: c.env["NVIDIA_REQUIRE_CUDA"]}
	if !cfg.Created.IsZero() {
		inv.Created = cfg.Created.UTC()
	}
	if c.neededCUDA() != "" {
		fl := c.floors()
		inv.DriverFloor = versionString(fl.Strict)
		inv.DriverFloorCompat = versionString(fl.Compat)
	}
	// OS packages: the visible status files'.
	seen := map[string]bool{}
	for _, pkgs := range d.inv.dpkg {
		for _, p := range pkgs {
			key := p.Name + "\x00" + p.Arch
			if !seen[key] {
				seen[key] = true
				inv.OSPackages = append(inv.OSPackages, p)
			}
		}
	}
	sort.Slice(inv.OSPackages, func(i, j int) bool {
		a, b := inv.OSPackages[i], inv.OSPackages[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Arch < b.Arch
	})
	// Python: each dist-info, with torch's CUDA and its libraries' kernels.
	for _, dist := range d.inv.dists {
		dist.Version, dist.Local, _ = strings.Cut(dist.Version, "+")
		site := path.Dir(dist.Path)
		var own []string
		switch dist.Name {
		case "torch":
			if f.Torch != nil && strings.HasPrefix(f.Torch.Path, site+"/") {
				dist.CUDA = f.Torch.CUDA
			}
			own = []string{site + "/torch/"}
		case "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "tensorflow":
			own = []string{site + "/" + strings.ReplaceAll(dist.Name, "-", "_") + "/"}
		}
		for lib, k := range f.Kernels {
			for _, pre := range own {
				if strings.HasPrefix(lib, pre) {
					dist.Kernels = mergeKernels(dist.Kernels, k)
				}
			}
		}
		inv.Python = append(inv.Python, dist)
	}
	sort.Slice(inv.Python, func(i, j int) bool {
		if inv.Python[i].Name != inv.Python[j].Name {
			return inv.Python[i].Name < inv.Python[j].Name
		}
		return inv.Python[i].Path < inv.Python[j].Path
	})
	// CUDA: the libraries by file, then the toolkit's components.
	sonames := d.elf.sonames(w)
	libs := append(append([]Library(nil), f.Libraries...), d.inv.extraLibs...)
	for _, l := range libs {
		base := path.Base(l.Path)
		stem, _, _ := strings.Cut(base, ".so") // the patterns all have .so
		name := strings.TrimPrefix(stem, "lib")
		so := sonames[l.Path]
		if so == "" {
			so = sonameOf(base)
		}
		v := l.Version
		if l.Pip {
			v = wheelLibVersion(inv.Python, l.Path, v)
		}
		inv.CUDA = append(inv.CUDA, CUDAComponent{Name: name, Version: v, Family: l.Family, Path: l.Path, Soname: so, Pip: l.Pip, Kernels: f.Kernels[l.Path]})
	}
	inv.CUDA = append(inv.CUDA, d.inv.toolkit...)
	sort.Slice(inv.CUDA, func(i, j int) bool {
		if inv.CUDA[i].Path != inv.CUDA[j].Path {
			return inv.CUDA[i].Path < inv.CUDA[j].Path
		}
		return inv.CUDA[i].Name < inv.CUDA[j].Name
	})
	// Base image: annotations, then labels, then the stack label.
	var ann map[string]string
	if manifest != nil {
		ann = manifest.Annotations
	}
	inv.Base = BaseImage{Name: ann[AnnotationBaseName], Digest: ann[AnnotationBaseDigest]}
	if inv.Base.Digest == "" {
		inv.Base = BaseImage{Name: c.labels[AnnotationBaseName], Digest: c.labels[AnnotationBaseDigest]}
	}
	if inv.Base.Name == "" {
		if c.hasStack && c.stackErr == nil {
			inv.Base.Name = c.stack.BaseImage
		}
	}
	return inv
}

// reWheelCUDA is the CUDA suffix of an NVIDIA wheel's name (-cu12).
var reWheelCUDA = regexp.MustCompile(`-cu[0-9]+$`)

// wheelLibVersion is the version of the library at lib from the NVIDIA
// wheel that installed it: its file name gives only the soname's major
// (site-packages/nvidia/cudnn/lib/libcudnn.so.8), the wheel beside it the
// release (nvidia-cudnn-cu12 8.9.2.26). A wheel owns nvidia/NAME/ or NAME/
// of its site-packages (nvidia-cuda-runtime-cu12: nvidia/cuda_runtime/;
// cuSPARSELt 0.6: cusparselt/). ver, the file's, is kept when no one wheel
// owns the directory or the wheel's version does not start with it.
func wheelLibVersion(dists []PythonDist, lib, ver string) string {
	found := ""
	for _, d := range dists {
		comp, ok := strings.CutPrefix(d.Name, "nvidia-")
		if !ok {
			continue
		}
		comp = strings.ReplaceAll(reWheelCUDA.ReplaceAllString(comp, ""), "-", "_")
		site := path.Dir(d.Path)
		if !strings.HasPrefix(lib, site+"/nvidia/"+comp+"/") && !strings.HasPrefix(lib, site+"/"+comp+"/") {
			continue
		}
		if found != "" && found != d.Version {
			return ver // two wheels claim it
		}
		found = d.Version
	}
	if found == "" || (found != ver && !strings.HasPrefix(found, ver+".")) {
		return ver
	}
	return found
}

// sonameOf guesses a soname from a file name: libcublasLt.so.11.11.3.6
// is libcublasLt.so.11.
func sonameOf(base string) string {
	i := strings.Index(base, ".so")
	if i < 0 {
		return ""
	}
	rest := strings.TrimPrefix(base[i+3:], ".")
	major, _, _ := strings.Cut(rest, ".")
	if major == "" {
		return base[:i+3]
	}
	return base[:i+3] + "." + major
}

func versionString(v matrix.Version) string {
	if v.IsZero() {
		return ""
	}
	return v.String()
}

// mergeKernels is the union of two architecture lists.
func mergeKernels(a, b Kernels) Kernels {
	union := func(x, y []string) []string {
		m := map[string]bool{}
		for _, s := range append(append([]string(nil), x...), y...) {
			m[s] = true
		}
		if len(m) == 0 {
			return nil
		}
		return slices.SortedFunc(maps.Keys(m), matrix.CompareArchs)
	}
	return Kernels{SASS: union(a.SASS, b.SASS), PTX: union(a.PTX, b.PTX)}
}

// sonames are the DT_SONAME of the visible ELF objects the walk read,
// by path.
func (x *elfDeps) sonames(w *WalkResult) map[string]string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]string{}
	for _, o := range x.objs {
		if o.dyn != nil && o.dyn.soname != "" && w.Visible(o.layer, o.path) {
			out[o.path] = o.dyn.soname
		}
	}
	return out
}

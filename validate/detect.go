package validate

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuimg/gpuimg/matrix"
)

// Found is what is really inside an image, read from its files.
type Found struct {
	OS       string `json:"os,omitempty"`        // NVIDIA's name: ubuntu22.04, rockylinux9, debian12
	OSPretty string `json:"os_pretty,omitempty"` // PRETTY_NAME
	// CUDA is the CUDA version of the image: the toolkit's version.json,
	// else the newest system libcudart.
	CUDA string `json:"cuda,omitempty"`
	// CuDNN, NCCL and CuBLAS are what the frameworks load: NVIDIA's pip
	// wheels when present, else the system libraries.
	CuDNN  string `json:"cudnn,omitempty"`
	NCCL   string `json:"nccl,omitempty"`
	CuBLAS string `json:"cublas,omitempty"`
	Python string `json:"python,omitempty"`
	// Packages are pip-installed distributions, normalized name → version.
	Packages map[string]string `json:"packages"`
	// Torch is read from torch/version.py.
	Torch *TorchInfo `json:"torch,omitempty"`
	// Kernels maps each library with device code to its architectures.
	Kernels map[string]Kernels `json:"kernels"`
	// Libraries are the CUDA libraries found, system and pip.
	Libraries []Library `json:"libraries,omitempty"`
	// DriverLibs are NVIDIA driver user-space libraries baked into the
	// image (libcuda.so.535.104.05, libnvidia-ml.so.…), outside CUDA's
	// forward-compatibility directory and the link stubs. The container
	// toolkit mounts the host driver's own; a copy in the image can
	// shadow them.
	DriverLibs []Library `json:"driver_libs,omitempty"`

	// Unreadable lists libraries whose device code could not be read to
	// the end (a corrupt fat-binary header, a truncated ELF): what they
	// hold is unknown, not absent.
	Unreadable []UnreadableLib `json:"unreadable,omitempty"`

	secrets    []secretHit
	toolHits   []toolHit // files of the matrix's cuda-tool advisories
	ncclConf   string    // /etc/nccl.conf, for the fabric checks
	venvPython string
	pythons    map[string]bool
	sitePython map[string]string // site-packages dir → python minor
}

// TorchInfo is what torch/version.py says.
type TorchInfo struct {
	Version string `json:"version"`
	CUDA    string `json:"cuda,omitempty"` // empty for a CPU build
	Path    string `json:"path"`
}

// UnreadableLib is a library whose device code could not be read.
type UnreadableLib struct {
	Path  string `json:"path"`
	Layer int    `json:"layer"`
	// Error says what could not be read, and where.
	Error string `json:"error"`
	// Kernels are what was read before the damage.
	Kernels Kernels `json:"kernels"`
}

// secretHit is what one layer entry holds, in any layer: a file deleted
// by a later layer is still in the image.
type secretHit struct {
	layer   int
	path    string
	matches []secretMatch
}

// Library is one CUDA library file.
type Library struct {
	Family  string `json:"family"` // cublas, cudnn, nccl, …
	Version string `json:"version,omitempty"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Pip     bool   `json:"pip"` // from an NVIDIA pip wheel (site-packages/nvidia/…)
}

var (
	reDriverLib    = regexp.MustCompile(`^lib(cuda|nvidia-ml|nvidia-ptxjitcompiler|nvidia-nvvm|cudadebugger)\.so\.([0-9]{3}\.[0-9]+(?:\.[0-9]+)?)$`)
	reVersionedLib = regexp.MustCompile(`^lib(cudart|cudnn|nccl|cublas|cublasLt|cufft|curand|cusparse|cusolver|nvrtc|nvJitLink|cudnn_[a-z_]+)\.so(\.[0-9][0-9.]*)?$`)
	reDistInfo     = regexp.MustCompile(`^(.*/(?:site|dist)-packages)/([^/]+)\.dist-info/METADATA$`)
	rePythonDir    = regexp.MustCompile(`(?:^|/)lib/python(3\.[0-9]+)/(?:site|dist)-packages$`)
	rePythonBin    = regexp.MustCompile(`^usr/(?:local/)?bin/python(3\.[0-9]+)$`)
	reCUDAVersion  = regexp.MustCompile(`^usr/local/cuda(-[0-9.]+)?/version\.(json|txt)$`)
	reDefine       = regexp.MustCompile(`(?m)^#define\s+(CUDNN_MAJOR|CUDNN_MINOR|CUDNN_PATCHLEVEL|NCCL_MAJOR|NCCL_MINOR|NCCL_PATCH|CUDA_VERSION)\s+([0-9]+)`)
	reTorchVersion = regexp.MustCompile(`(?m)^__version__[ \t]*=[ \t]*['"]([^'"\n]+)['"]`)
	reNormalize    = regexp.MustCompile(`[-_.]+`)
)

// detector collects Found from the entries Walk yields.
type detector struct {
	f         Found
	toolkit   string // from version.json
	runtimes  []string
	sysCuDNN  string
	sysNCCL   string
	sysCuBLAS string
	headers   map[string]map[string]int // header file → defines

	inv *invCollector // nil unless Options.Inventory
	// tools are the matrix's cuda-tool advisories, toolNames the base
	// names their files have.
	tools     []matrix.Advisory
	toolNames map[string]bool

	mu      sync.Mutex
	facts   []fact
	secrets []secretHit
	elf     *elfDeps // the libs/closure check's reads

	scan    *scanBudget // the secrets content scan (scan.go)
	scanCut []string    // files it did not read to the end (the first few)
}

func newDetector() *detector {
	return &detector{
		f:       Found{Packages: map[string]string{}, Kernels: map[string]Kernels{}, pythons: map[string]bool{}, sitePython: map[string]string{}},
		headers: map[string]map[string]int{},
		elf:     newELFDeps(Limits{}),
		scan:    newScanBudget(Limits{}),
	}
}

// readSmall reads at most n bytes of r.
func readSmall(r io.Reader, n int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, n))
	return b
}

// fact is what one entry contributes, applied only if the entry turns out
// to be visible in the final filesystem.
type fact struct {
	layer int
	path  string
	apply func(d *detector)
}

// visit parses an entry and records its fact; it is called concurrently
// for different layers.
func (d *detector) visit(e Entry, r io.Reader) error {
	var sc *fileScan
	if e.Header.Typeflag == tar.TypeReg && e.Header.Size > 0 {
		sc = d.scan.file(e.Path)
		r = io.TeeReader(r, sc) // every byte any parser reads is scanned once
	}
	tee := r
	r, elfDone := d.elf.observe(e, r)
	if f := d.parse(e, r); f != nil {
		d.mu.Lock()
		d.facts = append(d.facts, fact{layer: e.Layer, path: e.Path, apply: f})
		d.mu.Unlock()
	}
	elfDone()
	if sc == nil {
		return nil
	}
	hits, cut, err := sc.finish(tee)
	if err != nil {
		return err
	}
	d.addScanned(e, hits, cut)
	return nil
}

// addScanned records what the content scan found in a file, unless the
// file's own format already said (a .netrc's password is found both
// ways), and notes a file it did not read to the end.
func (d *detector) addScanned(e Entry, hits []secretMatch, cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cut && len(d.scanCut) < 5 {
		d.scanCut = append(d.scanCut, "/"+e.Path)
	}
	if len(hits) == 0 {
		return
	}
	for _, h := range d.secrets {
		if h.layer == e.Layer && h.path == e.Path {
			return
		}
	}
	d.secrets = append(d.secrets, secretHit{layer: e.Layer, path: e.Path, matches: hits})
}

// parse reads what an entry says; it touches no detector state.
func (d *detector) parse(e Entry, r io.Reader) func(d *detector) {
	p := e.Path
	base := path.Base(p)
	h := e.Header
	isReg := h.Typeflag == tar.TypeReg // archive/tar reads the legacy TypeRegA as TypeReg
	var fs []func(d *detector)
	add := func(f func(d *detector)) { fs = append(fs, f) }
	if m := rePythonBin.FindStringSubmatch(p); m != nil {
		add(func(d *detector) { d.f.pythons[m[1]] = true })
	}
	if h.Typeflag == tar.TypeDir && strings.HasSuffix(p, "-packages") {
		if m := rePythonDir.FindStringSubmatch(p); m != nil {
			add(func(d *detector) { d.f.sitePython[p] = m[1]; d.f.pythons[m[1]] = true })
		}
	}
	done := func() func(d *detector) {
		if len(fs) == 0 {
			return nil
		}
		return func(d *detector) {
			for _, f := range fs {
				f(d)
			}
		}
	}
	if !isReg && h.Typeflag != tar.TypeSymlink {
		return done()
	}
	if isSecretFile(p) && isReg || maybeServiceAccount(p, h.Size) && isReg {
		b := readSmall(r, 1<<20)
		if ms := secretsInFile(p, b); len(ms) > 0 {
			// Recorded whether or not the file is visible at the end.
			d.mu.Lock()
			d.secrets = append(d.secrets, secretHit{layer: e.Layer, path: p, matches: ms})
			d.mu.Unlock()
		}
		if isSecretFile(p) {
			return done()
		}
		r = io.MultiReader(bytes.NewReader(b), r) // the other parsers read it too
	}
	if isReg {
		if f := d.parseTools(p); f != nil {
			add(f)
		}
	}
	if d.inv != nil && isReg {
		if f := parseInventory(p, func(n int64) []byte { return readSmall(r, n) }); f != nil {
			add(f)
		}
	}
	switch {
	case (p == "etc/os-release" || p == "usr/lib/os-release") && isReg:
		b := readSmall(r, 64<<10)
		name, pretty := parseOSRelease(b)
		info := osReleaseKV(b)
		add(func(d *detector) {
			if d.f.OS == "" || p == "etc/os-release" {
				d.f.OS, d.f.OSPretty = name, pretty
				if d.inv != nil {
					d.inv.os = info
				}
			}
		})
	case reCUDAVersion.MatchString(p) && isReg:
		b := readSmall(r, 1<<20)
		if v := parseCUDAVersionFile(base, b); v != "" {
			var comps []CUDAComponent
			if d.inv != nil && base == "version.json" {
				comps = parseToolkitComponents(p, b)
			}
			add(func(d *detector) {
				if newer(v, d.toolkit) {
					d.toolkit = v
					if d.inv != nil {
						d.inv.toolkit = comps
					}
				}
			})
		}
	case p == "etc/nccl.conf" && isReg:
		conf := string(readSmall(r, 64<<10))
		add(func(d *detector) { d.f.ncclConf = conf })
	case base == "pyvenv.cfg" && isReg:
		for line := range strings.SplitSeq(string(readSmall(r, 64<<10)), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && (strings.TrimSpace(k) == "version" || strings.TrimSpace(k) == "version_info") {
				py := matrix.MajorMinor(strings.TrimSpace(v))
				add(func(d *detector) { d.f.venvPython = py })
			}
		}
	case strings.HasSuffix(p, "/torch/version.py") && strings.Contains(p, "-packages/") && isReg:
		b := readSmall(r, 64<<10)
		ti := &TorchInfo{Path: p}
		if m := reTorchVersion.FindSubmatch(b); m != nil {
			ti.Version = string(m[1])
		}
		if cuda, ok := matrix.TorchCUDA(b); ok {
			ti.CUDA = cuda
		}
		add(func(d *detector) { d.f.Torch = ti })
	case (base == "cudnn_version.h" || base == "nccl.h" || base == "cuda.h") && isReg:
		defs := map[string]int{}
		for _, m := range reDefine.FindAllSubmatch(readSmall(r, 4<<20), -1) {
			n, _ := strconv.Atoi(string(m[2]))
			defs[string(m[1])] = n
		}
		add(func(d *detector) { d.headers[p] = defs })
	}
	if m := reDistInfo.FindStringSubmatch(p); m != nil && isReg {
		name, version := parseMetadata(readSmall(r, 256<<10))
		pm := rePythonDir.FindStringSubmatch(m[1])
		add(func(d *detector) {
			if name != "" {
				d.f.Packages[normalize(name)] = version
				if d.inv != nil {
					d.inv.dists = append(d.inv.dists, PythonDist{Name: normalize(name), Version: version, Path: path.Dir(p)})
				}
			}
			if pm != nil {
				d.f.sitePython[m[1]] = pm[1]
				d.f.pythons[pm[1]] = true
			}
		})
		return done()
	}
	if m := reVersionedLib.FindStringSubmatch(base); m != nil && isReg {
		family := strings.ToLower(m[1])
		if strings.HasPrefix(family, "cudnn_") {
			family = "cudnn"
		}
		version := strings.TrimPrefix(m[2], ".")
		pip := strings.Contains(p, "-packages/nvidia/")
		lib := Library{Family: family, Version: version, Path: p, Size: h.Size, Pip: pip}
		plain := m[1] == "cudnn"
		add(func(d *detector) {
			d.f.Libraries = append(d.f.Libraries, lib)
			if pip || strings.Count(version, ".") < 2 {
				return
			}
			switch family {
			case "cudart":
				d.runtimes = append(d.runtimes, version)
			case "cudnn":
				if plain && newer(version, d.sysCuDNN) {
					d.sysCuDNN = version
				}
			case "nccl":
				if newer(version, d.sysNCCL) {
					d.sysNCCL = version
				}
			case "cublas":
				if newer(version, d.sysCuBLAS) {
					d.sysCuBLAS = version
				}
			}
		})
	}
	if m := reDriverLib.FindStringSubmatch(base); m != nil && isReg && !strings.Contains(p, "/compat/") && !strings.Contains(p, "/stubs/") {
		lib := Library{Family: m[1], Version: m[2], Path: p, Size: h.Size}
		add(func(d *detector) { d.f.DriverLibs = append(d.f.DriverLibs, lib) })
	}
	if isReg && h.Size > 64<<10 && isDeviceLib(p, base) {
		k, err := scanLibrary(r, h.Size)
		switch {
		case err != nil:
			u := UnreadableLib{Path: p, Layer: e.Layer, Error: err.Error(), Kernels: k}
			add(func(d *detector) { d.f.Unreadable = append(d.f.Unreadable, u) })
		case !k.Empty():
			add(func(d *detector) { d.f.Kernels[p] = k })
		}
	}
	return done()
}

// isDeviceLib says whether a file may carry CUDA device code worth scanning.
func isDeviceLib(p, base string) bool {
	if !strings.Contains(base, ".so") {
		return false
	}
	for _, pre := range []string{"libcu", "libnv", "libnccl", "libtorch", "libc10_cuda", "libcaffe2", "libxla", "libjax", "libtensorflow", "libflash", "libcudnn"} {
		if strings.HasPrefix(base, pre) {
			return true
		}
	}
	return strings.Contains(p, "-packages/nvidia/") || strings.Contains(p, "/cuda")
}

// finish applies the facts of the entries visible in the final
// filesystem, in a fixed order, and derives the summary fields.
func (d *detector) finish(w *WalkResult) Found {
	sort.Slice(d.facts, func(i, j int) bool {
		if d.facts[i].path != d.facts[j].path {
			return d.facts[i].path < d.facts[j].path
		}
		return d.facts[i].layer < d.facts[j].layer
	})
	for _, fa := range d.facts {
		if w.Visible(fa.layer, fa.path) {
			fa.apply(d)
		}
	}
	f := d.f
	// CUDA: the toolkit's own version file, else the newest system runtime.
	f.CUDA = d.toolkit
	if f.CUDA == "" {
		for _, v := range d.runtimes {
			if newer(v, f.CUDA) {
				f.CUDA = v
			}
		}
	}
	// Libraries the frameworks load: pip wheels first, then the system.
	// The wheel names per library are matrix.LibraryWheels' (CUDA 13's
	// suffix-less nvidia-cublas included); cu12 first, then cu11, then the
	// CUDA 13 names, as before.
	pick := func(lib, sys string) string {
		names := matrix.LibraryWheels(lib)
		order := append([]string{names[1], names[0]}, names[2:]...)
		for _, n := range order {
			if v := f.Packages[n]; v != "" {
				return v
			}
		}
		return sys
	}
	f.CuDNN = pick("cudnn", d.sysCuDNN)
	f.NCCL = pick("nccl", d.sysNCCL)
	f.CuBLAS = pick("cublas", d.sysCuBLAS)
	for hp, defs := range d.headers {
		switch path.Base(hp) {
		case "cudnn_version.h":
			if f.CuDNN == "" && defs["CUDNN_MAJOR"] > 0 {
				f.CuDNN = fmtVersion(defs["CUDNN_MAJOR"], defs["CUDNN_MINOR"], defs["CUDNN_PATCHLEVEL"])
			}
		case "nccl.h":
			if f.NCCL == "" && defs["NCCL_MAJOR"] > 0 {
				f.NCCL = fmtVersion(defs["NCCL_MAJOR"], defs["NCCL_MINOR"], defs["NCCL_PATCH"])
			}
		case "cuda.h":
			if f.CUDA == "" && defs["CUDA_VERSION"] > 0 {
				v := defs["CUDA_VERSION"]
				f.CUDA = strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
			}
		}
	}
	// Python: the venv's, else the one whose site-packages hold torch,
	// else the newest installed.
	switch {
	case f.venvPython != "":
		f.Python = f.venvPython
	case f.Torch != nil:
		for dir, py := range f.sitePython {
			if strings.HasPrefix(f.Torch.Path, dir+"/") {
				f.Python = py
			}
		}
	}
	if f.Python == "" {
		for py := range f.pythons {
			if newer(py, f.Python) {
				f.Python = py
			}
		}
	}
	sort.Slice(f.Unreadable, func(i, j int) bool { return f.Unreadable[i].Path < f.Unreadable[j].Path })
	f.secrets = d.secrets
	sort.Slice(f.secrets, func(i, j int) bool {
		if f.secrets[i].layer != f.secrets[j].layer {
			return f.secrets[i].layer < f.secrets[j].layer
		}
		return f.secrets[i].path < f.secrets[j].path
	})
	sort.Slice(f.Libraries, func(i, j int) bool { return f.Libraries[i].Path < f.Libraries[j].Path })
	sort.Slice(f.DriverLibs, func(i, j int) bool { return f.DriverLibs[i].Path < f.DriverLibs[j].Path })
	return f
}

func fmtVersion(parts ...int) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ".")
}

// newer reports whether dotted version a sorts after b ("" and versions
// that do not parse are oldest).
func newer(a, b string) bool {
	va, err := matrix.ParseVersion(a)
	if err != nil {
		return false
	}
	vb, err := matrix.ParseVersion(b)
	return err != nil || vb.Less(va)
}

func normalize(name string) string { return strings.ToLower(reNormalize.ReplaceAllString(name, "-")) }

// parseMetadata reads Name and Version from a dist-info METADATA header.
func parseMetadata(b []byte) (name, version string) {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Name:"); ok {
			name = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(line, "Version:"); ok {
			version = strings.TrimSpace(v)
		}
	}
	return name, version
}

// parseOSRelease turns os-release into NVIDIA's OS naming.
func parseOSRelease(b []byte) (name, pretty string) {
	kv := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok {
			kv[k] = strings.Trim(v, `"'`)
		}
	}
	id, ver := kv["ID"], kv["VERSION_ID"]
	switch id {
	case "rocky":
		return "rockylinux" + strings.SplitN(ver, ".", 2)[0], kv["PRETTY_NAME"]
	case "rhel":
		return "ubi" + strings.SplitN(ver, ".", 2)[0], kv["PRETTY_NAME"]
	}
	return id + ver, kv["PRETTY_NAME"]
}

// parseCUDAVersionFile reads version.json ({"cuda":{"version":"12.2.2"}})
// or the older version.txt ("CUDA Version 11.0.228").
func parseCUDAVersionFile(base string, b []byte) string {
	if base == "version.json" {
		var v struct {
			CUDA struct {
				Version string `json:"version"`
			} `json:"cuda"`
		}
		if json.Unmarshal(b, &v) == nil {
			return v.CUDA.Version
		}
		return ""
	}
	s := strings.TrimSpace(string(b))
	if v, ok := strings.CutPrefix(s, "CUDA Version "); ok {
		return strings.Fields(v)[0]
	}
	return ""
}

// scanLibrary reads a library's device code. A library cut short (its
// ELF section headers lie past the end of the file) or a damaged fat
// binary is an error saying what could not be read; the kernels are
// those read before the damage.
func scanLibrary(r io.Reader, size int64) (Kernels, error) {
	hdr := make([]byte, 64)
	n, _ := io.ReadFull(r, hdr)
	hdr = hdr[:n]
	k, err := ScanFatbin(io.MultiReader(bytes.NewReader(hdr), r))
	if err != nil {
		return k, fmt.Errorf("device code unreadable: %w", err)
	}
	if end, ok := elfEnd(hdr); ok && end > uint64(size) {
		return k, fmt.Errorf("truncated ELF: its section headers end at byte %d, the file has %d bytes", end, size)
	}
	return k, nil
}

// elfEnd is where an ELF file's section header table ends, from its
// header (little-endian ELF32 and ELF64); ok is false for other files.
func elfEnd(h []byte) (end uint64, ok bool) {
	if len(h) < 52 || string(h[:4]) != "\x7fELF" || h[5] != 1 {
		return 0, false
	}
	le := binary.LittleEndian
	switch h[4] {
	case 1: // ELF32
		return uint64(le.Uint32(h[0x20:])) + uint64(le.Uint16(h[0x2E:]))*uint64(le.Uint16(h[0x30:])), true
	case 2: // ELF64
		if len(h) < 64 {
			return 0, false
		}
		off := le.Uint64(h[0x28:])
		tab := uint64(le.Uint16(h[0x3A:])) * uint64(le.Uint16(h[0x3C:]))
		if off > 1<<62 {
			return off, true
		}
		return off + tab, true
	}
	return 0, false
}

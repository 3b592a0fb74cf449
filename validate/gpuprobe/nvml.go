package gpuprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVML is loaded at run time from the driver's libnvidia-ml.so.1 with
// purego, a cgo-free dlopen: the gpuimg binary stays CGO_ENABLED=0 and
// depends on nothing but the C library's loader, so the same file can be
// mounted into any glibc-based image (Ubuntu 20.04 to 24.04, Rocky 8/9,
// UBI) as the probe. go-nvml would need cgo, and a cgo binary built here
// would need this machine's glibc. Without the library, or without a GPU,
// probing reports "no NVIDIA driver" instead of failing.

// ErrNoDriver is wrapped when no usable NVIDIA driver is present.
var ErrNoDriver = errors.New("no NVIDIA driver")

// GPUInfo is one GPU as NVML reports it.
type GPUInfo struct {
	Index             int    `json:"index"`
	Name              string `json:"name"`
	UUID              string `json:"uuid"`
	ComputeCapability string `json:"compute_capability"` // "9.0"
	Arch              string `json:"arch"`               // "sm_90"
	MemoryBytes       uint64 `json:"memory_bytes"`
	MIG               string `json:"mig"`                  // enabled, disabled, unsupported
	PCIeGen           int    `json:"pcie_gen,omitempty"`   // the link's current generation (drops when idle)
	PCIeWidth         int    `json:"pcie_width,omitempty"` // and width
	// PCIeMaxGen and PCIeMaxWidth are the most the GPU and its slot can
	// do: what the host-transfer benchmarks are judged against.
	PCIeMaxGen   int `json:"pcie_max_gen,omitempty"`
	PCIeMaxWidth int `json:"pcie_max_width,omitempty"`
	// PCIeGPUMaxGen is the most the GPU itself can do, whatever the slot
	// (PCIeMaxGen is the GPU and its slot together).
	PCIeGPUMaxGen int `json:"pcie_gpu_max_gen,omitempty"`
	// Virtualization is none, passthrough or vgpu (a guest's view of a
	// vGPU; host modes are named host-vgpu, host-vsga).
	Virtualization string `json:"virtualization,omitempty"`
	// Processes counts the compute processes on the GPU when it was
	// probed, before the probe's own started: other tenants' work.
	Processes *int `json:"processes,omitempty"`
	// MIGDevices are the GPU's MIG instances when MIG is enabled.
	MIGDevices []MIGDevice `json:"mig_devices,omitempty"`
	// DuringBench is what NVML reported while the benchmarks ran.
	DuringBench *BenchSample `json:"during_bench,omitempty"`
	// NVLink is what NVML reports of the GPU's NVLinks; nil for a GPU
	// without any (or a driver that cannot say).
	NVLink *NVLinkInfo `json:"nvlink,omitempty"`
	// Error says why NVML could not open this GPU (lost, blocked by
	// cgroups); the other fields are then empty but for Index.
	Error string `json:"error,omitempty"`
	Health
}

// Health is what NVML says of a GPU's condition: power, clocks, memory
// errors, persistence. A field NVML does not answer for this GPU (a
// GeForce card has no ECC, a vGPU hides the power limit) stays zero.
type Health struct {
	PowerLimitW        float64 `json:"power_limit_w,omitempty"`         // enforced now
	DefaultPowerLimitW float64 `json:"default_power_limit_w,omitempty"` // the card's default
	SMClockMHz         int     `json:"sm_clock_mhz,omitempty"`          // when probed (drops when idle)
	MaxSMClockMHz      int     `json:"max_sm_clock_mhz,omitempty"`
	MemClockMHz        int     `json:"mem_clock_mhz,omitempty"`
	MaxMemClockMHz     int     `json:"max_mem_clock_mhz,omitempty"`
	ECC                string  `json:"ecc,omitempty"` // enabled, disabled
	// UncorrectedECC counts uncorrected memory errors since the driver
	// loaded (volatile); nil when NVML does not count them.
	UncorrectedECC *uint64 `json:"ecc_uncorrected_volatile,omitempty"`
	// RemapPending: a row remapping waits for a GPU reset; RemapFailed: a
	// remapping failed and the card needs service.
	RemapPending bool   `json:"row_remap_pending,omitempty"`
	RemapFailed  bool   `json:"row_remap_failed,omitempty"`
	Persistence  string `json:"persistence,omitempty"` // enabled, disabled
	// ClockEvents are the reasons NVML gave for holding clocks down
	// (nvmlClocksEventReasons) at the moment the GPU was probed.
	ClockEvents []string `json:"clock_events,omitempty"`
}

// NVLinkInfo is what NVML reports of a GPU's NVLinks: NCCL between GPUs
// runs over the active ones, or over PCIe when none is.
type NVLinkInfo struct {
	// Links is how many the GPU has: NVML_FI_DEV_NVLINK_LINK_COUNT, else
	// the links whose state NVML answers for.
	Links int `json:"links"`
	// Active counts the links that are up; Inactive lists the others by
	// number.
	Active   int   `json:"active"`
	Inactive []int `json:"inactive,omitempty"`
	// Version is the first active link's NVLink version ("4.0", from
	// nvmlNvlinkVersion_t).
	Version string `json:"version,omitempty"`
	// SpeedMBps is NVML's common speed of the active links
	// (NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON), recorded beside the matrix's
	// rate, not judged.
	SpeedMBps uint64 `json:"speed_mbps,omitempty"`
}

// Major is the NVLink generation of Version (3 for "3.1"), 0 when unknown.
func (n *NVLinkInfo) Major() int {
	if n == nil {
		return 0
	}
	m, _, _ := strings.Cut(n.Version, ".")
	v, _ := strconv.Atoi(m)
	return v
}

// MIGDevice is one MIG instance of a GPU: its slice of the card.
type MIGDevice struct {
	UUID        string `json:"uuid"`
	Name        string `json:"name,omitempty"`
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	SMs         int    `json:"sms,omitempty"`
}

// BenchSample is what NVML reported of one GPU while the benchmarks ran,
// polled about twice a second.
type BenchSample struct {
	Samples int `json:"samples"`
	// ClockEvents counts, per reason, the samples that held the clocks
	// down for it.
	ClockEvents map[string]int `json:"clock_events,omitempty"`
	// PCIeGen and PCIeWidth are the fastest link seen: a link trains down
	// when idle, so only a link that never reached its maximum under load
	// is degraded.
	PCIeGen       int `json:"pcie_gen,omitempty"`
	PCIeWidth     int `json:"pcie_width,omitempty"`
	MinSMClockMHz int `json:"min_sm_clock_mhz,omitempty"`
	MaxSMClockMHz int `json:"max_sm_clock_mhz,omitempty"`
}

// DriverInfo is the host's NVIDIA driver.
type DriverInfo struct {
	Version     string `json:"version"`      // 535.104.05
	CUDAVersion string `json:"cuda_version"` // the newest CUDA it supports, 12.2
}

type nvmlLib struct {
	init                 func() int32
	shutdown             func() int32
	errorString          func(int32) string
	driverVersion        func(*byte, uint32) int32
	cudaDriverVersion    func(*int32) int32
	deviceCount          func(*uint32) int32
	deviceByIndex        func(uint32, *uintptr) int32
	deviceName           func(uintptr, *byte, uint32) int32
	deviceUUID           func(uintptr, *byte, uint32) int32
	deviceCC             func(uintptr, *int32, *int32) int32
	deviceMemory         func(uintptr, *nvmlMemory) int32
	deviceMIG            func(uintptr, *uint32, *uint32) int32
	devicePCIeGeneration func(uintptr, *uint32) int32
	devicePCIeWidth      func(uintptr, *uint32) int32
	devicePCIeMaxGen     func(uintptr, *uint32) int32
	devicePCIeMaxWidth   func(uintptr, *uint32) int32
	// Health reads: registered when the library has them (nil otherwise),
	// so an older driver still probes.
	powerLimit        func(uintptr, *uint32) int32
	powerDefaultLimit func(uintptr, *uint32) int32
	clock             func(uintptr, uint32, *uint32) int32
	maxClock          func(uintptr, uint32, *uint32) int32
	eccMode           func(uintptr, *uint32, *uint32) int32
	eccErrors         func(uintptr, uint32, uint32, *uint64) int32
	remappedRows      func(uintptr, *uint32, *uint32, *uint32, *uint32) int32
	persistence       func(uintptr, *uint32) int32
	clockEvents       func(uintptr, *uint64) int32
	gpuMaxPCIeGen     func(uintptr, *uint32) int32
	virtMode          func(uintptr, *uint32) int32
	computeProcs      func(uintptr, *uint32, unsafe.Pointer) int32
	maxMIGCount       func(uintptr, *uint32) int32
	migByIndex        func(uintptr, uint32, *uintptr) int32
	attributes        func(uintptr, *nvmlAttributes) int32
	nvlinkState       func(uintptr, uint32, *uint32) int32
	nvlinkVersion     func(uintptr, uint32, *uint32) int32
	fieldValues       func(uintptr, int32, *nvmlFieldValue) int32
}

// nvmlFieldValue is nvmlFieldValue_t (nvml.h): the field's id and scope,
// two timestamps, the value's type and return code, and an 8-byte union.
type nvmlFieldValue struct {
	FieldID, ScopeID       uint32
	Timestamp, LatencyUsec int64
	ValueType, Return      int32
	Value                  [8]byte
}

// uint is the field's value as an unsigned integer, by its
// nvmlValueType_t (0 is a double).
func (f nvmlFieldValue) uint() uint64 {
	switch f.ValueType {
	case 0:
		return uint64(math.Float64frombits(binary.LittleEndian.Uint64(f.Value[:])))
	case 1, 5: // unsigned int, int
		return uint64(binary.LittleEndian.Uint32(f.Value[:]))
	case 6: // unsigned short
		return uint64(binary.LittleEndian.Uint16(f.Value[:]))
	}
	return binary.LittleEndian.Uint64(f.Value[:]) // unsigned long, long long
}

// NVML field ids (nvml.h) and the most links a GPU may have
// (NVML_NVLINK_MAX_LINKS in NVML 13; a GPU has fewer, which
// NVML_FI_DEV_NVLINK_LINK_COUNT tells).
const (
	nvmlFieldNVLinkSpeedCommon = 90
	nvmlFieldNVLinkLinkCount   = 91
	nvmlNVLinkMaxLinks         = 36
)

// nvlinkVersions are nvmlNvlinkVersion_t's values: an enumeration, not
// the version (an A100 answers 5, NVLink 3.1; open-mpi/hwloc#658), named
// so in nvml.h since NVML 12.8.
var nvlinkVersions = map[uint32]string{1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}

// nvmlAttributes is nvmlDeviceAttributes_t (nvml.h): eight unsigned ints
// and the memory size in MB.
type nvmlAttributes struct {
	MultiprocessorCount, SharedCopyEngineCount, SharedDecoderCount, SharedEncoderCount uint32
	SharedJpegCount, SharedOfaCount, GPUInstanceSliceCount, ComputeInstanceSliceCount  uint32
	MemorySizeMB                                                                       uint64
}

// nvmlHealthSymbols are the optional functions loadNVML registers when
// present, with the field each fills.
func (l *nvmlLib) healthSymbols() map[string]any {
	return map[string]any{
		"nvmlDeviceGetEnforcedPowerLimit":           &l.powerLimit,
		"nvmlDeviceGetPowerManagementDefaultLimit":  &l.powerDefaultLimit,
		"nvmlDeviceGetClockInfo":                    &l.clock,
		"nvmlDeviceGetMaxClockInfo":                 &l.maxClock,
		"nvmlDeviceGetEccMode":                      &l.eccMode,
		"nvmlDeviceGetTotalEccErrors":               &l.eccErrors,
		"nvmlDeviceGetRemappedRows":                 &l.remappedRows,
		"nvmlDeviceGetPersistenceMode":              &l.persistence,
		"nvmlDeviceGetCurrentClocksThrottleReasons": &l.clockEvents,
		"nvmlDeviceGetGpuMaxPcieLinkGeneration":     &l.gpuMaxPCIeGen,
		"nvmlDeviceGetVirtualizationMode":           &l.virtMode,
		"nvmlDeviceGetComputeRunningProcesses_v3":   &l.computeProcs,
		"nvmlDeviceGetMaxMigDeviceCount":            &l.maxMIGCount,
		"nvmlDeviceGetMigDeviceHandleByIndex":       &l.migByIndex,
		"nvmlDeviceGetAttributes_v2":                &l.attributes,
		"nvmlDeviceGetNvLinkState":                  &l.nvlinkState,
		"nvmlDeviceGetNvLinkVersion":                &l.nvlinkVersion,
		"nvmlDeviceGetFieldValues":                  &l.fieldValues,
	}
}

type nvmlMemory struct{ Total, Free, Used uint64 }

const nvmlSuccess = 0

// nvmlPaths are tried in order: the soname the NVIDIA container toolkit
// mounts, then the usual library directories.
var nvmlPaths = []string{"libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1"}

func loadNVML(paths []string) (lib *nvmlLib, err error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: NVML is only probed on Linux", ErrNoDriver)
	}
	var h uintptr
	var first error
	for _, p := range paths {
		var err error
		if h, err = purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			break
		}
		if first == nil {
			first = err
		}
	}
	if h == 0 {
		return nil, fmt.Errorf("%w: libnvidia-ml.so.1 not found (%w); install the NVIDIA driver, and for containers the NVIDIA container toolkit with --gpus", ErrNoDriver, first)
	}
	defer func() {
		if r := recover(); r != nil {
			lib, err = nil, fmt.Errorf("%w: libnvidia-ml.so.1 lacks a function gpuimg needs (%v); the driver is too old", ErrNoDriver, r)
		}
	}()
	l := &nvmlLib{}
	purego.RegisterLibFunc(&l.init, h, "nvmlInit_v2")
	purego.RegisterLibFunc(&l.shutdown, h, "nvmlShutdown")
	purego.RegisterLibFunc(&l.errorString, h, "nvmlErrorString")
	purego.RegisterLibFunc(&l.driverVersion, h, "nvmlSystemGetDriverVersion")
	purego.RegisterLibFunc(&l.cudaDriverVersion, h, "nvmlSystemGetCudaDriverVersion_v2")
	purego.RegisterLibFunc(&l.deviceCount, h, "nvmlDeviceGetCount_v2")
	purego.RegisterLibFunc(&l.deviceByIndex, h, "nvmlDeviceGetHandleByIndex_v2")
	purego.RegisterLibFunc(&l.deviceName, h, "nvmlDeviceGetName")
	purego.RegisterLibFunc(&l.deviceUUID, h, "nvmlDeviceGetUUID")
	purego.RegisterLibFunc(&l.deviceCC, h, "nvmlDeviceGetCudaComputeCapability")
	purego.RegisterLibFunc(&l.deviceMemory, h, "nvmlDeviceGetMemoryInfo")
	purego.RegisterLibFunc(&l.deviceMIG, h, "nvmlDeviceGetMigMode")
	purego.RegisterLibFunc(&l.devicePCIeGeneration, h, "nvmlDeviceGetCurrPcieLinkGeneration")
	purego.RegisterLibFunc(&l.devicePCIeWidth, h, "nvmlDeviceGetCurrPcieLinkWidth")
	purego.RegisterLibFunc(&l.devicePCIeMaxGen, h, "nvmlDeviceGetMaxPcieLinkGeneration")
	purego.RegisterLibFunc(&l.devicePCIeMaxWidth, h, "nvmlDeviceGetMaxPcieLinkWidth")
	for name, fn := range l.healthSymbols() {
		if _, err := purego.Dlsym(h, name); err == nil {
			purego.RegisterLibFunc(fn, h, name)
		}
	}
	return l, nil
}

// nvmlHint says what an nvmlInit failure usually means and what to do;
// the codes are nvmlReturn_t's in nvml.h.
func nvmlHint(rc int32) string {
	switch rc {
	case 9: // NVML_ERROR_DRIVER_NOT_LOADED
		return ": the driver's libraries are here but the NVIDIA kernel module is not loaded or no GPU device was passed in (containers: docker run --gpus all, or the NVIDIA container toolkit)"
	case 4: // NVML_ERROR_NO_PERMISSION
		return ": no permission to open /dev/nvidia*; run with access to the GPU devices"
	case 18: // NVML_ERROR_LIB_RM_VERSION_MISMATCH
		return ": this libnvidia-ml.so.1 belongs to another driver version than the loaded kernel module; an image that ships its own driver libraries shadows the host's (remove them from the image), or the host's driver was upgraded without a reboot"
	case 15: // NVML_ERROR_GPU_IS_LOST
		return ": a GPU has fallen off the bus; the host needs attention"
	case 17: // NVML_ERROR_OPERATING_SYSTEM
		return ": the GPU device is blocked by the operating system or cgroups"
	}
	return ""
}

func cstr(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// ProbeGPUs asks NVML for the driver and the GPUs. It returns an error
// wrapping ErrNoDriver when there is no driver or no GPU.
func ProbeGPUs() (*DriverInfo, []GPUInfo, error) {
	return probeGPUs(nvmlPaths)
}

func probeGPUs(paths []string) (*DriverInfo, []GPUInfo, error) {
	l, err := loadNVML(paths)
	if err != nil {
		return nil, nil, err
	}
	if rc := l.init(); rc != nvmlSuccess {
		return nil, nil, fmt.Errorf("%w: libnvidia-ml.so.1 is present but NVML did not initialise: %s (%d)%s", ErrNoDriver, l.errorString(rc), rc, nvmlHint(rc))
	}
	defer l.shutdown()
	buf := make([]byte, 96)
	d := &DriverInfo{}
	if rc := l.driverVersion(&buf[0], uint32(len(buf))); rc == nvmlSuccess {
		d.Version = cstr(buf)
	}
	var cv int32
	if rc := l.cudaDriverVersion(&cv); rc == nvmlSuccess {
		d.CUDAVersion = fmt.Sprintf("%d.%d", cv/1000, cv%1000/10)
	}
	var n uint32
	if rc := l.deviceCount(&n); rc != nvmlSuccess {
		return d, nil, fmt.Errorf("%w: NVML could not count GPUs: %s", ErrNoDriver, l.errorString(rc))
	}
	if n == 0 {
		return d, nil, fmt.Errorf("%w: the driver %s sees no GPU", ErrNoDriver, d.Version)
	}
	return d, l.devices(n), nil
}

// devices reads GPUs 0 to n-1. A GPU NVML cannot open (lost, blocked by
// cgroups, no permission) is kept with its Error, and the others are
// still read.
func (l *nvmlLib) devices(n uint32) []GPUInfo {
	buf := make([]byte, 96)
	var gpus []GPUInfo
	for i := range n {
		var h uintptr
		if rc := l.deviceByIndex(i, &h); rc != nvmlSuccess {
			gpus = append(gpus, GPUInfo{Index: int(i), Error: fmt.Sprintf("NVML cannot open it: %s (%d)%s", l.errorString(rc), rc, nvmlHint(rc))})
			continue
		}
		g := GPUInfo{Index: int(i), MIG: "unsupported"}
		if rc := l.deviceName(h, &buf[0], uint32(len(buf))); rc == nvmlSuccess {
			g.Name = cstr(buf)
		}
		if rc := l.deviceUUID(h, &buf[0], uint32(len(buf))); rc == nvmlSuccess {
			g.UUID = cstr(buf)
		}
		var major, minor int32
		if rc := l.deviceCC(h, &major, &minor); rc == nvmlSuccess {
			g.ComputeCapability = strconv.Itoa(int(major)) + "." + strconv.Itoa(int(minor))
			g.Arch = fmt.Sprintf("sm_%d%d", major, minor)
		}
		var mem nvmlMemory
		if rc := l.deviceMemory(h, &mem); rc == nvmlSuccess {
			g.MemoryBytes = mem.Total
		}
		var cur, pend uint32
		if rc := l.deviceMIG(h, &cur, &pend); rc == nvmlSuccess {
			g.MIG = map[uint32]string{0: "disabled", 1: "enabled"}[cur]
		}
		var gen, width uint32
		if rc := l.devicePCIeGeneration(h, &gen); rc == nvmlSuccess {
			g.PCIeGen = int(gen)
		}
		if rc := l.devicePCIeWidth(h, &width); rc == nvmlSuccess {
			g.PCIeWidth = int(width)
		}
		if rc := l.devicePCIeMaxGen(h, &gen); rc == nvmlSuccess {
			g.PCIeMaxGen = int(gen)
		}
		if rc := l.devicePCIeMaxWidth(h, &width); rc == nvmlSuccess {
			g.PCIeMaxWidth = int(width)
		}
		g.Health = l.health(h)
		l.sharing(h, &g)
		g.NVLink = l.nvlinks(h)
		gpus = append(gpus, g)
	}
	return gpus
}

// nvmlClockSM and nvmlClockMem are nvmlClockType_t's values.
const (
	nvmlClockSM  = 1
	nvmlClockMem = 2
)

// clockEventNames are nvmlClocksEventReasons' bits (nvml.h). GPU idle
// (0x1) is left out: it is no finding.
var clockEventNames = []struct {
	bit  uint64
	name string
}{
	{0x2, "applications clocks setting"},
	{0x4, "software power cap"},
	{0x8, "hardware slowdown"},
	{0x10, "sync boost"},
	{0x20, "software thermal slowdown"},
	{0x40, "hardware thermal slowdown"},
	{0x80, "hardware power brake slowdown"},
	{0x100, "display clock setting"},
}

// ClockEventNames names the bits of an nvmlClocksEventReasons mask.
func ClockEventNames(mask uint64) []string {
	var names []string
	for _, e := range clockEventNames {
		if mask&e.bit != 0 {
			names = append(names, e.name)
		}
	}
	return names
}

// health reads what the library offers of Health for the device h.
func (l *nvmlLib) health(h uintptr) Health {
	var hl Health
	var v, w, x, y uint32
	if l.powerLimit != nil && l.powerLimit(h, &v) == nvmlSuccess {
		hl.PowerLimitW = float64(v) / 1000
	}
	if l.powerDefaultLimit != nil && l.powerDefaultLimit(h, &v) == nvmlSuccess {
		hl.DefaultPowerLimitW = float64(v) / 1000
	}
	for _, c := range []struct {
		typ      uint32
		cur, max *int
	}{{nvmlClockSM, &hl.SMClockMHz, &hl.MaxSMClockMHz}, {nvmlClockMem, &hl.MemClockMHz, &hl.MaxMemClockMHz}} {
		if l.clock != nil && l.clock(h, c.typ, &v) == nvmlSuccess {
			*c.cur = int(v)
		}
		if l.maxClock != nil && l.maxClock(h, c.typ, &v) == nvmlSuccess {
			*c.max = int(v)
		}
	}
	if l.eccMode != nil && l.eccMode(h, &v, &w) == nvmlSuccess {
		hl.ECC = map[uint32]string{0: "disabled", 1: "enabled"}[v]
	}
	// NVML_MEMORY_ERROR_TYPE_UNCORRECTED (1), NVML_VOLATILE_ECC (0).
	var n uint64
	if hl.ECC == "enabled" && l.eccErrors != nil && l.eccErrors(h, 1, 0, &n) == nvmlSuccess {
		hl.UncorrectedECC = &n
	}
	if l.remappedRows != nil && l.remappedRows(h, &v, &w, &x, &y) == nvmlSuccess {
		hl.RemapPending, hl.RemapFailed = x != 0, y != 0
	}
	if l.persistence != nil && l.persistence(h, &v) == nvmlSuccess {
		hl.Persistence = map[uint32]string{0: "disabled", 1: "enabled"}[v]
	}
	var mask uint64
	if l.clockEvents != nil && l.clockEvents(h, &mask) == nvmlSuccess {
		hl.ClockEvents = ClockEventNames(mask)
	}
	return hl
}

// nvmlErrorInsufficientSize is NVML_ERROR_INSUFFICIENT_SIZE: the count
// asked for is in the count argument.
const nvmlErrorInsufficientSize = 7

// virtualizationModes are nvmlGpuVirtualizationMode_t's values.
var virtualizationModes = map[uint32]string{0: "none", 1: "passthrough", 2: "vgpu", 3: "host-vgpu", 4: "host-vsga"}

// sharing reads what says whether the GPU is shared: the GPU's own PCIe
// maximum, virtualization mode, other compute processes, MIG instances.
func (l *nvmlLib) sharing(h uintptr, g *GPUInfo) {
	var v uint32
	if l.gpuMaxPCIeGen != nil && l.gpuMaxPCIeGen(h, &v) == nvmlSuccess {
		g.PCIeGPUMaxGen = int(v)
	}
	if l.virtMode != nil && l.virtMode(h, &v) == nvmlSuccess {
		g.Virtualization = virtualizationModes[v]
	}
	// Asked with no room: NVML answers with the count alone (success when
	// there is none, INSUFFICIENT_SIZE with the count otherwise), so the
	// process struct's layout never matters.
	if l.computeProcs != nil {
		var n uint32
		if rc := l.computeProcs(h, &n, nil); rc == nvmlSuccess || rc == nvmlErrorInsufficientSize {
			c := int(n)
			g.Processes = &c
		}
	}
	if g.MIG != "enabled" || l.maxMIGCount == nil || l.migByIndex == nil || l.maxMIGCount(h, &v) != nvmlSuccess {
		return
	}
	buf := make([]byte, 96)
	for i := range v {
		var m uintptr
		if l.migByIndex(h, i, &m) != nvmlSuccess {
			continue // no instance in this slot
		}
		d := MIGDevice{}
		if l.deviceUUID(m, &buf[0], uint32(len(buf))) == nvmlSuccess {
			d.UUID = cstr(buf)
		}
		if l.deviceName(m, &buf[0], uint32(len(buf))) == nvmlSuccess {
			d.Name = cstr(buf)
		}
		var a nvmlAttributes
		if l.attributes != nil && l.attributes(m, &a) == nvmlSuccess {
			d.SMs, d.MemoryBytes = int(a.MultiprocessorCount), a.MemorySizeMB<<20
		}
		g.MIGDevices = append(g.MIGDevices, d)
	}
}

// nvlinks reads the device's NVLinks: how many it has, which are active,
// their version and speed; nil when it has none or NVML cannot say. The
// link count comes from NVML_FI_DEV_NVLINK_LINK_COUNT where the driver
// has it: NVML answers some queries for every index below
// NVML_NVLINK_MAX_LINKS, links the GPU does not have included.
func (l *nvmlLib) nvlinks(h uintptr) *NVLinkInfo {
	if l.nvlinkState == nil {
		return nil
	}
	count := nvmlNVLinkMaxLinks
	n := &NVLinkInfo{}
	if l.fieldValues != nil {
		vals := []nvmlFieldValue{{FieldID: nvmlFieldNVLinkLinkCount}, {FieldID: nvmlFieldNVLinkSpeedCommon}}
		if l.fieldValues(h, int32(len(vals)), &vals[0]) == nvmlSuccess {
			if vals[0].Return == nvmlSuccess {
				count = min(int(vals[0].uint()), nvmlNVLinkMaxLinks)
			}
			if vals[1].Return == nvmlSuccess {
				n.SpeedMBps = vals[1].uint()
			}
		}
	}
	for link := range count {
		var st uint32
		if l.nvlinkState(h, uint32(link), &st) != nvmlSuccess {
			continue // no such link, or not an NVLink GPU
		}
		n.Links++
		if st == 0 { // NVML_FEATURE_DISABLED
			n.Inactive = append(n.Inactive, link)
			continue
		}
		n.Active++
		var v uint32
		if n.Version == "" && l.nvlinkVersion != nil && l.nvlinkVersion(h, uint32(link), &v) == nvmlSuccess {
			n.Version = nvlinkVersions[v]
		}
	}
	if n.Links == 0 {
		return nil
	}
	return n
}

// Sampler polls NVML while the benchmarks run. Stop ends it and returns
// one BenchSample per GPU index.
type Sampler struct {
	stop chan struct{}
	done chan map[int]*BenchSample
}

// StartSampler polls every GPU NVML opens every interval until Stop; nil
// when NVML is not there (nothing is sampled then).
func StartSampler(interval time.Duration) *Sampler {
	return startSampler(nvmlPaths, interval)
}

func startSampler(paths []string, interval time.Duration) *Sampler {
	l, err := loadNVML(paths)
	if err != nil || l.init() != nvmlSuccess {
		return nil
	}
	return l.startSampler(interval)
}

func (l *nvmlLib) startSampler(interval time.Duration) *Sampler {
	var n uint32
	if l.deviceCount(&n) != nvmlSuccess {
		l.shutdown()
		return nil
	}
	handles := map[int]uintptr{}
	for i := range n {
		var h uintptr
		if l.deviceByIndex(i, &h) == nvmlSuccess {
			handles[int(i)] = h
		}
	}
	s := &Sampler{stop: make(chan struct{}), done: make(chan map[int]*BenchSample, 1)}
	go func() {
		out := map[int]*BenchSample{}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			for i, h := range handles {
				out[i] = l.sample(h, out[i])
			}
			select {
			case <-s.stop:
				l.shutdown()
				s.done <- out
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns what it saw, by GPU index.
func (s *Sampler) Stop() map[int]*BenchSample {
	if s == nil {
		return nil
	}
	close(s.stop)
	return <-s.done
}

func (l *nvmlLib) sample(h uintptr, b *BenchSample) *BenchSample {
	if b == nil {
		b = &BenchSample{}
	}
	b.Samples++
	var mask uint64
	if l.clockEvents != nil && l.clockEvents(h, &mask) == nvmlSuccess {
		for _, e := range ClockEventNames(mask) {
			if b.ClockEvents == nil {
				b.ClockEvents = map[string]int{}
			}
			b.ClockEvents[e]++
		}
	}
	var v uint32
	if l.devicePCIeGeneration(h, &v) == nvmlSuccess && int(v) > b.PCIeGen {
		b.PCIeGen = int(v)
	}
	if l.devicePCIeWidth(h, &v) == nvmlSuccess && int(v) > b.PCIeWidth {
		b.PCIeWidth = int(v)
	}
	if l.clock != nil && l.clock(h, nvmlClockSM, &v) == nvmlSuccess {
		if b.MinSMClockMHz == 0 || int(v) < b.MinSMClockMHz {
			b.MinSMClockMHz = int(v)
		}
		b.MaxSMClockMHz = max(b.MaxSMClockMHz, int(v))
	}
	return b
}

package gpuprobe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/matrix"
)

// The host checks judge what starves a GPU from the host's side; each
// threshold's source is in docs/probe.md ("Host checks").
const (
	// MinShm is the smallest /dev/shm that passes: NVIDIA's minimum
	// recommended --shm-size for its containers (1g); Docker gives 64 MB.
	MinShm = 1 << 30
	// MaxSteal is the share of CPU time stolen by the hypervisor over the
	// window above which the CPU is contended (the rule of thumb of 10%).
	MaxSteal = 0.10
	// MinDataMBps is the read throughput of the data directory below which
	// the GPUs likely wait on input: under it sits gp3's default of 125
	// MiB/s, far under a local NVMe drive.
	MinDataMBps = 200.0
)

// HostOptions steer HostChecks. The zero value checks this machine with
// the defaults.
type HostOptions struct {
	// DataDir is the directory whose read throughput is measured; "" skips
	// the check (gpuimg probe passes --data-dir, default the working
	// directory).
	DataDir string
	// DataBytes is the size of the file written and read back; default
	// 64 MiB (docs/faults.md).
	DataBytes int64
	// NeedMemory is the GPU memory the workload needs (--need-memory), in
	// bytes; 0 skips the slice check.
	NeedMemory uint64
	// StealWindow is how long /proc/stat is sampled; default 1s.
	StealWindow time.Duration
	// Proc, Sys and Shm are where /proc, /sys and /dev/shm are (tests
	// point them elsewhere); default the real ones.
	Proc, Sys, Shm string
	// CPUs are the CPUs this process may run on; default its affinity.
	CPUs []int
}

func (o HostOptions) withDefaults() HostOptions {
	if o.DataBytes <= 0 {
		o.DataBytes = 64 << 20
	}
	if o.StealWindow <= 0 {
		o.StealWindow = time.Second
	}
	if o.Proc == "" {
		o.Proc = "/proc"
	}
	if o.Sys == "" {
		o.Sys = "/sys"
	}
	if o.Shm == "" {
		o.Shm = "/dev/shm"
	}
	if o.CPUs == nil {
		var set unix.CPUSet
		if unix.SchedGetaffinity(0, &set) == nil {
			for i := range 1024 {
				if set.IsSet(i) {
					o.CPUs = append(o.CPUs, i)
				}
			}
		}
	}
	return o
}

// HostChecks judges the host the GPUs are in: /dev/shm, CPU steal, SMT
// siblings shared with CPUs this process may not use, the data
// directory's read throughput, host memory against the GPUs' memory and,
// with NeedMemory, each GPU's (or MIG slice's) memory. gpus may be empty.
func HostChecks(ctx context.Context, opt HostOptions, gpus []GPUInfo) []Check {
	opt = opt.withDefaults()
	var out []Check
	add := func(c Check) { out = append(out, c) }
	add(checkShm(opt.Shm))
	add(checkSteal(ctx, opt.Proc, opt.StealWindow))
	add(checkSMT(opt.Sys, opt.CPUs))
	if opt.DataDir != "" {
		add(checkDataDir(ctx, opt.DataDir, opt.DataBytes))
	}
	add(checkHostMemory(opt.Proc, gpus))
	if opt.NeedMemory > 0 {
		add(checkSliceMemory(gpus, opt.NeedMemory))
	}
	return out
}

func checkShm(dir string) Check {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Check{Name: "host/shm", Status: matrix.Warn, Message: fmt.Sprintf("%s: %v: DataLoader workers share batches through it; mount one (docker run --shm-size 8g, or --ipc=host)", dir, err)}
	}
	return judgeShm(dir, st.Blocks*uint64(st.Bsize))
}

// judgeShm judges a /dev/shm of size bytes.
func judgeShm(dir string, size uint64) Check {
	if size < MinShm {
		return Check{Name: "host/shm", Status: matrix.Warn, Message: fmt.Sprintf("%s is %s (Docker's default is 64 MB): DataLoader workers die with a bus error when their batches do not fit; give the container --shm-size 8g or --ipc=host (Kubernetes: an emptyDir with medium Memory on /dev/shm)", dir, humanize.Bytes(int64(size)))}
	}
	return Check{Name: "host/shm", Status: matrix.Pass, Message: fmt.Sprintf("%s is %s", dir, humanize.Bytes(int64(size)))}
}

// cpuTimes are /proc/stat's first line: total and steal jiffies.
func cpuTimes(proc string) (total, steal uint64, err error) {
	f, err := os.Open(filepath.Join(proc, "stat"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, errors.New("empty stat")
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("unexpected first line %q", sc.Text())
	}
	// user nice system idle iowait irq softirq steal [guest guest_nice]:
	// guest time is already counted in user and nice.
	for i, v := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("field %d of %q: %w", i+1, sc.Text(), err)
		}
		total += n
		if i == 7 {
			steal = n
		}
	}
	return total, steal, nil
}

func checkSteal(ctx context.Context, proc string, window time.Duration) Check {
	t0, s0, err := cpuTimes(proc)
	if err == nil {
		select {
		case <-ctx.Done():
			err = context.Cause(ctx)
		case <-time.After(window):
		}
	}
	var t1, s1 uint64
	if err == nil {
		t1, s1, err = cpuTimes(proc)
	}
	if err != nil {
		return Check{Name: "host/cpu-steal", Status: matrix.UnknownFact, Message: fmt.Sprintf("read %s/stat: %v", proc, err)}
	}
	if t1 < t0 || s1 < s0 {
		return Check{Name: "host/cpu-steal", Status: matrix.UnknownFact, Message: fmt.Sprintf("%s/stat went backwards between two reads", proc)}
	}
	return judgeSteal(t1-t0, s1-s0, window)
}

// judgeSteal judges steal jiffies out of total over the window.
func judgeSteal(total, steal uint64, window time.Duration) Check {
	if total == 0 {
		return Check{Name: "host/cpu-steal", Status: matrix.UnknownFact, Message: fmt.Sprintf("no CPU time passed in %s: sample for longer", window)}
	}
	share := float64(steal) / float64(total)
	msg := fmt.Sprintf("%.1f%% of CPU time stolen by the hypervisor over %s", share*100, window)
	if share > MaxSteal {
		return Check{Name: "host/cpu-steal", Status: matrix.Warn, Message: msg + fmt.Sprintf(" (over %.0f%%): other tenants share these CPUs and the input pipeline slows; move to another host or a dedicated-CPU instance", MaxSteal*100)}
	}
	return Check{Name: "host/cpu-steal", Status: matrix.Pass, Message: msg}
}

// checkSMT reports CPUs whose SMT siblings this process may not use:
// another container or tenant runs on the same cores.
func checkSMT(sys string, cpus []int) Check {
	mine := map[int]bool{}
	for _, c := range cpus {
		mine[c] = true
	}
	var shared []string
	smt := false
	for _, c := range cpus {
		b, err := os.ReadFile(filepath.Join(sys, "devices/system/cpu", fmt.Sprintf("cpu%d", c), "topology/thread_siblings_list"))
		if err != nil {
			return Check{Name: "host/smt", Status: matrix.UnknownFact, Message: fmt.Sprintf("SMT siblings of CPU %d: %v", c, err)}
		}
		sib := parseCPUList(strings.TrimSpace(string(b)))
		smt = smt || len(sib) > 1
		for _, s := range sib {
			if !mine[s] {
				shared = append(shared, fmt.Sprintf("%d (sibling %d)", c, s))
				break
			}
		}
	}
	switch {
	case len(shared) > 0:
		return Check{Name: "host/smt", Status: matrix.Warn, Message: fmt.Sprintf("%d of %d CPUs share a core with a CPU this process may not use: %s: a neighbour on the sibling thread halves the core's throughput at worst; ask for whole cores (Kubernetes: the static CPU manager policy with full-pcpus-only)", len(shared), len(cpus), strings.Join(shared[:min(4, len(shared))], ", "))}
	case smt:
		return Check{Name: "host/smt", Status: matrix.Pass, Message: fmt.Sprintf("SMT on: the sibling threads of all %d CPUs are this process's too", len(cpus))}
	}
	return Check{Name: "host/smt", Status: matrix.Pass, Message: fmt.Sprintf("no SMT siblings: %d CPUs, one thread per core", len(cpus))}
}

// parseCPUList reads the kernel's list format: 0-3,8,10-11.
func parseCPUList(s string) []int {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b && i-a < 4096; i++ {
			out = append(out, i)
		}
	}
	return out
}

func checkHostMemory(proc string, gpus []GPUInfo) Check {
	total, err := memTotal(proc)
	if err != nil {
		return Check{Name: "host/memory", Status: matrix.UnknownFact, Message: fmt.Sprintf("read %s/meminfo: %v", proc, err)}
	}
	var gpuMem uint64
	for _, g := range gpus {
		gpuMem += g.MemoryBytes
	}
	if gpuMem == 0 {
		return Check{Name: "host/memory", Status: matrix.Pass, Message: fmt.Sprintf("host memory %s (no GPU memory to compare)", humanize.Bytes(int64(total)))}
	}
	msg := fmt.Sprintf("host memory %s for %s of GPU memory", humanize.Bytes(int64(total)), humanize.Bytes(int64(gpuMem)))
	if total < gpuMem {
		return Check{Name: "host/memory", Status: matrix.Warn, Message: msg + ": less than the GPUs hold, so a checkpoint loaded to the host, pinned DataLoader buffers or offloaded optimizer state do not fit; choose an instance with at least as much host memory as GPU memory"}
	}
	return Check{Name: "host/memory", Status: matrix.Pass, Message: msg}
}

// memTotal is /proc/meminfo's MemTotal in bytes.
func memTotal(proc string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(proc, "meminfo"))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no MemTotal")
}

// checkSliceMemory judges each GPU, or each MIG instance of a GPU with MIG
// on, against the memory the workload needs; a vGPU reports its slice's
// memory as the GPU's.
func checkSliceMemory(gpus []GPUInfo, need uint64) Check {
	if len(gpus) == 0 {
		return Check{Name: "host/gpu-memory", Status: matrix.UnknownFact, Message: "no GPU to judge against --need-memory"}
	}
	var short []string
	for _, g := range gpus {
		if len(g.MIGDevices) > 0 {
			for _, m := range g.MIGDevices {
				if m.MemoryBytes < need {
					short = append(short, fmt.Sprintf("MIG %s on GPU %d has %s", m.Name, g.Index, humanize.Bytes(int64(m.MemoryBytes))))
				}
			}
			continue
		}
		if g.MemoryBytes < need {
			kind := "GPU"
			if g.Virtualization == "vgpu" {
				kind = "vGPU"
			}
			short = append(short, fmt.Sprintf("%s %d (%s) has %s", kind, g.Index, g.Name, humanize.Bytes(int64(g.MemoryBytes))))
		}
	}
	if len(short) > 0 {
		return Check{Name: "host/gpu-memory", Status: matrix.Fail, Message: fmt.Sprintf("the workload needs %s: %s; choose a larger slice or a whole GPU", humanize.Bytes(int64(need)), strings.Join(short, "; "))}
	}
	return Check{Name: "host/gpu-memory", Status: matrix.Pass, Message: fmt.Sprintf("every GPU or slice has at least the %s the workload needs", humanize.Bytes(int64(need)))}
}

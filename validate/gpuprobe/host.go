package gpuprobe

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// cgroupRoot is where a container sees its cgroup's files.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupCPUQuota is the CPUs the cgroup's CFS quota allows this process
// (under root, normally cgroupRoot), or nil without a quota: cgroup v2's
// cpu.max ("200000 100000", or "max 100000"), else v1's cpu.cfs_quota_us
// over cpu.cfs_period_us (-1: none).
func cgroupCPUQuota(root string) *float64 {
	if b, err := os.ReadFile(filepath.Join(root, "cpu.max")); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if f[0] == "max" {
				return nil
			}
			quota, qerr := strconv.Atoi(f[0])
			period, perr := strconv.Atoi(f[1])
			if qerr == nil && perr == nil && period != 0 {
				q := float64(quota) / float64(period)
				return &q
			}
		}
	}
	for _, d := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
		quota, qerr := readInt(filepath.Join(root, d, "cpu.cfs_quota_us"))
		period, perr := readInt(filepath.Join(root, d, "cpu.cfs_period_us"))
		if qerr != nil || perr != nil {
			continue
		}
		if quota <= 0 || period <= 0 {
			return nil
		}
		q := float64(quota) / float64(period)
		return &q
	}
	return nil
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// cpusSeen is the CPUs this process may run on (its affinity, read when
// it started), as os.cpu_count() and a DataLoader sized to it see them in
// the Python probe it starts.
func cpusSeen() int { return runtime.NumCPU() }

// checkCPUQuota judges a container's CPU quota (under root) against the
// CPUs it sees and returns both; a quota below them is a warning: it
// throttles a DataLoader sized to os.cpu_count() and starves the GPU, the
// usual cause of a GPU that waits for data.
func checkCPUQuota(root string, seen int, add func(Check)) *PyHost {
	quota := cgroupCPUQuota(root)
	if quota != nil && *quota < float64(seen)-0.5 {
		add(Check{Name: "host/cpu", Status: matrix.Warn, Message: fmt.Sprintf("the cgroup CPU quota allows %.1f CPUs but the process sees %d: a DataLoader with a worker per visible CPU is throttled and starves the GPU (size num_workers to %d)", *quota, seen, max(int(*quota), 1))})
	}
	return &PyHost{CPUsSeen: seen, CPUQuota: quota}
}

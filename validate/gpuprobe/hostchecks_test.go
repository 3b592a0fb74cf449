package gpuprobe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestHostJudgements(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		name   string
		check  Check
		status matrix.Status
		want   string
	}{
		{"docker's default shm", judgeShm("/dev/shm", 64<<20), matrix.Warn, "--shm-size"},
		{"ample shm", judgeShm("/dev/shm", 16*gib), matrix.Pass, "/dev/shm is"},
		{"steal over 10%", judgeSteal(1000, 150, time.Second), matrix.Warn, "15.0% of CPU time stolen"},
		{"little steal", judgeSteal(1000, 20, time.Second), matrix.Pass, "2.0%"},
		{"no time passed", judgeSteal(0, 0, time.Second), matrix.UnknownFact, "sample for longer"},
		{"siblings shared", checkSMT(writeTree(t, map[string]string{
			"devices/system/cpu/cpu0/topology/thread_siblings_list": "0,2\n",
			"devices/system/cpu/cpu1/topology/thread_siblings_list": "1,3\n",
		}), []int{0, 1}), matrix.Warn, "2 of 2 CPUs share a core"},
		{"siblings ours", checkSMT(writeTree(t, map[string]string{
			"devices/system/cpu/cpu0/topology/thread_siblings_list": "0-1\n",
			"devices/system/cpu/cpu1/topology/thread_siblings_list": "0-1\n",
		}), []int{0, 1}), matrix.Pass, "SMT on"},
		{"no SMT", checkSMT(writeTree(t, map[string]string{
			"devices/system/cpu/cpu0/topology/thread_siblings_list": "0\n",
		}), []int{0}), matrix.Pass, "one thread per core"},
		{"host memory under GPU memory", checkHostMemory(writeTree(t, map[string]string{"meminfo": "MemTotal:       65536000 kB\nMemFree: 1 kB\n"}),
			[]GPUInfo{{MemoryBytes: 80 * gib}, {MemoryBytes: 80 * gib}}), matrix.Warn, "less than the GPUs hold"},
		{"host memory ample", checkHostMemory(writeTree(t, map[string]string{"meminfo": "MemTotal:       2097152000 kB\n"}),
			[]GPUInfo{{MemoryBytes: 80 * gib}}), matrix.Pass, "host memory"},
		{"MIG slice too small", checkSliceMemory([]GPUInfo{{Index: 0, MIG: "enabled", MIGDevices: []MIGDevice{{Name: "1g.10gb", MemoryBytes: 10 * gib}, {Name: "3g.40gb", MemoryBytes: 40 * gib}}}}, 20*gib),
			matrix.Fail, "MIG 1g.10gb on GPU 0"},
		{"vGPU too small", checkSliceMemory([]GPUInfo{{Index: 1, Name: "GRID A100-8C", Virtualization: "vgpu", MemoryBytes: 8 * gib}}, 20*gib), matrix.Fail, "vGPU 1"},
		{"whole GPU fits", checkSliceMemory([]GPUInfo{{Name: "H100", MemoryBytes: 80 * gib}}, 20*gib), matrix.Pass, "every GPU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.check.Status != tt.status || !strings.Contains(tt.check.Message, tt.want) {
				t.Errorf("got %s %q, want %s with %q", tt.check.Status, tt.check.Message, tt.status, tt.want)
			}
		})
	}
}

func TestCPUTimes(t *testing.T) {
	proc := writeTree(t, map[string]string{"stat": "cpu  100 5 50 800 10 1 2 32 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"})
	total, steal, err := cpuTimes(proc)
	if err != nil || total != 1000 || steal != 32 {
		t.Errorf("got total %d steal %d (%v), want 1000 and 32", total, steal, err)
	}
	if _, _, err := cpuTimes(writeTree(t, map[string]string{"stat": "intr 1 2 3\n"})); err == nil {
		t.Error("a stat without the cpu line was read")
	}
}

// TestHostChecksHere runs every host check on this machine: each is judged
// (pass or warn), none unknown, and the data directory's file is gone.
func TestHostChecksHere(t *testing.T) {
	dir := t.TempDir()
	checks := HostChecks(t.Context(), HostOptions{DataDir: dir, DataBytes: 8 << 20, StealWindow: 200 * time.Millisecond}, nil)
	names := map[string]bool{}
	for _, c := range checks {
		names[c.Name] = true
		if c.Status != matrix.Pass && c.Status != matrix.Warn {
			t.Errorf("%s: %s %q", c.Name, c.Status, c.Message)
		}
		t.Logf("%s: %s: %s", c.Name, c.Status, c.Message)
	}
	for _, n := range []string{"host/shm", "host/cpu-steal", "host/smt", "host/data-dir", "host/memory"} {
		if !names[n] {
			t.Errorf("no %s check", n)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".gpuimg-probe-read-*")); len(left) > 0 {
		t.Errorf("the read test left %v", left)
	}
}

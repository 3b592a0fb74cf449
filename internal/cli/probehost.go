package cli

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/validate/gpuprobe"
)

// hostFlags are gpuimg probe's host checks: --data-dir, --need-memory,
// --host-checks.
type hostFlags struct {
	dataDir    string
	needMemory string
	on         bool
}

func (h *hostFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&h.on, "host-checks", true, "judge the host too: /dev/shm, CPU steal, SMT siblings, the data directory's reads, host memory (docs/probe.md)")
	fs.StringVar(&h.dataDir, "data-dir", ".", "directory whose read throughput is measured (a 64 MiB file written and read back bypassing the page cache, then removed): where the training data lives")
	fs.StringVar(&h.needMemory, "need-memory", "", "GPU memory the workload needs, e.g. 40GB: each GPU, MIG instance or vGPU with less fails")
}

// options are the host checks' options, nil when off.
func (h *hostFlags) options() (*gpuprobe.HostOptions, error) {
	if !h.on {
		return nil, nil
	}
	o := &gpuprobe.HostOptions{DataDir: h.dataDir}
	if st, err := os.Stat(h.dataDir); err != nil || !st.IsDir() {
		return nil, invalid(fmt.Errorf("--data-dir %s is not a directory", h.dataDir), "give the directory the training data is read from")
	}
	if h.needMemory != "" {
		n, err := matrix.ParseSize(h.needMemory)
		if err != nil || n <= 0 {
			return nil, invalid(fmt.Errorf("--need-memory %q", h.needMemory), "give a size such as 40GB")
		}
		o.NeedMemory = uint64(n)
	}
	return o, nil
}

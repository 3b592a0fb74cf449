package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestJudgeNCCLLog judges NCCL logs quoted from public issues
// (testdata/nccllog/SOURCES.md).
func TestJudgeNCCLLog(t *testing.T) {
	d := db(t)
	fab := func(n string) *matrix.Fabric {
		f, err := d.Fabric(n)
		if err != nil {
			t.Fatal(err)
		}
		return &f
	}
	for _, tt := range []struct {
		file    string
		fabric  *matrix.Fabric
		network string
		status  matrix.Status
		msg     string
	}{
		{"efa-nccl-1597.log", fab("efa"), "Libfabric", matrix.Warn, "network Libfabric, libfabric provider efa (efa), but no channel shows GDRDMA"},
		// The quoted lines hold no "Selected provider" line: the finding
		// names the missing line, not another network (issue 43).
		{"efa-gdrdma-nccl-527.log", fab("efa"), "AWS Libfabric", matrix.Fail, `NCCL used network AWS Libfabric, but the log has no "NET/OFI Selected provider is efa" line`},
		{"efa-gdrdma-nccl-527.log", nil, "AWS Libfabric", matrix.Pass, "network AWS Libfabric (GPUDirect RDMA)"},
		{"efa-nccl-1597.log", fab("infiniband"), "Libfabric", matrix.Fail, "not InfiniBand"},
		{"ib-roce-nccl-tests-185.log", fab("infiniband"), "IB", matrix.Warn, "network IB (infiniband), but no channel shows GDRDMA"},
		{"ib-gdrdma-nccl-707.log", fab("infiniband"), "IB", matrix.Pass, "with GPUDirect RDMA (7 network channel lines)"},
		{"ib-roce-nccl-tests-185.log", fab("efa"), "IB", matrix.Fail, "NCCL used network IB, not AWS Elastic Fabric Adapter"},
		{"socket-nccl-1410.log", fab("efa"), "Socket", matrix.Fail, "fell back to TCP sockets (NET/Socket) between nodes; the log says: Failed to open libibverbs.so[.1]"},
		{"socket-nccl-367.log", nil, "", matrix.Fail, "the log says: NET/Plugin : No plugin found (libnccl-net.so).; misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "nccllog", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tr, err := ReadNCCLLog(f)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Network != tt.network {
				t.Errorf("network %q, want %q", tr.Network, tt.network)
			}
			c := tr.Judge(tt.fabric)
			if c.Status != tt.status || !strings.Contains(c.Message, tt.msg) {
				t.Errorf("%s %q, want %s containing %q", c.Status, c.Message, tt.status, tt.msg)
			}
		})
	}
	// Another provider is named by its line.
	tr, err := ReadNCCLLog(strings.NewReader("host:1:1 [0] NCCL INFO NET/OFI Selected provider is tcp, fabric is TCP-IP (found 1 nics)\nhost:1:1 [0] NCCL INFO Using network Libfabric\n"))
	if c := tr.Judge(fab("efa")); err != nil || c.Status != matrix.Fail || !strings.Contains(c.Message, `the log says "NET/OFI Selected provider is tcp", where AWS Elastic Fabric Adapter`) {
		t.Errorf("provider tcp: %+v %v", c, err)
	}
	// aws-ofi-nccl's newer line ("…, fabric is …") names efa too.
	tr, err = ReadNCCLLog(strings.NewReader("host:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)\nhost:1:1 [0] NCCL INFO Using network Libfabric\nhost:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/Libfabric/0/GDRDMA\n"))
	if c := tr.Judge(fab("efa")); err != nil || tr.Provider != "efa" || c.Status != matrix.Pass {
		t.Errorf("provider tcp: %+v %v", c, err)
	}
	tr, err = ReadNCCLLog(strings.NewReader("NCCL version 2.19.3+cuda12.3\n"))
	if err != nil || tr.Version != "2.19.3+cuda12.3" || tr.Judge(nil).Status != matrix.Warn {
		t.Errorf("a log without a network: %+v %v", tr, err)
	}
}

// TestJudgeAllReduce: the result line of allreduce.py (written here as
// it prints it) after a recorded EFA log, against efa's floor.
func TestJudgeAllReduce(t *testing.T) {
	d := db(t)
	efa, err := d.Fabric("efa")
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := os.ReadFile(filepath.Join("testdata", "nccllog", "efa-nccl-1597.log"))
	if err != nil {
		t.Fatal(err)
	}
	gdr, err := os.ReadFile(filepath.Join("testdata", "nccllog", "efa-gdrdma-nccl-527.log"))
	if err != nil {
		t.Fatal(err)
	}
	line := func(bytes int64, algbw float64, nodes int) string {
		return fmt.Sprintf(`{"gpuimg_allreduce": {"bytes": %d, "seconds": 0.1, "algbw_gbs": %g, "busbw_gbs": %g, "world": %d, "nodes": %d, "nccl": "2.21.5"}}`+"\n", bytes, algbw, algbw*2*15/16, nodes*8, nodes)
	}
	for _, tt := range []struct {
		name, log string
		status    matrix.Status
		msg       string
	}{
		{"above the floor", string(recorded) + string(gdr) + line(1<<30, 42.5, 2), matrix.Pass, "1.0 GiB all-reduce over 16 ranks on 2 nodes: algbw 42.5 GB/s, busbw 79.7 GB/s, at least efa's floor of 3 GB/s algbw (fab-dlc-efa-allreduce)"},
		{"below the floor", string(recorded) + line(1<<30, 1.2, 2), matrix.Fail, "below efa's floor of 3 GB/s algbw"},
		{"one node", string(recorded) + line(1<<30, 200, 1), matrix.Warn, "fewer than 2 nodes"},
		{"small messages", string(recorded) + line(1<<20, 1, 2), matrix.Warn, "GPUIMG_ALLREDUCE_BYTES=1073741824"},
		{"no result", string(recorded), matrix.Warn, "no gpuimg_allreduce result line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ReadNCCLLog(strings.NewReader(tt.log))
			if err != nil {
				t.Fatal(err)
			}
			cs := tr.JudgeAllReduce(&efa)
			if len(cs) != 2 || cs[0].Name != "nccl/transport" {
				t.Fatalf("checks %v", cs)
			}
			if c := cs[1]; c.Status != tt.status || !strings.Contains(c.Message, tt.msg) {
				t.Errorf("%s %q, want %s containing %q", c.Status, c.Message, tt.status, tt.msg)
			}
		})
	}
}

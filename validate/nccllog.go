package validate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/matrix"
)

// NCCLTransport is what an NCCL debug log (NCCL_DEBUG=INFO) says about
// the network NCCL used between nodes.
type NCCLTransport struct {
	// Network is the network NCCL chose ("Using network X"), else the one
	// its channels ran over ("via NET/X/…"): Libfabric, AWS Libfabric,
	// IB, IBext_v8, Socket, ….
	Network string `json:"network,omitempty"`
	// Provider is the libfabric provider aws-ofi-nccl selected ("NET/OFI
	// Selected provider is efa").
	Provider string `json:"provider,omitempty"`
	// GDRDMA says some channel ran GPUDirect RDMA ("via NET/…/GDRDMA").
	GDRDMA bool `json:"gdrdma"`
	// NetChannels counts the channel lines over a network.
	NetChannels int `json:"net_channels"`
	// Socket says NCCL used TCP sockets (NET/Socket).
	Socket bool `json:"socket"`
	// Version is NCCL's ("NCCL version 2.19.3+cuda12.3").
	Version string `json:"version,omitempty"`
	// Reasons are the log's lines that say why a plugin or the IB
	// transport did not load (WARN lines, "Failed to open", "No plugin
	// found", "Could not find"), without their host:pid:tid prefix, each
	// once, in the order seen.
	Reasons []string `json:"reasons,omitempty"`
	// AllReduce is the result line of gpuimg's multi-node all-reduce
	// (validate/gpurun/allreduce.py), when the log holds one.
	AllReduce *AllReduceResult `json:"allreduce,omitempty"`
}

// AllReduceResult is what allreduce.py prints on rank 0.
type AllReduceResult struct {
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	AlgbwGBs float64 `json:"algbw_gbs"`
	BusbwGBs float64 `json:"busbw_gbs"`
	World    int     `json:"world"`
	Nodes    int     `json:"nodes"`
	NCCL     string  `json:"nccl"`
}

var (
	reLogPrefix = regexp.MustCompile(`^(?:\[[0-9,]+\]<std(?:out|err)>:)?\S+:[0-9]+:[0-9]+ \[[0-9]+\] `)
	reUsingNet  = regexp.MustCompile(`NCCL INFO Using network (.+?)\s*$`)
	reViaNet    = regexp.MustCompile(`via NET/([^/]+)/[0-9]+(?:\([0-9]+\))?(/GDRDMA)?`)
	// aws-ofi-nccl's nccl_net_ofi_query_provider_capabilities prints
	// "Selected provider is %s, fabric is %s (found %d nics)"; older
	// releases "Selected Provider is %s (found %d nics)".
	reOFIProvider = regexp.MustCompile(`(?i)NET/OFI Selected provider is ([^\s,(]+)`)
	reNCCLVersion = regexp.MustCompile(`NCCL version ([0-9][0-9.]*[0-9](?:\+cuda[0-9.]+)?)`)
	reReason      = regexp.MustCompile(`NCCL WARN|Failed to open|No plugin found|Could not find|cannot open shared object|returned [0-9]+ :`)
)

// ReadNCCLLog reads an NCCL debug log (every rank's lines, in any
// order, as mpirun or kubectl logs gather them) into what it says about
// the network.
func ReadNCCLLog(r io.Reader) (NCCLTransport, error) {
	var t NCCLTransport
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	chose, via := "", ""
	for sc.Scan() {
		line := sc.Text()
		if m := reUsingNet.FindStringSubmatch(line); m != nil {
			chose = m[1]
		}
		if m := reViaNet.FindStringSubmatch(line); m != nil {
			t.NetChannels++
			via = m[1]
			t.GDRDMA = t.GDRDMA || m[2] != ""
			if m[1] == "Socket" {
				t.Socket = true
			}
		}
		if m := reOFIProvider.FindStringSubmatch(line); m != nil {
			t.Provider = m[1]
		}
		if m := reNCCLVersion.FindStringSubmatch(line); m != nil && t.Version == "" {
			t.Version = m[1]
		}
		if strings.HasPrefix(line, `{"gpuimg_allreduce"`) {
			var v struct {
				R AllReduceResult `json:"gpuimg_allreduce"`
			}
			if err := json.Unmarshal([]byte(line), &v); err == nil {
				t.AllReduce = &v.R
			}
		}
		if strings.Contains(line, "NET/Socket : Using") {
			t.Socket = true
		}
		if reReason.MatchString(line) && !strings.Contains(line, "PROFILER/Plugin") && !strings.Contains(line, "ENV/Plugin") && !strings.Contains(line, "TUNER/Plugin") {
			msg := strings.TrimSpace(reLogPrefix.ReplaceAllString(line, ""))
			msg = strings.TrimPrefix(msg, "NCCL INFO ")
			if !slices.Contains(t.Reasons, msg) {
				t.Reasons = append(t.Reasons, msg)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("read NCCL log: %w", err)
	}
	t.Network = chose
	if t.Network == "" {
		t.Network = via
	}
	if t.Network == "Socket" {
		t.Socket = true
	}
	return t, nil
}

// Judge says whether the log shows fabric f in use, as a finding named
// nccl/transport: NCCL over sockets is a failure with the log's reasons;
// a network other than the fabric's is a failure; the fabric without any
// GPUDirect RDMA channel is a warning (the data crosses host memory). A
// nil f judges only the socket fallback.
func (t NCCLTransport) Judge(f *matrix.Fabric) Check {
	const name = "nccl/transport"
	reasons := ""
	if len(t.Reasons) > 0 {
		reasons = "; the log says: " + firstFew(t.Reasons, 3, "; ")
	}
	switch {
	case t.Socket:
		return Check{Name: name, Status: matrix.Fail, Message: "NCCL fell back to TCP sockets (NET/Socket) between nodes" + reasons + ": check the fabric's user space with gpuimg validate --fabric, and that the pod gets the fabric's devices"}
	case t.Network == "" && t.NetChannels == 0:
		return Check{Name: name, Status: matrix.Warn, Message: "the log shows no network NCCL used (no \"Using network\" or \"via NET/\" line): run with NCCL_DEBUG=INFO across more than one node"}
	}
	what := "network " + t.Network
	if t.Provider != "" {
		what += ", libfabric provider " + t.Provider
	}
	if f != nil {
		ok := true
		switch {
		case f.Plugin != nil:
			ok = slices.ContainsFunc(f.Plugin.NetNames, func(n string) bool { return strings.EqualFold(n, t.Network) })
		case f.Name == "infiniband":
			ok = strings.HasPrefix(t.Network, "IB")
		}
		if !ok {
			return Check{Name: name, Status: matrix.Fail, Message: fmt.Sprintf("NCCL used %s, not %s%s", what, f.Title, reasons)}
		}
		// The network is the fabric's plugin; the provider is named by one
		// line of aws-ofi-nccl's, which the judgement rests on.
		want := fmt.Sprintf("NET/OFI Selected provider is %s", f.Provider)
		switch {
		case f.Provider != "" && t.Provider == "":
			return Check{Name: name, Status: matrix.Fail, Message: fmt.Sprintf("NCCL used %s, but the log has no %q line, so nothing shows that libfabric's %s provider carried the traffic (%s): run with NCCL_DEBUG=INFO and FI_PROVIDER=%s, and give the whole log of every rank%s", what, want, f.Provider, f.Title, f.Provider, reasons)}
		case f.Provider != "" && !strings.EqualFold(t.Provider, f.Provider):
			return Check{Name: name, Status: matrix.Fail, Message: fmt.Sprintf("NCCL used %s: the log says %q, where %s needs %q; set FI_PROVIDER=%s and check that the pod gets the fabric's devices%s", what, "NET/OFI Selected provider is "+t.Provider, f.Title, want, f.Provider, reasons)}
		}
		if !t.GDRDMA {
			return Check{Name: name, Status: matrix.Warn, Message: fmt.Sprintf("NCCL used %s (%s), but no channel shows GDRDMA: data crosses host memory; check the host's GPUDirect RDMA (nvidia-peermem or DMA-BUF) and, on EFA, FI_EFA_USE_DEVICE_RDMA=1", what, f.Name)}
		}
		return Check{Name: name, Status: matrix.Pass, Message: fmt.Sprintf("NCCL used %s (%s) with GPUDirect RDMA (%d network channel lines)", what, f.Name, t.NetChannels)}
	}
	gdr := "no GDRDMA channel"
	if t.GDRDMA {
		gdr = "GPUDirect RDMA"
	}
	return Check{Name: name, Status: matrix.Pass, Message: fmt.Sprintf("NCCL used %s (%s)", what, gdr)}
}

// JudgeAllReduce judges a multi-node all-reduce's log: the transport
// (Judge), and the bandwidth against the fabric's floor
// (matrix.Fabric.AllReduce) as nccl/allreduce.
func (t NCCLTransport) JudgeAllReduce(f *matrix.Fabric) []Check {
	out := []Check{t.Judge(f)}
	const name = "nccl/allreduce"
	r := t.AllReduce
	if r == nil {
		return append(out, Check{Name: name, Status: matrix.Warn, Message: "the log holds no gpuimg_allreduce result line, so the bandwidth is not judged: the log is not from validate --run kubernetes --nodes's Job, or its all-reduce did not finish (see the log above)"})
	}
	what := fmt.Sprintf("%s all-reduce over %d ranks on %d nodes: algbw %.1f GB/s, busbw %.1f GB/s", humanize.Bytes(r.Bytes), r.World, r.Nodes, r.AlgbwGBs, r.BusbwGBs)
	switch {
	case r.Nodes < 2:
		return append(out, Check{Name: name, Status: matrix.Warn, Message: what + ": fewer than 2 nodes, so no traffic crossed the fabric"})
	case f == nil || f.AllReduce == nil:
		return append(out, Check{Name: name, Status: matrix.Pass, Message: what + " (no floor recorded for the fabric)"})
	case r.Bytes < f.AllReduce.Bytes:
		return append(out, Check{Name: name, Status: matrix.Warn, Message: fmt.Sprintf("%s: the fabric's floor (%.0f GB/s algbw) is for %s all-reduces; run with GPUIMG_ALLREDUCE_BYTES=%d", what, f.AllReduce.MinAlgbwGBs, humanize.Bytes(f.AllReduce.Bytes), f.AllReduce.Bytes)})
	case r.AlgbwGBs < f.AllReduce.MinAlgbwGBs:
		return append(out, Check{Name: name, Status: matrix.Fail, Message: fmt.Sprintf("%s, below %s's floor of %.0f GB/s algbw (%s)", what, f.Name, f.AllReduce.MinAlgbwGBs, f.AllReduce.Source)})
	}
	return append(out, Check{Name: name, Status: matrix.Pass, Message: fmt.Sprintf("%s, at least %s's floor of %.0f GB/s algbw (%s)", what, f.Name, f.AllReduce.MinAlgbwGBs, f.AllReduce.Source)})
}

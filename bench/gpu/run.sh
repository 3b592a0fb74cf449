#!/bin/bash
# The GPU machine's checks, as one prepared script (docs/probe.md, issue 5).
#
#   make build && bench/gpu/run.sh OUTDIR
#
# On the device tool: run it with bin/ carried (carry: ["bin"]) and OUTDIR
# "$OUT", with timeout_s 600. Each step has its own timeout and they add up
# to at most 560 s (the device allows 600 s a command); the benchmark runs
# early, right after the plain probe, so that it is what a slow machine
# still delivers. A failing step does not stop the others. It only reads
# the GPU: it changes no setting of the card (no nvidia-smi -pm/-lgc/-pl,
# no MIG).
#
# Results (commit them under validate/testdata/gpu-<card>/):
#   env.txt            date, kernel, nvidia-smi, nvidia-smi -q, torch versions
#   probe.json         gpuimg probe -o json (NVML + torch checks)
#   probe-bench.json   gpuimg probe --bench -o json (the fixture for tests)
#   probe-bench.txt    a readable summary of it
#   probe_test.txt     probe.py's own tests, GPU tests included
#   status.txt         each step's exit status
set -u
out=${1:-${OUT:-/tmp/gpuimg-gpu}}
gpuimg=${GPUIMG:-bin/gpuimg}
mkdir -p "$out"
cd "$(dirname "$0")/../.." || exit 2
status() { echo "$1 exit $2" | tee -a "$out/status.txt"; }

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	uname -a
	timeout 20 nvidia-smi
	timeout 30 nvidia-smi -q
	timeout 60 python3 -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "archs", torch.cuda.get_arch_list())
try:
    import torchvision; print("torchvision", torchvision.__version__)
except Exception as e:
    print("torchvision:", e)'
} >"$out/env.txt" 2>&1
status env $?

timeout 60 "$gpuimg" probe -o json >"$out/probe.json" 2>"$out/probe.stderr"
status probe $?

# The probe's own budget (240 s, benchmarks that would start after 80% of
# it are skipped with a warning) inside the step's timeout.
timeout 300 "$gpuimg" probe --bench --budget 240s -o json >"$out/probe-bench.json" 2>"$out/probe-bench.stderr"
status probe-bench $?
python3 - "$out/probe-bench.json" >"$out/probe-bench.txt" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for g in r.get("gpus", []):
    print("GPU", g["index"], g["name"], g["arch"], g["memory_bytes"], "MIG", g["mig"], "PCIe", g.get("pcie_gen"), g.get("pcie_width"), "max", g.get("pcie_max_gen"), g.get("pcie_max_width"))
for k, v in sorted(((r.get("python") or {}).get("bench") or {}).items()):
    print("bench %-24s %10.1f" % (k, v))
for c in r["checks"]:
    print("%-5s %-24s %s" % (c["status"].upper(), c["name"], c["message"]))
print("verdict", r["verdict"])
PY

(cd validate && timeout 90 python3 -m unittest -v probe_test) >"$out/probe_test.txt" 2>&1
status probe_test $?
ls -l "$out"

#!/bin/bash
# The GPU machine's checks, as one prepared script (docs/probe.md, issue 5).
#
#   make gpu-check OUT=OUTDIR        (= make gpu-bins && bench/gpu/run.sh OUTDIR)
#
# On the device tool: make gpu-bins here, then run bench/gpu/run.sh with
# bin/gpu carried (carry: ["bin/gpu"], about 45 MB) and OUTDIR
# "$OUT", with timeout_s 600. Each step has its own timeout and they add up
# to at most 500 s (TestGPUCheckBudget adds them; the device allows 600 s a
# command, and its start counts against the session's 15 minutes); the
# benchmark runs first, so that it is what a slow machine still delivers.
# It records a baseline of the first benchmark run and judges a second run
# against it (the acceptance test of a new instance, run twice on one): the
# two must agree within the allowed loss. A failing step does not stop the others. It only reads
# the GPU: it changes no setting of the card (no nvidia-smi -pm/-lgc/-pl,
# no MIG).
#
# Results (commit them under validate/gpuprobe/testdata/gpu-<card>/):
#   env.txt            date, kernel, nvidia-smi, nvidia-smi -q, nvidia-smi
#                      nvlink -s, torch versions
#   probe-bench.json   gpuimg probe --bench -o json (the fixture for tests),
#                      a cold start: torch, TensorFlow and JAX imported for
#                      the first time
#   baseline.json      its baseline (--save-baseline)
#   probe-bench.txt    a readable summary of it
#   probe-accept.json  a second gpuimg probe --bench, judged against the
#                      baseline (--baseline): the acceptance verdict
#   probe-accept.txt   its table
#   probe_test.txt     probe.py's own tests, GPU tests included
#   fatbin.txt         gpuimg's fat-binary scanner against cuobjdump on
#                      torch's CUDA libraries (when cuobjdump is there)
#   status.txt         each step's exit status
set -u
out=${1:-${OUT:-/tmp/gpuimg-gpu}}
gpuimg=${GPUIMG:-bin/gpu/gpuimg}
vtest=${VALIDATE_TEST:-bin/gpu/validate.test}
# Absolute before the cd below: a relative OUTDIR would otherwise put the
# first files where the script was started and the rest under the repository.
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
case $gpuimg in /*) ;; */*) gpuimg=$PWD/$gpuimg ;; esac
case $vtest in /*) ;; */*) vtest=$PWD/$vtest ;; esac
cd "$(dirname "$0")/../.." || exit 2
status() { echo "$1 exit $2" | tee -a "$out/status.txt"; }

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	uname -a
	timeout 10 nvidia-smi
	timeout 15 nvidia-smi -q
	# NVLink state as nvidia-smi sees it, to set beside what the probe read
	# through NVML (gpuN/nvlink): links, active ones, speed.
	timeout 5 nvidia-smi nvlink -s
	timeout 25 python3 -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "archs", torch.cuda.get_arch_list())
try:
    import torchvision; print("torchvision", torchvision.__version__)
except Exception as e:
    print("torchvision:", e)'
} >"$out/env.txt" 2>&1
status env $?

# A cold start imports torch, TensorFlow and JAX, each in its own process
# (JAX alone can take half a minute). The probe's own budget (160 s:
# benchmarks that would start after 80% of it are skipped with a warning,
# the Python part stopped at 100%) sits inside the step's timeout, so that
# gpuimg still prints what it found.
timeout 190 "$gpuimg" probe --bench --budget 160s --save-baseline "$out/baseline.json" -o json >"$out/probe-bench.json" 2>"$out/probe-bench.stderr"
status probe-bench $?
# The same machine again, warm, judged against that baseline.
timeout 150 "$gpuimg" probe --bench --budget 125s --baseline "$out/baseline.json" -o json >"$out/probe-accept.json" 2>"$out/probe-accept.stderr"
status probe-accept $?
python3 - "$out/probe-bench.json" >"$out/probe-bench.txt" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for g in r.get("gpus", []):
    print("GPU", g["index"], g["name"], g["arch"], g["memory_bytes"], "MIG", g["mig"], "PCIe", g.get("pcie_gen"), g.get("pcie_width"), "max", g.get("pcie_max_gen"), g.get("pcie_max_width"))
    print("  NVLink", g.get("nvlink") or "none NVML reports")
for k, v in sorted(((r.get("python") or {}).get("bench") or {}).items()):
    print("bench %-24s %10.1f" % (k, v))
for c in r["checks"]:
    print("%-5s %-24s %s" % (c["status"].upper(), c["name"], c["message"]))
print("verdict", r["verdict"])
a = r.get("acceptance")
if a:
    print("acceptance", a["verdict"], "against the", a["against"])
PY
python3 - "$out/probe-accept.json" >"$out/probe-accept.txt" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["checks"]:
    if c["name"].startswith(("accept", "bench/stability", "gpu")):
        print("%-5s %-30s %s" % (c["status"].upper(), c["name"], c["message"]))
a = r.get("acceptance") or {}
print("acceptance", a.get("verdict"), "against the", a.get("against"), "verdict", r["verdict"])
PY

(cd validate/gpuprobe && timeout 40 python3 -m unittest -v probe_test) >"$out/probe_test.txt" 2>&1
status probe_test $?

# The fat-binary scanner against NVIDIA's cuobjdump on torch's libraries.
cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
libs=$(timeout 15 python3 -c 'import glob, os, torch; d = os.path.join(os.path.dirname(torch.__file__), "lib"); print(":".join(sorted(glob.glob(d + "/libtorch_cuda.so") + glob.glob(d + "/libc10_cuda.so"))))' 2>/dev/null)
if [ -n "$cuobjdump" ] && [ -n "$libs" ] && [ -x "$vtest" ]; then
	GPUIMG_CUOBJDUMP=$cuobjdump GPUIMG_FATBIN_LIBS=$libs timeout 45 "$vtest" -test.run '^TestScanFatbinMatchesCuobjdumpOn$' -test.v >"$out/fatbin.txt" 2>&1
	status fatbin $?
else
	echo "skipped: cuobjdump '$cuobjdump', libs '$libs', $vtest" >"$out/fatbin.txt"
fi
ls -l "$out"

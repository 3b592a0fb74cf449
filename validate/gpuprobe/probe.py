"""gpuimg's in-image probe: what the Python frameworks of an image see of the GPU.

gpuimg runs this file with the image's python3 (gpuimg probe, gpuimg validate
--run). It checks PyTorch (and benchmarks with it), TensorFlow and JAX, each
when it is installed. It never raises: every failure, a framework that does
not import included, becomes a check with its reason.

    python3 probe.py --facts
    python3 probe.py --framework NAME [--bench] [--budget SECONDS] [--no-gpu]

It reports facts; gpuimg (validate/gpuprobe) judges them and supervises it.
--facts prints one JSON object: {"python": "3.10.12", "env": {...},
"installed": ["torch", ...]}, where "env" holds the variables that change
what the figures mean (TF32 overrides, CUDA_VISIBLE_DEVICES). gpuimg then
runs each installed framework in its own process (--framework NAME): JAX
preallocates 75% of the GPU's memory and TensorFlow nearly all of it,
torch's cache still holds what its benchmarks used, and only one
libcudnn.so.9 loads per process, so in one process the second framework
would fail with the wrong diagnosis.

A framework's output: one JSON object per line, each a snapshot of
everything found so far, printed after every step, so that a step that
hangs or kills the interpreter (a CUDA fault, gpuimg's timeout) still
leaves the results before it. The last line has "complete": true:
{"python": "3.10.12", "frameworks": {"torch": {...}}, "checks": [...],
"bench": {...}, "conditions": {...}, "env": {...}, "step": "bench/gemm",
"complete": false} where each check is
{"name", "status" (pass|warn|fail), "message"}, bench figures are in TFLOP/s,
GB/s and images/s, "conditions" says how a figure was measured (ResNet-50's
batch and precision), and "step" names the step the snapshot follows.
torch's entry in "frameworks" holds "arch_list" (torch.cuda.get_arch_list())
and "capability" ("9.0", cuda:0's), from which gpuimg judges torch/arch.
"""

import argparse
import importlib.util
import json
import os
import platform
import sys
import time


def check(name, status, message):
    return {"name": name, "status": status, "message": message}


def timed(fn, sync, min_time=0.2, repeats=3, warmup=2, runs=None):
    """Seconds per call of fn: after warmup calls, the call count doubles
    until one timed batch lasts min_time (GPU clocks ramp up meanwhile),
    then the best of repeats batches of that size. Each batch's seconds per
    call are appended to runs when it is given."""
    for _ in range(warmup):
        fn()
    sync()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        t = time.perf_counter() - start
        if t >= min_time or n >= 1 << 16:
            break
        n *= 2
    times = [t / n]
    for _ in range(repeats - 1):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        times.append((time.perf_counter() - start) / n)
    if runs is not None:
        runs.extend(times)
    return min(times)


# How often each GEMM and copy is timed (ResNet-50: RESNET50_REPEATS):
# enough for a median, so that one slow run shows as an outlier.
REPEATS = 5
RESNET50_REPEATS = 3

# A run this far below its figure's median means the instance's
# performance is not stable.
UNSTABLE_BELOW_MEDIAN = 0.10


def median(xs):
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def record_spread(spread, checks, key, figures):
    """Records one figure's repeated runs (figures, higher is better) and
    their spread, (max - min) / median; warns when a run lies more than
    10% below the median, the signature of a noisy neighbour."""
    if spread is None or len(figures) < 2:
        return
    med = median(figures)
    if med <= 0:
        return
    spread[key] = {"runs": [round(f, 4) for f in figures], "spread_pct": 100 * (max(figures) - min(figures)) / med}
    low = min(figures)
    if len(figures) >= 3 and low < (1 - UNSTABLE_BELOW_MEDIAN) * med:
        checks.append(check("bench/stability", "warn", "%s: a run at %.1f was %.0f%% below the median %.1f of %d runs: performance is unstable, the signature of a noisy neighbour (another job on the GPU, the PCIe bus or the host's CPUs)" % (key, low, 100 * (1 - low / med), med, len(figures))))


def fp32_exact(torch):
    """Turns TF32 off for matmul and cuDNN, so fp32 figures and comparisons
    are true float32, and says which API did it: torch 2.9 and newer name it
    fp32_precision (the older allow_tf32 prints a deprecation warning
    there); older torch rejects the new name (torch 1.13 with an
    AssertionError, so no hasattr)."""
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        return "fp32_precision"
    except Exception:  # noqa: BLE001
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        return "allow_tf32"


def no_sync():
    pass


def sync_for(torch, dev):
    return torch.cuda.synchronize if dev.type == "cuda" else no_sync


def rel_err(got, ref):
    """The largest absolute difference relative to the largest reference value."""
    return ((got.double() - ref).abs().max() / ref.abs().max()).item()


def check_matmul(torch, dev, tol=1e-4):
    """A float32 matmul on dev against the same product in float64 on the CPU."""
    try:
        a, b = torch.randn(512, 512, dtype=torch.float64), torch.randn(512, 512, dtype=torch.float64)
        got = (a.float().to(dev) @ b.float().to(dev)).cpu()
        err = rel_err(got, a @ b)
        return check("torch/matmul", "pass" if err < tol else "fail", "float32 matmul on %s vs float64 on the CPU: relative error %.2e (limit %.0e)" % (dev, err, tol))
    except Exception as e:  # noqa: BLE001 - every failure is a finding
        return check("torch/matmul", "fail", "matmul on %s crashed: %r" % (dev, e))


def check_conv(torch, dev, cudnn, tol=1e-4):
    """A float32 convolution on dev (cuDNN on a GPU) against float64 on the CPU."""
    try:
        x, w = torch.randn(8, 16, 32, 32), torch.randn(32, 16, 3, 3)
        ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
        got = torch.nn.functional.conv2d(x.to(dev), w.to(dev), padding=1).cpu()
        err = rel_err(got, ref)
        what = "cuDNN %s convolution" % cudnn if dev.type == "cuda" else "convolution on %s" % dev
        return check("torch/cudnn", "pass" if err < tol else "fail", "%s vs float64 on the CPU: relative error %.2e (limit %.0e)" % (what, err, tol))
    except Exception as e:  # noqa: BLE001
        return check("torch/cudnn", "fail", "convolution on %s crashed: %r" % (dev, e))


def check_allreduce(torch, n):
    """An NCCL all-reduce over n GPUs: every GPU must end with 1+2+...+n."""
    try:
        import torch.cuda.nccl as nccl

        ts = [torch.full((1 << 20,), float(i + 1), device="cuda:%d" % i) for i in range(n)]
        nccl.all_reduce(ts)
        want = n * (n + 1) / 2
        ok = all(abs(t[0].item() - want) < 1e-3 and abs(t[-1].item() - want) < 1e-3 for t in ts)
        return check("torch/nccl", "pass" if ok else "fail", "NCCL all-reduce over %d GPUs: %s" % (n, "correct" if ok else "wrong sum"))
    except Exception as e:  # noqa: BLE001
        return check("torch/nccl", "fail", "NCCL all-reduce crashed: %r" % (e,))


def bench_allreduce(torch, devs, deadline, results, checks, conditions=None, nbytes=256 << 20, all_reduce=None, min_time=0.2):
    """All-reduce bandwidth over the devices devs, in GB/s, as nccl-tests
    defines it: a float32 message of nbytes on each device (256 MB or more,
    so that the links, not latency, set the time), algbw = nbytes / t and
    busbw = algbw x 2(n-1)/n, the traffic each link carries in a ring.
    all_reduce defaults to torch.cuda.nccl.all_reduce."""
    if time.monotonic() > deadline:
        checks.append(check("bench/nccl", "warn", "skipped: the time budget ran out"))
        return
    n = len(devs)
    try:
        if all_reduce is None:
            import torch.cuda.nccl as nccl

            all_reduce = nccl.all_reduce
        # Zeros: the sum stays finite however often it is repeated.
        ts = [torch.zeros(nbytes // 4, dtype=torch.float32, device=d) for d in devs]

        def sync():
            for d in devs:
                if d.type == "cuda":
                    torch.cuda.synchronize(d)

        t = timed(lambda: all_reduce(ts), sync, min_time, repeats=2, warmup=1)
        algbw = nbytes / t / 1e9
        results["nccl_allreduce_algbw_gbs"] = algbw
        results["nccl_allreduce_busbw_gbs"] = algbw * 2 * (n - 1) / n
        if conditions is not None:
            conditions["nccl_allreduce_busbw_gbs"] = {"gpus": n, "message_bytes": nbytes, "dtype": "float32"}
        del ts
    except Exception as e:  # noqa: BLE001
        checks.append(check("bench/nccl", "fail", "NCCL all-reduce benchmark crashed: %r" % (e,)))


# Benchmark sizes on a GPU: large enough to reach a data-centre GPU's
# steady state, small enough for a 16 GB card.
GEMM = (("gemm_bf16", "bfloat16", 8192), ("gemm_fp16", "float16", 8192), ("gemm_fp32", "float32", 4096))


def bench_gemm(torch, dev, deadline, results, checks, gemm=GEMM, min_time=0.2, conditions=None, spread=None):
    """Dense n x n GEMM per dtype, TF32 off, in TFLOP/s (2n^3 per product)."""
    sync = sync_for(torch, dev)
    api = fp32_exact(torch)
    for name, dtype, n in gemm:
        if time.monotonic() > deadline:
            checks.append(check("bench/" + name, "warn", "skipped: the time budget ran out"))
            continue
        try:
            a = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
            b = torch.randn(n, n, device=dev, dtype=getattr(torch, dtype))
            runs = []
            t = timed(lambda: a @ b, sync, min_time, repeats=REPEATS, runs=runs)
            results[name + "_tflops"] = 2 * n**3 / t / 1e12
            record_spread(spread, checks, name + "_tflops", [2 * n**3 / r / 1e12 for r in runs])
            if conditions is not None:
                conditions[name + "_tflops"] = {"n": n, "dtype": dtype, "tf32": "off (%s)" % api}
            del a, b
        except Exception as e:  # noqa: BLE001
            checks.append(check("bench/" + name, "fail", "%s crashed: %r" % (name, e)))


def bench_memory(torch, dev, deadline, results, checks, nbytes=1 << 30, host_bytes=256 << 20, min_time=0.2, spread=None):
    """Device memory bandwidth (a copy reads and writes: 2 x nbytes), and on
    a GPU pinned host-to-device and device-to-host copies, in GB/s."""
    if time.monotonic() > deadline:
        checks.append(check("bench/memory", "warn", "skipped: the time budget ran out"))
        return
    sync = sync_for(torch, dev)
    try:
        x = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        y = torch.empty_like(x)
        runs = []
        t = timed(lambda: y.copy_(x), sync, min_time, repeats=REPEATS, runs=runs)
        results["memory_bandwidth_gbs"] = 2 * nbytes / t / 1e9
        record_spread(spread, checks, "memory_bandwidth_gbs", [2 * nbytes / r / 1e9 for r in runs])
        del x, y
        if dev.type == "cuda":
            h = torch.empty(host_bytes, dtype=torch.uint8, pin_memory=True)
            d = torch.empty(host_bytes, dtype=torch.uint8, device=dev)
            for key, copy in (("h2d_gbs", lambda: d.copy_(h, non_blocking=True)), ("d2h_gbs", lambda: h.copy_(d, non_blocking=True))):
                runs = []
                results[key] = host_bytes / timed(copy, sync, min_time, repeats=REPEATS, runs=runs) / 1e9
                record_spread(spread, checks, key, [host_bytes / r / 1e9 for r in runs])
            del h, d
    except Exception as e:  # noqa: BLE001
        checks.append(check("bench/memory", "fail", "memory bandwidth test crashed: %r" % (e,)))


GiB = 1 << 30


def resnet50_batch(total_bytes):
    """The ResNet-50 training batch for a card with total_bytes of memory
    (bf16 autocast, 224x224): 256 from 30 GiB, 128 from 14 GiB, else 64.
    Published figures use large batches; a batch this size keeps the GPU,
    not the launch overhead, the limit."""
    if total_bytes >= 30 * GiB:
        return 256
    if total_bytes >= 14 * GiB:
        return 128
    return 64


def out_of_memory(e):
    return "out of memory" in str(e).lower()


RESNET50_PRECISION = "bf16 autocast"


def bench_resnet50(torch, dev, deadline, results, checks, batch=64, size=224, min_time=1.0, warmup=3, conditions=None, spread=None):
    """ResNet-50 training steps (SGD, bf16 autocast, channels-last,
    cudnn.benchmark on) on synthetic images, in images/s. A batch that does
    not fit is halved (down to 8); the batch used and the precision are
    recorded in conditions beside the figure."""
    if time.monotonic() > deadline:
        checks.append(check("bench/resnet50", "warn", "skipped: the time budget ran out"))
        return
    try:
        import torchvision
    except ImportError:
        checks.append(check("bench/resnet50", "warn", "torchvision is not installed: no ResNet-50 figure"))
        return
    except Exception as e:  # noqa: BLE001
        checks.append(check("bench/resnet50", "fail", "torchvision failed to import: %s: %s" % (type(e).__name__, e)))
        return
    was = torch.backends.cudnn.benchmark
    # cuDNN picks the fastest convolution algorithms for these shapes, as
    # every published ResNet-50 figure does.
    torch.backends.cudnn.benchmark = True
    try:
        while True:
            runs = []
            try:
                t = resnet50_step_time(torch, torchvision, dev, batch, size, min_time, warmup, runs)
                break
            except Exception as e:  # noqa: BLE001
                if not out_of_memory(e) or batch <= 8:
                    raise
                batch //= 2
                if dev.type == "cuda":
                    torch.cuda.empty_cache()
        results["resnet50_images_per_s"] = batch / t
        record_spread(spread, checks, "resnet50_images_per_s", [batch / r for r in runs])
        if conditions is not None:
            conditions["resnet50_images_per_s"] = {"batch": batch, "image_size": size, "precision": RESNET50_PRECISION, "memory_format": "channels_last", "cudnn_benchmark": True, "mode": "eager", "optimizer": "sgd"}
    except Exception as e:  # noqa: BLE001
        checks.append(check("bench/resnet50", "fail", "ResNet-50 training crashed: %r" % (e,)))
    finally:
        torch.backends.cudnn.benchmark = was


def resnet50_step_time(torch, torchvision, dev, batch, size, min_time, warmup, runs=None):
    model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    images = torch.randn(batch, 3, size, size, device=dev).to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (batch,), device=dev)

    def step():
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return timed(step, sync_for(torch, dev), min_time, repeats=RESNET50_REPEATS, warmup=warmup, runs=runs)


def bench_torch(torch, dev, deadline, results, checks, emit, conditions=None, batch=64, spread=None):
    if conditions is None:
        conditions = {}
    bench_gemm(torch, dev, deadline, results, checks, conditions=conditions, spread=spread)
    emit("bench/gemm")
    bench_memory(torch, dev, deadline, results, checks, spread=spread)
    emit("bench/memory")
    bench_resnet50(torch, dev, deadline, results, checks, batch=batch, conditions=conditions, spread=spread)
    emit("bench/resnet50")


def device_info(torch, i):
    """cuda:i as torch sees it. Its UUID (torch 2.4 and newer have
    get_device_properties(i).uuid) is how gpuimg finds the same GPU among
    NVML's, whatever CUDA_VISIBLE_DEVICES renumbered; None in older torch."""
    p = torch.cuda.get_device_properties(i)
    uuid = getattr(p, "uuid", None)
    return {"index": i, "name": p.name, "uuid": None if uuid is None else str(uuid), "total_memory": p.total_memory}


def probe_torch(bench, deadline, out, gpu=True, emit=lambda step: None):
    """Checks torch; gpu=False (no NVIDIA driver or GPU here) keeps to what
    can be known without one: the version, and whether it is a CPU-only build."""
    checks = out["checks"]
    try:
        import torch
    except ImportError:
        return
    except Exception as e:  # noqa: BLE001 - a broken install is a finding
        checks.append(check("torch/import", "fail", "torch failed to import: %s: %s" % (type(e).__name__, e)))
        return
    info = {"version": torch.__version__, "cuda": torch.version.cuda}
    out["frameworks"]["torch"] = info
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001
        info["cudnn"] = None
    emit("torch/import")
    if torch.version.cuda is None:
        checks.append(check("torch/cuda", "fail", "torch %s is a CPU-only build: it can never use a GPU (install the CUDA variant from PyTorch's index)" % torch.__version__))
        return
    if not gpu:
        checks.append(check("torch/cuda", "warn", "torch %s is built for CUDA %s; no GPU here, so the GPU checks did not run" % (torch.__version__, torch.version.cuda)))
        return
    if not torch.cuda.is_available():
        checks.append(check("torch/cuda", "fail", "torch.cuda.is_available() is False: torch %s (CUDA %s) cannot use the driver or sees no GPU" % (torch.__version__, torch.version.cuda)))
        return
    n = torch.cuda.device_count()
    info["devices"] = [torch.cuda.get_device_name(i) for i in range(n)]
    checks.append(check("torch/cuda", "pass", "torch %s (CUDA %s) sees %d GPU(s): %s" % (torch.__version__, torch.version.cuda, n, ", ".join(info["devices"]))))
    try:
        out["device"] = device_info(torch, 0)
    except Exception as e:  # noqa: BLE001
        checks.append(check("torch/device", "warn", "cannot read cuda:0's properties: %r" % (e,)))
    emit("torch/cuda")
    # The facts gpuimg judges torch/arch with (matrix.KernelCoverage):
    # the architectures torch was compiled for, and cuda:0's capability.
    info["arch_list"] = torch.cuda.get_arch_list()
    info["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
    dev = torch.device("cuda")
    torch.backends.cudnn.enabled = True
    fp32_exact(torch)
    checks.append(check_matmul(torch, dev))
    checks.append(check_conv(torch, dev, info["cudnn"]))
    emit("torch/checks")
    if bench:
        batch = resnet50_batch(out.get("device", {}).get("total_memory", 0))
        bench_torch(torch, dev, deadline, out["bench"], checks, emit, out.setdefault("conditions", {}), batch=batch, spread=out.setdefault("spread", {}))
    # NCCL last: a peer-to-peer hang (common in VMs) must not eat the
    # benchmarks' budget.
    if n >= 2:
        checks.append(check_allreduce(torch, n))
        emit("torch/nccl")
        if bench:
            bench_allreduce(torch, [torch.device("cuda", i) for i in range(n)], deadline, out["bench"], checks, out.setdefault("conditions", {}))
            emit("bench/nccl")


def matmul_vs_numpy(np, compute, tol=1e-4):
    """compute(a, b) runs a float32 product on the GPU and returns a numpy
    array; compared with float64 on the CPU."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    ref = a @ b
    got = np.asarray(compute(a.astype(np.float32), b.astype(np.float32)), dtype=np.float64)
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    return err, err < tol


def import_framework(name, checks):
    """The module, or None: absent is no finding, a broken install is."""
    try:
        return __import__(name)
    except ImportError:
        return None
    except Exception as e:  # noqa: BLE001 - a broken install is a finding
        checks.append(check(name + "/import", "fail", "%s failed to import: %s: %s" % (name, type(e).__name__, e)))
        return None


def probe_tensorflow(out, gpu=True, emit=lambda step: None):
    """TensorFlow: its version and CUDA build, the GPUs it sees, and a
    float32 matmul on the first GPU against float64 on the CPU."""
    checks = out["checks"]
    tf = import_framework("tensorflow", checks)
    if tf is None:
        return
    info = {"version": getattr(tf, "__version__", "unknown")}
    out["frameworks"]["tensorflow"] = info
    try:
        build = dict(tf.sysconfig.get_build_info())
        info["cuda"], info["cudnn"] = build.get("cuda_version"), build.get("cudnn_version")
        cuda_build = tf.test.is_built_with_cuda()
    except Exception as e:  # noqa: BLE001
        checks.append(check("tensorflow/cuda", "fail", "TensorFlow %s: cannot read its build: %r" % (info["version"], e)))
        return
    emit("tensorflow/import")
    if not cuda_build:
        checks.append(check("tensorflow/cuda", "fail", "TensorFlow %s is a CPU-only build: it can never use a GPU (install tensorflow[and-cuda])" % info["version"]))
        return
    if not gpu:
        checks.append(check("tensorflow/cuda", "warn", "TensorFlow %s is built for CUDA %s; no GPU here, so the GPU checks did not run" % (info["version"], info["cuda"])))
        return
    try:
        devices = tf.config.list_physical_devices("GPU")
    except Exception as e:  # noqa: BLE001
        checks.append(check("tensorflow/cuda", "fail", "TensorFlow could not list GPUs: %r" % (e,)))
        return
    info["devices"] = [d.name for d in devices]
    if not devices:
        checks.append(check("tensorflow/cuda", "fail", "TensorFlow %s (CUDA %s) sees no GPU: its CUDA libraries do not load with this driver, or no GPU was passed in" % (info["version"], info["cuda"])))
        return
    checks.append(check("tensorflow/cuda", "pass", "TensorFlow %s (CUDA %s, cuDNN %s) sees %d GPU(s)" % (info["version"], info["cuda"], info["cudnn"], len(devices))))
    emit("tensorflow/cuda")
    try:
        import numpy as np

        tf.config.experimental.enable_tensor_float_32_execution(False)

        def on_gpu(a, b):
            with tf.device("/GPU:0"):
                return tf.linalg.matmul(tf.constant(a), tf.constant(b)).numpy()

        err, ok = matmul_vs_numpy(np, on_gpu)
        checks.append(check("tensorflow/matmul", "pass" if ok else "fail", "float32 matmul on GPU 0 vs float64 on the CPU: relative error %.2e" % err))
    except Exception as e:  # noqa: BLE001
        checks.append(check("tensorflow/matmul", "fail", "TensorFlow matmul on the GPU crashed: %r" % (e,)))
    emit("tensorflow/checks")


def probe_jax(out, gpu=True, emit=lambda step: None):
    """JAX: its version, the GPUs it sees, and a float32 matmul on the
    first GPU (highest precision, no TF32) against float64 on the CPU."""
    checks = out["checks"]
    jax = import_framework("jax", checks)
    if jax is None:
        return
    info = {"version": getattr(jax, "__version__", "unknown")}
    out["frameworks"]["jax"] = info
    emit("jax/import")
    if not gpu:
        return
    try:
        devices = [d for d in jax.devices() if d.platform == "gpu"]
    except Exception as e:  # noqa: BLE001 - jax raises when no backend initialises
        devices = []
        info["error"] = repr(e)
    info["devices"] = [str(d) for d in devices]
    if not devices:
        checks.append(check("jax/cuda", "fail", "JAX %s sees no GPU: install a CUDA build (jax[cuda12] or jax[cuda13]) that loads with this driver%s" % (info["version"], "; " + info["error"] if "error" in info else "")))
        return
    checks.append(check("jax/cuda", "pass", "JAX %s sees %d GPU(s)" % (info["version"], len(devices))))
    emit("jax/cuda")
    try:
        import numpy as np
        import jax.numpy as jnp

        def on_gpu(a, b):
            x, y = jax.device_put(a, devices[0]), jax.device_put(b, devices[0])
            return np.asarray(jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST))

        err, ok = matmul_vs_numpy(np, on_gpu)
        checks.append(check("jax/matmul", "pass" if ok else "fail", "float32 matmul on %s vs float64 on the CPU: relative error %.2e" % (devices[0], err)))
    except Exception as e:  # noqa: BLE001
        checks.append(check("jax/matmul", "fail", "JAX matmul on the GPU crashed: %r" % (e,)))
    emit("jax/checks")


FRAMEWORKS = ("torch", "tensorflow", "jax")

# Variables that change what the figures mean, recorded with them: TF32
# overrides (NGC images set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, which lets
# cuBLAS use TF32 for float32 whatever torch's own setting says, so an
# fp32 GEMM figure above the CUDA cores' peak is TF32's), the GPUs a
# process sees and their order, and the frameworks' memory preallocation.
ENV_VARS = (
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "TORCH_ALLOW_TF32_CNMATMUL_OVERRIDE",
    "NVIDIA_TF32_OVERRIDE",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "TF_FORCE_GPU_ALLOW_GROWTH",
)


def recorded_env(environ):
    return {k: environ[k] for k in ENV_VARS if k in environ}


def installed(name):
    """Whether a module of that name can be found, without importing it (a
    broken install is found, and reported by its child)."""
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:  # noqa: BLE001 - a broken parent package: let the child say
        return True


def run_framework(name, bench, budget, gpu, out, emit):
    """Probes one framework in this process."""
    deadline = time.monotonic() + budget
    try:
        if name == "torch":
            probe_torch(bench, deadline, out, gpu=gpu, emit=emit)
        elif name == "tensorflow":
            probe_tensorflow(out, gpu=gpu, emit=emit)
        else:
            probe_jax(out, gpu=gpu, emit=emit)
    except Exception as e:  # noqa: BLE001 - the probe must still print its JSON
        out["checks"].append(check("probe", "fail", "the probe itself failed: %r" % (e,)))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--facts", action="store_true", help="print the interpreter, the recorded variables and the installed frameworks")
    p.add_argument("--framework", choices=FRAMEWORKS, help="probe this framework")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--budget", type=float, default=600, help="seconds for the benchmarks")
    p.add_argument("--no-gpu", action="store_true", help="there is no NVIDIA driver or GPU: skip the GPU checks")
    args = p.parse_args(argv)
    if args.facts:
        json.dump({"python": platform.python_version(), "env": recorded_env(os.environ), "installed": [name for name in FRAMEWORKS if installed(name)]}, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return 0
    if not args.framework:
        p.error("give --facts or --framework NAME")
    out = {"python": platform.python_version(), "frameworks": {}, "checks": [], "bench": {}, "conditions": {}, "spread": {}, "env": recorded_env(os.environ), "step": "start", "complete": False}

    def emit(step):
        out["step"] = step
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()

    run_framework(args.framework, args.bench, args.budget, not args.no_gpu, out, emit)
    out["complete"] = True
    emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

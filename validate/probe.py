"""gpuimg's in-image probe: what the Python frameworks of an image see of the GPU.

gpuimg runs this file with the image's python3 (gpuimg probe, gpuimg validate
--run). It prints one JSON object on stdout and never raises: every failure,
a framework that does not import included, becomes a check with its reason.

    python3 probe.py [--bench] [--budget SECONDS]

Output: {"python": "3.10.12", "frameworks": {"torch": {...}}, "checks": [...],
"bench": {...}} where each check is {"name", "status" (pass|warn|fail),
"message"} and bench figures are in TFLOP/s, GB/s and images/s.
"""

import argparse
import json
import platform
import sys
import time


def check(name, status, message):
    return {"name": name, "status": status, "message": message}


def arch_covered(capability, arch_list):
    """Whether torch's compiled architectures run on a GPU of this capability.

    SASS (sm_XY) runs on the same major with an equal or newer minor; PTX
    (compute_XY) is JIT-compiled for any newer GPU.
    """
    major, minor = capability
    for a in arch_list:
        kind, _, num = a.partition("_")
        if not num.isdigit():
            continue
        n = int(num)
        a_major, a_minor = divmod(n, 10)
        if kind == "sm" and a_major == major and a_minor <= minor:
            return "native"
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return "ptx"
    return None


def timed(fn, iters, sync):
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) / iters


def bench_torch(torch, deadline, results, checks):
    dev = torch.device("cuda")
    sync = torch.cuda.synchronize
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name, dtype, n in (("gemm_bf16", torch.bfloat16, 8192), ("gemm_fp16", torch.float16, 8192), ("gemm_fp32", torch.float32, 4096)):
        if time.monotonic() > deadline:
            checks.append(check("bench/" + name, "warn", "skipped: the time budget ran out"))
            continue
        try:
            a = torch.randn(n, n, device=dev, dtype=dtype)
            b = torch.randn(n, n, device=dev, dtype=dtype)
            t = timed(lambda: a @ b, 10, sync)
            results[name + "_tflops"] = 2 * n**3 / t / 1e12
            del a, b
        except Exception as e:  # noqa: BLE001 - every failure is a finding
            checks.append(check("bench/" + name, "fail", "%s crashed: %r" % (name, e)))
    try:
        nbytes = 1 << 30
        x = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        y = torch.empty_like(x)
        t = timed(lambda: y.copy_(x), 10, sync)
        results["memory_bandwidth_gbs"] = 2 * nbytes / t / 1e9
        h = torch.empty(256 << 20, dtype=torch.uint8, pin_memory=True)
        d = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
        results["h2d_gbs"] = h.numel() / timed(lambda: d.copy_(h, non_blocking=True), 10, sync) / 1e9
        results["d2h_gbs"] = h.numel() / timed(lambda: h.copy_(d, non_blocking=True), 10, sync) / 1e9
        del x, y, h, d
    except Exception as e:  # noqa: BLE001
        checks.append(check("bench/memory", "fail", "memory bandwidth test crashed: %r" % (e,)))
    if time.monotonic() > deadline:
        checks.append(check("bench/resnet50", "warn", "skipped: the time budget ran out"))
        return
    try:
        import torchvision

        model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        batch = 64
        images = torch.randn(batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
        labels = torch.randint(0, 1000, (batch,), device=dev)

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        for _ in range(3):
            step()
        t = timed(step, 10, sync)
        results["resnet50_images_per_s"] = batch / t
    except ImportError:
        checks.append(check("bench/resnet50", "warn", "torchvision is not installed: no ResNet-50 figure"))
    except Exception as e:  # noqa: BLE001
        checks.append(check("bench/resnet50", "fail", "ResNet-50 training crashed: %r" % (e,)))


def probe_torch(bench, deadline, out):
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
    if torch.version.cuda is None:
        checks.append(check("torch/cuda", "fail", "torch %s is a CPU-only build" % torch.__version__))
        return
    if not torch.cuda.is_available():
        checks.append(check("torch/cuda", "fail", "torch.cuda.is_available() is False: torch %s (CUDA %s) cannot use the driver or sees no GPU" % (torch.__version__, torch.version.cuda)))
        return
    n = torch.cuda.device_count()
    info["devices"] = [torch.cuda.get_device_name(i) for i in range(n)]
    checks.append(check("torch/cuda", "pass", "torch %s (CUDA %s) sees %d GPU(s): %s" % (torch.__version__, torch.version.cuda, n, ", ".join(info["devices"]))))
    arch_list = torch.cuda.get_arch_list()
    info["arch_list"] = arch_list
    cap = torch.cuda.get_device_capability(0)
    covered = arch_covered(cap, arch_list)
    sm = "sm_%d%d" % cap
    if covered == "native":
        checks.append(check("torch/arch", "pass", "torch has native kernels for %s" % sm))
    elif covered == "ptx":
        checks.append(check("torch/arch", "warn", "torch has only PTX for %s: kernels are JIT-compiled on first use" % sm))
    else:
        checks.append(check("torch/arch", "fail", "torch was compiled for %s, none of which runs on %s" % (" ".join(arch_list), sm)))
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        a, b = torch.randn(512, 512, dtype=torch.float64), torch.randn(512, 512, dtype=torch.float64)
        got = (a.float().cuda() @ b.float().cuda()).cpu().double()
        err = ((got - a @ b).abs().max() / (a @ b).abs().max()).item()
        checks.append(check("torch/matmul", "pass" if err < 1e-4 else "fail", "GPU matmul vs CPU: relative error %.2e" % err))
    except Exception as e:  # noqa: BLE001
        checks.append(check("torch/matmul", "fail", "GPU matmul crashed: %r" % (e,)))
    try:
        torch.backends.cudnn.enabled = True
        torch.backends.cudnn.allow_tf32 = False
        x, w = torch.randn(8, 16, 32, 32), torch.randn(32, 16, 3, 3)
        ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
        got = torch.nn.functional.conv2d(x.cuda(), w.cuda(), padding=1).cpu().double()
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        checks.append(check("torch/cudnn", "pass" if err < 1e-4 else "fail", "cuDNN %s convolution vs CPU: relative error %.2e" % (info["cudnn"], err)))
    except Exception as e:  # noqa: BLE001
        checks.append(check("torch/cudnn", "fail", "cuDNN convolution crashed: %r" % (e,)))
    if n >= 2:
        try:
            import torch.cuda.nccl as nccl

            ts = [torch.full((1 << 20,), float(i + 1), device="cuda:%d" % i) for i in range(n)]
            nccl.all_reduce(ts)
            want = n * (n + 1) / 2
            ok = all(abs(t[0].item() - want) < 1e-3 for t in ts)
            checks.append(check("torch/nccl", "pass" if ok else "fail", "NCCL all-reduce over %d GPUs: %s" % (n, "correct" if ok else "wrong sum")))
        except Exception as e:  # noqa: BLE001
            checks.append(check("torch/nccl", "fail", "NCCL all-reduce crashed: %r" % (e,)))
    if bench:
        bench_torch(torch, deadline, out["bench"], checks)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bench", action="store_true")
    p.add_argument("--budget", type=float, default=600, help="seconds for the benchmarks")
    args = p.parse_args(argv)
    out = {"python": platform.python_version(), "frameworks": {}, "checks": [], "bench": {}}
    deadline = time.monotonic() + args.budget
    try:
        probe_torch(args.bench, deadline, out)
    except Exception as e:  # noqa: BLE001 - the probe must still print its JSON
        out["checks"].append(check("probe", "fail", "the probe itself failed: %r" % (e,)))
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

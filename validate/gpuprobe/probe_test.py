"""Tests of probe.py, run by validate/gpuprobe/probe_test.go (TestProbePyUnit) with
Debian's python3-torch (a real CPU-only torch) and, on a machine with a GPU,
with the GPU's torch:

    python3 -m unittest -v probe_test          # from validate/gpuprobe/

Without torch the torch tests are skipped, unless GPUIMG_REQUIRE_TORCH=1
(set by the Go test, which installs it) turns a missing torch into a failure.
"""

import io
import json
import os
import sys
import tempfile
import time
import types
import unittest
from contextlib import redirect_stdout
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

REQUIRE_TORCH = os.environ.get("GPUIMG_REQUIRE_TORCH") == "1"
GPU = torch is not None and torch.version.cuda is not None and torch.cuda.is_available()


def numpy_available():
    try:
        import numpy  # noqa: F401
    except ImportError:
        return REQUIRE_TORCH  # Debian's torch brings numpy: then it must be there
    return True


def need_torch(test):
    if torch is None and not REQUIRE_TORCH:
        return unittest.skip("torch is not installed")(test)
    return test


def run_main(*args):
    """probe.main's exit status and its last snapshot, after checking that
    every line is a snapshot and only the last is complete."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = probe.main(list(args))
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert lines and lines[-1]["complete"] and lines[-1]["step"] == "done", lines
    assert not any(s["complete"] for s in lines[:-1]), lines
    return rc, lines[-1]


class Main(unittest.TestCase):
    def test_always_prints_json(self):
        for name in probe.FRAMEWORKS:
            with self.subTest(framework=name):
                rc, out = run_main("--framework", name, "--budget", "1")
                self.assertEqual(rc, 0)
                self.assertEqual(set(out) - {"device"}, {"python", "frameworks", "checks", "bench", "conditions", "spread", "env", "step", "complete"})
                for c in out["checks"]:
                    self.assertIn(c["status"], ("pass", "warn", "fail"))

    def test_facts(self):
        buf = io.StringIO()
        with mock.patch.dict(os.environ, {"NVIDIA_TF32_OVERRIDE": "0"}), redirect_stdout(buf):
            rc = probe.main(["--facts"])
        self.assertEqual(rc, 0)
        lines = buf.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)
        facts = json.loads(lines[0])
        self.assertEqual(set(facts), {"python", "env", "installed"})
        self.assertEqual(facts["env"]["NVIDIA_TF32_OVERRIDE"], "0")
        self.assertEqual(facts["installed"], [n for n in probe.FRAMEWORKS if probe.installed(n)])
        self.assertEqual("torch" in facts["installed"], torch is not None)

    def test_probe_failure_is_a_check(self):
        real = probe.probe_torch

        def broken(*a, **k):
            raise RuntimeError("boom")

        probe.probe_torch = broken
        try:
            rc, out = run_main("--framework", "torch")
        finally:
            probe.probe_torch = real
        self.assertEqual(rc, 0)
        self.assertEqual(out["checks"], [{"name": "probe", "status": "fail", "message": "the probe itself failed: RuntimeError('boom')"}])


def write_module(d, name, source):
    os.makedirs(os.path.join(d, name), exist_ok=True)
    with open(os.path.join(d, name, "__init__.py"), "w") as f:
        f.write(source)


def fake_module(name, **attrs):
    m = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def fake_tensorflow(cuda_build, devices):
    """A stand-in with the TensorFlow API probe.py calls (TensorFlow is not
    packaged by Debian, so the real one cannot run here)."""
    build = {"cuda_version": "12.5" if cuda_build else None, "cudnn_version": "9" if cuda_build else None}
    return fake_module(
        "tensorflow",
        __version__="2.18.0",
        sysconfig=types.SimpleNamespace(get_build_info=lambda: build),
        test=types.SimpleNamespace(is_built_with_cuda=lambda: cuda_build),
        config=types.SimpleNamespace(list_physical_devices=lambda kind: devices),
    )


class OtherFrameworks(unittest.TestCase):
    """TensorFlow and JAX checks against stand-ins: what each outcome of
    their APIs becomes."""

    def probe(self, fn, modules, gpu=True):
        out = {"frameworks": {}, "checks": []}
        with mock.patch.dict(sys.modules, modules):
            fn(out, gpu=gpu)
        return out

    def test_absent_is_no_finding(self):
        out = self.probe(probe.probe_tensorflow, {"tensorflow": None})
        self.assertEqual(out, {"frameworks": {}, "checks": []})
        out = self.probe(probe.probe_jax, {"jax": None})
        self.assertEqual(out, {"frameworks": {}, "checks": []})

    def test_broken_install_is_a_failed_check(self):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "jax"))
            with open(os.path.join(d, "jax", "__init__.py"), "w") as f:
                f.write("raise OSError('libcuda.so.1: cannot open shared object file')\n")
            sys.path.insert(0, d)
            try:
                out = self.probe(probe.probe_jax, {})
            finally:
                sys.path.remove(d)
                sys.modules.pop("jax", None)
        self.assertEqual([(c["name"], c["status"]) for c in out["checks"]], [("jax/import", "fail")])
        self.assertIn("libcuda.so.1", out["checks"][0]["message"])

    def test_tensorflow_cpu_only(self):
        out = self.probe(probe.probe_tensorflow, {"tensorflow": fake_tensorflow(False, [])})
        self.assertEqual(out["frameworks"]["tensorflow"]["version"], "2.18.0")
        self.assertEqual([(c["name"], c["status"]) for c in out["checks"]], [("tensorflow/cuda", "fail")])
        self.assertIn("CPU-only build", out["checks"][0]["message"])

    def test_tensorflow_sees_no_gpu(self):
        out = self.probe(probe.probe_tensorflow, {"tensorflow": fake_tensorflow(True, [])})
        self.assertEqual([(c["name"], c["status"]) for c in out["checks"]], [("tensorflow/cuda", "fail")])
        self.assertIn("sees no GPU", out["checks"][0]["message"])
        out = self.probe(probe.probe_tensorflow, {"tensorflow": fake_tensorflow(True, [])}, gpu=False)
        self.assertEqual([(c["name"], c["status"]) for c in out["checks"]], [("tensorflow/cuda", "warn")])

    def test_jax_without_gpu_devices(self):
        cpu = types.SimpleNamespace(platform="cpu")
        out = self.probe(probe.probe_jax, {"jax": fake_module("jax", __version__="0.9.2", devices=lambda: [cpu])})
        self.assertEqual([(c["name"], c["status"]) for c in out["checks"]], [("jax/cuda", "fail")])

        def no_backend():
            raise RuntimeError("Unable to initialize backend 'cuda'")

        out = self.probe(probe.probe_jax, {"jax": fake_module("jax", __version__="0.9.2", devices=no_backend)})
        self.assertIn("Unable to initialize backend 'cuda'", out["checks"][0]["message"])
        out = self.probe(probe.probe_jax, {"jax": fake_module("jax", __version__="0.9.2", devices=no_backend)}, gpu=False)
        self.assertEqual(out["checks"], [])
        self.assertEqual(out["frameworks"]["jax"]["version"], "0.9.2")


@unittest.skipUnless(numpy_available(), "numpy is not installed")
class MatmulVsNumpy(unittest.TestCase):
    def test_right_and_wrong(self):
        import numpy as np

        err, ok = probe.matmul_vs_numpy(np, lambda a, b: a @ b)
        self.assertTrue(ok, err)
        err, ok = probe.matmul_vs_numpy(np, lambda a, b: (a @ b) * 1.01)
        self.assertFalse(ok, err)


@need_torch
class TorchOnCPU(unittest.TestCase):
    """The checks and benchmarks on the CPU device: the same code a GPU runs,
    with sizes small enough for a CI machine."""

    def setUp(self):
        self.cpu = torch.device("cpu")
        self.far = time.monotonic() + 3600

    def test_cpu_only_build_fails_with_the_reason(self):
        if torch.version.cuda is not None:
            self.skipTest("this torch is a CUDA build")
        for args in ((), ("--no-gpu",)):
            _, out = run_main("--framework", "torch", *args)
            self.assertEqual(out["frameworks"]["torch"]["version"], torch.__version__)
            self.assertIsNone(out["frameworks"]["torch"]["cuda"])
            self.assertEqual([(c["name"], c["status"]) for c in out["checks"]], [("torch/cuda", "fail")])
            self.assertIn("CPU-only build", out["checks"][-1]["message"])

    def test_matmul_and_conv_compare_with_float64(self):
        for c in (probe.check_matmul(torch, self.cpu), probe.check_conv(torch, self.cpu, None)):
            self.assertEqual(c["status"], "pass", c)
            self.assertIn("relative error", c["message"])
        # float32 is never exact: a limit of 1e-12 must fail, so the
        # comparison can catch a device that computes wrongly.
        for c in (probe.check_matmul(torch, self.cpu, tol=1e-12), probe.check_conv(torch, self.cpu, None, tol=1e-12)):
            self.assertEqual(c["status"], "fail", c)

    def test_a_crash_is_a_failed_check(self):
        c = probe.check_matmul(torch, torch.device("meta"))
        self.assertEqual(c["status"], "fail")
        self.assertIn("crashed", c["message"])

    def test_bench_gemm(self):
        results, checks = {}, []
        spread = {}
        probe.bench_gemm(torch, self.cpu, self.far, results, checks, gemm=(("gemm_bf16", "bfloat16", 128), ("gemm_fp32", "float32", 256)), min_time=0.01, spread=spread)
        self.assertEqual([c for c in checks if c["name"] != "bench/stability"], [])  # a shared CI CPU may be unstable
        self.assertEqual(set(results), {"gemm_bf16_tflops", "gemm_fp32_tflops"})
        self.assertEqual(len(spread["gemm_fp32_tflops"]["runs"]), probe.REPEATS)
        self.assertAlmostEqual(max(spread["gemm_fp32_tflops"]["runs"]), results["gemm_fp32_tflops"], places=2)
        for v in results.values():
            self.assertGreater(v, 0)
        results, checks = {}, []
        probe.bench_gemm(torch, self.cpu, self.far, results, checks, gemm=(("gemm_x", "no_such_dtype", 8),))
        self.assertEqual([c["name"] for c in checks], ["bench/gemm_x"])
        self.assertEqual(checks[0]["status"], "fail")

    def test_bench_memory(self):
        results, checks = {}, []
        probe.bench_memory(torch, self.cpu, self.far, results, checks, nbytes=8 << 20, min_time=0.01)
        self.assertEqual(checks, [])
        self.assertGreater(results["memory_bandwidth_gbs"], 0)
        self.assertNotIn("h2d_gbs", results)  # pinned host copies only on a GPU

    def test_bench_resnet50(self):
        try:
            import torchvision  # noqa: F401
        except ImportError:
            if REQUIRE_TORCH:
                raise
            self.skipTest("torchvision is not installed")
        results, checks = {}, []
        probe.bench_resnet50(torch, self.cpu, self.far, results, checks, batch=2, size=64, min_time=0.01, warmup=1)
        self.assertEqual(checks, [])
        self.assertGreater(results["resnet50_images_per_s"], 0)

    def test_bench_resnet50_records_its_conditions(self):
        try:
            import torchvision  # noqa: F401
        except ImportError:
            if REQUIRE_TORCH:
                raise
            self.skipTest("torchvision is not installed")
        seen = []
        real = probe.resnet50_step_time

        def small(torch_, tv, dev, batch, size, min_time, warmup, runs=None):
            # cudnn.benchmark is on while it runs; a batch over 8 does not fit.
            seen.append((batch, torch.backends.cudnn.benchmark))
            if batch > 8:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return real(torch_, tv, dev, batch, size, min_time, warmup, runs)

        results, checks, conditions, spread = {}, [], {}, {}
        torch.backends.cudnn.benchmark = False
        with mock.patch.object(probe, "resnet50_step_time", small):
            probe.bench_resnet50(torch, self.cpu, self.far, results, checks, batch=32, size=32, min_time=0.01, warmup=1, conditions=conditions, spread=spread)
        self.assertEqual([c for c in checks if c["name"] != "bench/stability"], [])
        self.assertEqual(len(spread["resnet50_images_per_s"]["runs"]), probe.RESNET50_REPEATS)
        self.assertEqual(seen, [(32, True), (16, True), (8, True)])
        self.assertFalse(torch.backends.cudnn.benchmark)  # restored
        self.assertGreater(results["resnet50_images_per_s"], 0)
        c = conditions["resnet50_images_per_s"]
        self.assertEqual((c["batch"], c["precision"], c["cudnn_benchmark"], c["image_size"]), (8, "bf16 autocast", True, 32))
        # Another error than memory is a crash, not a smaller batch.
        results, checks = {}, []
        with mock.patch.object(probe, "resnet50_step_time", mock.Mock(side_effect=RuntimeError("CUDA error: illegal address"))):
            probe.bench_resnet50(torch, self.cpu, self.far, results, checks, batch=16)
        self.assertEqual([(c["name"], c["status"]) for c in checks], [("bench/resnet50", "fail")])

    def test_resnet50_batch_fits_the_card(self):
        for gib, want in ((141, 256), (80, 256), (40, 256), (24, 128), (16, 128), (12, 64), (0, 64)):
            self.assertEqual(probe.resnet50_batch(gib * probe.GiB), want, gib)

    def test_bench_allreduce_bus_bandwidth(self):
        calls = []

        def cpu_all_reduce(ts):  # the sum NCCL computes, on CPU tensors
            calls.append(len(ts))
            s = sum(ts)
            for t in ts:
                t.copy_(s)

        for n, factor in ((2, 1.0), (4, 1.5), (8, 1.75)):
            results, checks, conditions = {}, [], {}
            probe.bench_allreduce(torch, [self.cpu] * n, self.far, results, checks, conditions, nbytes=1 << 16, all_reduce=cpu_all_reduce, min_time=0.01)
            self.assertEqual(checks, [])
            self.assertAlmostEqual(results["nccl_allreduce_busbw_gbs"] / results["nccl_allreduce_algbw_gbs"], factor)
            self.assertEqual(conditions["nccl_allreduce_busbw_gbs"], {"gpus": n, "message_bytes": 1 << 16, "dtype": "float32"})
            self.assertEqual(calls[-1], n)
        # The default message is 256 MB: bandwidth-bound, as nccl-tests measures it.
        self.assertEqual(probe.bench_allreduce.__defaults__[1], 256 << 20)
        results, checks = {}, []
        probe.bench_allreduce(torch, [self.cpu] * 2, time.monotonic() - 1, results, checks)
        self.assertEqual((results, [c["status"] for c in checks]), ({}, ["warn"]))
        probe.bench_allreduce(torch, [self.cpu] * 2, self.far, results, checks, nbytes=1 << 10, all_reduce=mock.Mock(side_effect=RuntimeError("NCCL error: unhandled system error")))
        self.assertEqual(checks[-1]["status"], "fail")
        self.assertIn("NCCL error", checks[-1]["message"])

    def test_device_info_uuid(self):
        props = types.SimpleNamespace(name="NVIDIA H200", total_memory=141 * probe.GiB, uuid="ffc79498-8ff3-c2dc-3b0d-fafd804516ae")
        fake = types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_properties=lambda i: props))
        self.assertEqual(probe.device_info(fake, 0), {"index": 0, "name": "NVIDIA H200", "uuid": "ffc79498-8ff3-c2dc-3b0d-fafd804516ae", "total_memory": 141 * probe.GiB})
        del props.uuid  # torch before 2.4
        self.assertIsNone(probe.device_info(fake, 0)["uuid"])

    def test_timed_grows_the_batch_to_the_minimum_time(self):
        calls = []
        t = probe.timed(lambda: calls.append(time.sleep(0.002)), probe.no_sync, min_time=0.02, repeats=2, warmup=1)
        self.assertGreaterEqual(t, 0.002)
        self.assertLess(t, 0.02)
        # 1 warm-up, batches of 1, 2, 4, 8 (8 x 2 ms >= 20 ms? no: 16), then a repeat
        self.assertGreaterEqual(len(calls), 1 + 1 + 2 + 4 + 8)

    def test_fp32_exact(self):
        api = probe.fp32_exact(torch)
        if api == "fp32_precision":
            self.assertEqual(torch.backends.cuda.matmul.fp32_precision, "ieee")
            self.assertEqual(torch.backends.cudnn.conv.fp32_precision, "ieee")
        else:
            self.assertEqual(api, "allow_tf32")
            self.assertFalse(torch.backends.cuda.matmul.allow_tf32)
            self.assertFalse(torch.backends.cudnn.allow_tf32)

    def test_snapshot_after_every_bench(self):
        steps = []
        probe.bench_torch(torch, self.cpu, time.monotonic() - 1, {}, [], steps.append)
        self.assertEqual(steps, ["bench/gemm", "bench/memory", "bench/resnet50"])

    def test_budget_spent_skips_with_a_warning(self):
        results, checks = {}, []
        past = time.monotonic() - 1
        probe.bench_gemm(torch, self.cpu, past, results, checks)
        probe.bench_memory(torch, self.cpu, past, results, checks)
        probe.bench_resnet50(torch, self.cpu, past, results, checks)
        self.assertEqual(results, {})
        self.assertEqual([c["name"] for c in checks], ["bench/gemm_bf16", "bench/gemm_fp16", "bench/gemm_fp32", "bench/memory", "bench/resnet50"])
        self.assertTrue(all(c["status"] == "warn" for c in checks))


class Stability(unittest.TestCase):
    """Repeated runs, their spread, and the noisy-neighbour warning."""

    def test_timed_records_every_run(self):
        runs = []
        t = probe.timed(lambda: time.sleep(0.001), probe.no_sync, min_time=0.005, repeats=4, warmup=1, runs=runs)
        self.assertEqual(len(runs), 4)
        self.assertEqual(t, min(runs))

    def test_spread_and_noisy_neighbour(self):
        spread, checks = {}, []
        probe.record_spread(spread, checks, "gemm_bf16_tflops", [720, 716, 712, 718, 715])
        self.assertEqual(checks, [])
        self.assertEqual(spread["gemm_bf16_tflops"]["runs"], [720, 716, 712, 718, 715])
        self.assertAlmostEqual(spread["gemm_bf16_tflops"]["spread_pct"], 100 * 8 / 716)
        # One run of five 15% below the median: a noisy neighbour.
        probe.record_spread(spread, checks, "h2d_gbs", [53, 52.8, 45, 53.1, 52.9])
        self.assertEqual([(c["name"], c["status"]) for c in checks], [("bench/stability", "warn")])
        self.assertIn("h2d_gbs: a run at 45.0 was 15% below the median 52.9 of 5 runs: performance is unstable", checks[0]["message"])
        # 9.5% below is within the spread allowed; two runs make no median.
        checks = []
        probe.record_spread(spread, checks, "x", [100, 100, 90.5])
        probe.record_spread(spread, checks, "y", [100, 50])
        self.assertEqual(checks, [])
        probe.record_spread(None, checks, "z", [100, 10, 100])
        self.assertEqual(checks, [])

@unittest.skipUnless(GPU, "no CUDA torch with a GPU here")
class TorchOnGPU(unittest.TestCase):
    """Runs where a GPU is lent (bench/gpu/run.sh on the GPU machine)."""

    def test_probe_passes(self):
        _, out = run_main("--framework", "torch")
        failed = [c for c in out["checks"] if c["status"] == "fail"]
        self.assertEqual(failed, [])
        names = [c["name"] for c in out["checks"]]
        for want in ("torch/cuda", "torch/matmul", "torch/cudnn"):
            self.assertIn(want, names)
        # The facts gpuimg judges torch/arch with (TestTorchArch).
        info = out["frameworks"]["torch"]
        self.assertEqual(info["capability"], "%d.%d" % torch.cuda.get_device_capability(0))
        self.assertEqual(info["arch_list"], torch.cuda.get_arch_list())

    def test_small_bench_on_the_gpu(self):
        dev, far = torch.device("cuda"), time.monotonic() + 600
        results, checks = {}, []
        probe.bench_gemm(torch, dev, far, results, checks, gemm=(("gemm_bf16", "bfloat16", 1024), ("gemm_fp16", "float16", 1024), ("gemm_fp32", "float32", 1024)), min_time=0.05)
        probe.bench_memory(torch, dev, far, results, checks, nbytes=64 << 20, host_bytes=16 << 20, min_time=0.05)
        self.assertEqual(checks, [])
        self.assertEqual(set(results), {"gemm_bf16_tflops", "gemm_fp16_tflops", "gemm_fp32_tflops", "memory_bandwidth_gbs", "h2d_gbs", "d2h_gbs"})


if __name__ == "__main__":
    unittest.main()

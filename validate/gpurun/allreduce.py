# gpuimg's multi-node all-reduce (validate --run kubernetes --nodes N):
# torchrun starts it on every node; rank 0 prints one JSON line,
# {"gpuimg_allreduce": {...}}, after NCCL's own log (NCCL_DEBUG=INFO), so
# the pod's log holds both the bandwidth and the transport NCCL used.
# Bus bandwidth is nccl-tests' for all-reduce: algbw * 2 (n - 1) / n.
import json
import os
import time

import torch
import torch.distributed as dist

SIZE = int(os.environ.get("GPUIMG_ALLREDUCE_BYTES", str(1 << 30)))
ITERS = int(os.environ.get("GPUIMG_ALLREDUCE_ITERS", "20"))


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    x = torch.ones(SIZE // 4, dtype=torch.float32, device="cuda")
    for _ in range(5):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(ITERS):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / ITERS
    algbw = x.numel() * 4 / seconds / 1e9
    if rank == 0:
        print(json.dumps({"gpuimg_allreduce": {
            "bytes": x.numel() * 4,
            "seconds": seconds,
            "algbw_gbs": algbw,
            "busbw_gbs": algbw * 2 * (world - 1) / world,
            "world": world,
            "nodes": int(os.environ.get("GROUP_WORLD_SIZE", "0")),
            "nccl": ".".join(str(v) for v in torch.cuda.nccl.version()),
        }}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""PyTorch gloo peer for the all-reduce benchmark. One process per rank; rank 0 prints one JSON
line per size: the median seconds of `iters` all-reduces of a float32 tensor of that many bytes.

usage: python3 torch_allreduce.py --rank R --world N --port P --sizes 1048576,16777216 --iters 10
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--sizes", required=True)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=a.rank, world_size=a.world)
    for size in [int(s) for s in a.sizes.split(",")]:
        t = torch.ones(size // 4, dtype=torch.float32)
        for _ in range(a.warmup):
            dist.all_reduce(t)
        times = []
        for _ in range(a.iters):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - start)
        # Every rank's time for an all-reduce is the slowest rank's; report the max over ranks.
        worst = torch.tensor([statistics.median(times)])
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        if a.rank == 0:
            print(json.dumps({"peer": "gloo", "version": torch.__version__, "ranks": a.world, "bytes": size, "seconds": worst.item()}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

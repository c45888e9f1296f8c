"""PyTorch peers of the sharded data-parallel benchmark (gloo, CPU), Adam on the 11.4M MLP.
One process per rank; every rank prints its memory, rank 0 also samples/s of the global batch.

usage: python3 torch_zero.py --rank R --world N --port P --mode ddp|zero|fsdp --batch 64 --steps 20 --warmup 5
--mode ddp: DistributedDataParallel with torch.optim.Adam (every rank holds all of Adam's state)
--mode zero: DDP with ZeroRedundancyOptimizer(Adam): ZeRO stage 1, each rank the state of its
  shard of the parameters, the updated parameters broadcast from their owners
--mode fsdp: FullyShardedDataParallel (the 1.x API, FULL_SHARD: ZeRO stage 3) on CPU tensors;
  where it cannot run on this torch and gloo, it prints what it printed as {"error": ...}
Memory: the resident set with the process group up and no model (after a garbage collection),
and the kernel's high-water mark from the model in place (reset through /proc/self/clear_refs) through the last step.
"""
import argparse
import datetime
import gc
import json
import os
import re
import sys
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn

from torch_train import build, timed_steps


def status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024


def wrap(mode: str, model: nn.Module):
    if mode == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        model = FSDP(model, device_id=None)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3)
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(model)
    if mode == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        return model, ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mode", default="ddp", choices=["ddp", "zero", "fsdp"])
    p.add_argument("--model", default="mlp10m")
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--timeout", type=int, default=120, help="seconds a collective may wait")
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=a.rank, world_size=a.world, timeout=datetime.timedelta(seconds=a.timeout))
    torch.manual_seed(0)
    x = torch.rand(a.batch, 1, 28, 28)
    y = torch.randint(0, 10, (a.batch,))
    gc.collect()
    idle = status_bytes("VmRSS")
    report = {"peer": f"pytorch-{a.mode}", "rank": a.rank, "world": a.world, "torch": torch.__version__}
    try:
        model, opt = wrap(a.mode, build(a.model))
        # The peak from the model in place on (meshtrain's is measured so too; its load's peak apart).
        gc.collect()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        elapsed = timed_steps(model, opt, x, y, a.warmup, a.steps, dist.barrier)
        report.update({"idle_rss_bytes": idle, "peak_rss_bytes": status_bytes("VmHWM")})
        if a.rank == 0:
            report["samples_per_second"] = a.steps * a.batch * a.world / elapsed
    except Exception as e:  # noqa: BLE001 (the benchmark reports what this torch printed)
        report["error"] = f"{type(e).__name__}: {e}".strip()[:600]
        traceback.print_exc()
    print(json.dumps(report), flush=True)
    # gloo's teardown can hang after a failed collective on the other rank; the report is printed.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

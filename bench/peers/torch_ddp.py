"""PyTorch DistributedDataParallel peer (gloo, CPU) for the data-parallel scaling benchmark.
One process per rank; rank 0 prints samples/s of the global batch after warm-up.

usage: python3 torch_ddp.py --rank R --world N --port P --model mlp|cnn --batch 64 --steps 100 --warmup 10 [--compress fp16|powersgd] [--master ADDR]
--compress fp16: DDP's fp16_compress_hook (gradients all-reduced as float16, no error feedback;
its bf16 hook needs NCCL, so CPU runs have fp16 only)
--compress powersgd: DDP's powerSGD_hook at --powersgd-rank (error feedback, warm start)
--master: rank 0's address (another host of the shaped-link benchmark); gloo picks the
interface by GLOO_SOCKET_IFNAME
"""
import argparse
import datetime
import os
import sys
import json

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_train import build, timed_steps


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--model", default="mlp")
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compress", default="none", choices=["none", "fp16", "powersgd"])
    p.add_argument("--powersgd-rank", type=int, default=4)
    p.add_argument("--master", default="127.0.0.1")
    p.add_argument("--timeout", type=int, default=60, help="seconds a collective may wait")
    a = p.parse_args()
    torch.set_num_threads(1)
    # A collective that waits a minute has hung (the PowerSGD hook on gloo does, on the 11.4M MLP): fail instead of gloo's 30 minutes.
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world, timeout=datetime.timedelta(seconds=a.timeout))
    torch.manual_seed(0)
    model = DDP(build(a.model))
    if a.compress == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    if a.compress == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as power_sgd
        # start_powerSGD_iter 2: the first step all-reduces whole (DDP's bucket rebuild), as its docs advise.
        state = power_sgd.PowerSGDState(process_group=None, matrix_approximation_rank=a.powersgd_rank, start_powerSGD_iter=2)
        model.register_comm_hook(state, power_sgd.powerSGD_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.rand(a.batch, 1, 28, 28)
    y = torch.randint(0, 10, (a.batch,))
    elapsed = timed_steps(model, opt, x, y, a.warmup, a.steps, dist.barrier)
    if a.rank == 0:
        print(json.dumps({"peer": "pytorch-ddp", "model": a.model, "compress": a.compress, "world": a.world, "batch_per_rank": a.batch, "samples_per_second": a.steps * a.batch * a.world / elapsed}), flush=True)
    # gloo's teardown hung now and then on shaped links after both ranks had passed the barrier;
    # the measurement is printed, so leave without it.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

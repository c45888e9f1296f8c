"""PyTorch peer for the training-throughput benchmark: the same models, batch and data shapes
as meshtrain's side, on the CPU, with a pinned thread count. Prints one JSON line per run.

usage: python3 torch_train.py --model mlp|cnn|mlp10m|sentiment --batch 64 --threads 1 --steps 60 --warmup 10 --optimizer sgd|adam
"""
import argparse
import json
import time

import torch
import torch.nn as nn


class Sentiment(nn.Module):
    """tfjs-examples' sentiment model: a 10,000-word embedding of 128, an LSTM of 32, one sigmoid unit."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10000, 128)
        self.lstm = nn.LSTM(128, 32, batch_first=True)
        self.out = nn.Linear(32, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, (h, _) = self.lstm(self.embed(ids))
        return torch.sigmoid(self.out(h[-1]))


def build(name: str) -> nn.Module:
    if name == "sentiment":
        return Sentiment()
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    if name == "mlp1m":
        # 1.9M parameters: a 7.4 MB all-reduce against a step of a few milliseconds
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    if name == "mlp10m":
        # 11.4M parameters: the all-reduce (45 MB) outweighs the compute it splits
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 3000), nn.ReLU(), nn.Linear(3000, 3000), nn.ReLU(), nn.Linear(3000, 10))
    if name == "mlpdeep":
        # 11.0M parameters in eight 1200-wide layers: no one layer is most of the model (bench:sharded's ZeRO-3 case)
        layers = [nn.Flatten(), nn.Linear(784, 1200), nn.ReLU()]
        for _ in range(7):
            layers += [nn.Linear(1200, 1200), nn.ReLU()]
        return nn.Sequential(*layers, nn.Linear(1200, 10))
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10),
        )
    raise SystemExit(f"unknown model {name}")


def timed_steps(model, opt, x, y, warmup: int, steps: int, barrier=None) -> float:
    """Seconds for `steps` training steps after `warmup` (each side of a barrier, when given)."""
    loss_fn = nn.CrossEntropyLoss()
    start = 0.0
    for i in range(warmup + steps):
        if i == warmup:
            if barrier:
                barrier()
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    if barrier:
        barrier()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--optimizer", default="sgd")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = build(a.model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01) if a.optimizer == "sgd" else torch.optim.Adam(model.parameters(), lr=0.001)
    if a.model == "sentiment":
        # Reviews of 100 word ids, a 0/1 label each, as the example trains them.
        loss_fn = nn.BCELoss()
        x = torch.randint(0, 10000, (a.batch, 100))
        y = torch.randint(0, 2, (a.batch, 1)).float()
    else:
        loss_fn = nn.CrossEntropyLoss()
        x = torch.rand(a.batch, 1, 28, 28)
        y = torch.randint(0, 10, (a.batch,))
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "peer": "pytorch", "version": torch.__version__, "model": a.model, "batch": a.batch,
        "threads": a.threads, "optimizer": a.optimizer, "steps": a.steps,
        "samples_per_second": a.steps * a.batch / elapsed,
        "blas": torch.__config__.show().split("BLAS_INFO=")[1].split(",")[0],
    }))


if __name__ == "__main__":
    main()

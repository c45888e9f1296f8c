"""PyTorch peer for bench:zoo: the same architectures as bench/zoo/models.ts and transformers.ts,
the same batch and input shapes, SGD or Adam, on the CPU with a pinned thread count. Prints one
JSON line per run: samples/s and the process's peak resident memory above what it held before
the model was built.

usage: python3 torch_zoo.py --model resnet20|resnet50|transformer|gpt|sentiment|jena|textgap|mlpdrop
                            --batch 32 --threads 1 --steps 20 --warmup 3 --optimizer sgd|adam
"""
import argparse
import json
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def hwm_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def reset_kernel_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class ConvBn(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int, stride: int, relu: bool) -> None:
        layers = [nn.Conv2d(cin, cout, k, stride, padding=k // 2, bias=False), nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)]
        if relu:
            layers.append(nn.ReLU(inplace=True))
        super().__init__(*layers)


class Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a = ConvBn(cin, cout, 3, stride, True)
        self.b = ConvBn(cout, cout, 3, 1, False)
        self.short = ConvBn(cin, cout, 1, stride, False) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.b(self.a(x)) + self.short(x))


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int, project: bool) -> None:
        super().__init__()
        self.a = ConvBn(cin, width, 1, 1, True)
        self.b = ConvBn(width, width, 3, stride, True)
        self.c = ConvBn(width, width * 4, 1, 1, False)
        self.short = ConvBn(cin, width * 4, 1, stride, False) if project else nn.Identity()

    def forward(self, x):
        return F.relu(self.c(self.b(self.a(x))) + self.short(x))


def resnet20() -> nn.Module:
    layers, cin = [ConvBn(3, 16, 3, 1, True)], 16
    for stage, cout in enumerate([16, 32, 64]):
        for block in range(3):
            layers.append(Basic(cin, cout, 2 if stage > 0 and block == 0 else 1))
            cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def resnet50() -> nn.Module:
    layers, cin = [ConvBn(3, 64, 7, 2, True), nn.MaxPool2d(3, 2, 1)], 64
    for stage, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)]):
        for block in range(blocks):
            layers.append(Bottleneck(cin, width, 2 if stage > 0 and block == 0 else 1, block == 0))
            cin = width * 4
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000))


class Block(nn.Module):
    """Pre-norm: x + MHA(LN(x)), then x + MLP(LN(x)); attention dropout 0.1, GELU, dropout 0.1."""

    def __init__(self, d: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
        self.att = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.f1, self.f2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)
        self.causal = causal

    def forward(self, x):
        h = self.n1(x)
        T = x.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if self.causal else None
        x = x + self.att(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.drop(self.f2(F.gelu(self.f1(self.n2(x)))))


class Transformer(nn.Module):
    def __init__(self, vocab: int, T: int, d: int, heads: int, blocks: int, causal: bool, out: int) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(T, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, heads, causal) for _ in range(blocks)])
        self.norm, self.head, self.causal = nn.LayerNorm(d, eps=1e-5), nn.Linear(d, out), causal

    def forward(self, ids):
        x = self.norm(self.blocks(self.tok(ids) + self.pos[: ids.shape[1]]))
        return self.head(x) if self.causal else self.head(x.mean(1))


class Sentiment(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.lstm, self.out = nn.Embedding(10000, 128), nn.LSTM(128, 32, batch_first=True), nn.Linear(32, 1)

    def forward(self, ids):
        _, (h, _) = self.lstm(self.embed(ids))
        return torch.sigmoid(self.out(h[-1]))


class Jena(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru, self.out = nn.GRU(14, 32, batch_first=True), nn.Linear(32, 1)

    def forward(self, x):
        _, h = self.gru(x)
        return self.out(h[-1])


class TextGap(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.out = nn.Embedding(20000, 64), nn.Linear(64, 1)

    def forward(self, ids):
        return torch.sigmoid(self.out(self.embed(ids).mean(1)))


def mlpdrop() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))


def setup(name: str, batch: int):
    """The model, a batch of its inputs and targets, and its loss (L2 on mlpdrop's kernels, as the TF.js model's regularizer)."""
    if name == "resnet20":
        return resnet20(), torch.rand(batch, 3, 32, 32), torch.randint(0, 10, (batch,)), nn.CrossEntropyLoss()
    if name == "resnet50":
        return resnet50(), torch.rand(batch, 3, 224, 224), torch.randint(0, 1000, (batch,)), nn.CrossEntropyLoss()
    if name == "transformer":
        return Transformer(5000, 128, 128, 4, 2, False, 2), torch.randint(1, 5000, (batch, 128)), torch.randint(0, 2, (batch,)), nn.CrossEntropyLoss()
    if name == "gpt":
        ce = nn.CrossEntropyLoss()
        return Transformer(65, 128, 128, 4, 4, True, 65), torch.randint(1, 65, (batch, 128)), torch.randint(0, 65, (batch, 128)), lambda out, y: ce(out.reshape(-1, 65), y.reshape(-1))
    if name == "sentiment":
        return Sentiment(), torch.randint(1, 10000, (batch, 100)), torch.randint(0, 2, (batch, 1)).float(), nn.BCELoss()
    if name == "jena":
        return Jena(), torch.rand(batch, 120, 14), torch.rand(batch, 1), nn.L1Loss()
    if name == "textgap":
        return TextGap(), torch.randint(1, 20000, (batch, 200)), torch.randint(0, 2, (batch, 1)).float(), nn.BCELoss()
    if name == "mlpdrop":
        model, ce = mlpdrop(), nn.CrossEntropyLoss()
        kernels = [m.weight for m in model if isinstance(m, nn.Linear)]
        return model, torch.rand(batch, 1, 28, 28), torch.randint(0, 10, (batch,)), lambda out, y: ce(out, y) + 1e-4 * sum((w * w).sum() for w in kernels)
    raise SystemExit(f"unknown model {name}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet20")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--optimizer", default="sgd")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    before = rss_mib()
    # The kernel's high-water mark from here: every page a step touched, mid-step included
    # (a step's activations are freed before it ends, so sampling between steps misses them).
    kernel_peak = reset_kernel_peak()
    model, x, y, loss_fn = setup(a.model, a.batch)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01) if a.optimizer == "sgd" else torch.optim.Adam(model.parameters(), lr=0.001)
    peak = rss_mib()
    start = 0.0
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        peak = max(peak, hwm_mib() if kernel_peak else rss_mib())
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "peer": "pytorch", "version": torch.__version__, "model": a.model, "batch": a.batch, "threads": a.threads,
        "optimizer": a.optimizer, "steps": a.steps, "samples_per_second": a.steps * a.batch / elapsed,
        "params": sum(p.numel() for p in model.parameters()), "peak_rss_above_mib": peak - before,
    }))


if __name__ == "__main__":
    main()

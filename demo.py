"""Demo: compile a small model and an elementwise chain with mlirc; print the max
error against eager and eager/mlirc timings (medians after warm-up).

    python -m mlirc.demo
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn as nn

import mlirc


def median_ms(fn, *args, repeat: int = 30, warmup: int = 3) -> float:
    """Median wall time of `fn(*args)` in ms, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def chain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a = x * y + 1.5
    b = torch.sigmoid(a) * torch.tanh(x)
    c = torch.abs(b) / (torch.exp(-x.abs()) + 1.0)
    return torch.where(x > 0, c, b - y)


def main() -> None:
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10), nn.LogSoftmax(-1)).eval()
    cases = [
        ("elementwise chain 1024x1024", chain, (torch.randn(1024, 1024), torch.randn(1024, 1024))),
        ("MLP batch 64", mlp, (torch.randn(64, 256),)),
    ]
    print(f"{'case':32} {'max err':>10} {'eager ms':>9} {'mlirc ms':>9} {'speedup':>8}")
    with torch.no_grad():
        for name, fn, args in cases:
            torch._dynamo.reset()
            mlirc.reset_stats()
            compiled = torch.compile(fn, backend="mlirc")
            err = (compiled(*args) - fn(*args)).abs().max().item()
            eager, ours = median_ms(fn, *args), median_ms(compiled, *args)
            print(f"{name:32} {err:10.2e} {eager:9.3f} {ours:9.3f} {eager / ours:7.2f}x")
            print(f"  {mlirc.stats().summary()}")


if __name__ == "__main__":
    main()

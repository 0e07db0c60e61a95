"""Where a training step's GPU time goes, for Inductor and mlirc side by side: GPU
busy time and wall time per step, kernels per step, and the kernels that take the
most time, by name; and the host's time in each phase (forward, backward, optimizer
step), which says where a host-bound step loses.

    python benchmarks/train_profile.py [--cases bert,gpt2] [--mode reduce-overhead] [--top 12] [--host-top 25]

Wall time above busy time means the host (Python, launches, copies into a graph's
buffers) is the limit; where the two are close, the top kernels say which kernels to
work on.  The steps are train_bench.py's (its models, batches and optimizers).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile
from train_bench import CASES, Trainer

import mlirc  # noqa: F401  (registers the backend)

STEPS = 5


def _wall_ms(trainer: Trainer, batch: tuple) -> float:
    best = float("inf")
    for _ in range(5):  # the best of 5 runs of STEPS steps
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(STEPS):
            trainer.step(*batch)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) * 1e3 / STEPS)
    return best


def _host_phases_ms(trainer: Trainer, batch: tuple) -> tuple[float, float, float]:
    """Host time per step in the forward, the backward and the optimizer step (with
    zero_grad), no syncs between them: where a host-bound step's wall time goes."""
    totals = [0.0, 0.0, 0.0]
    torch.cuda.synchronize()
    for _ in range(STEPS * 4):
        if trainer.graphs:
            torch.compiler.cudagraph_mark_step_begin()
        start = time.perf_counter()
        loss = trainer.forward(*batch)
        forward = time.perf_counter()
        loss.backward()
        loss = loss.detach().clone() if trainer.graphs else loss.detach()
        backward = time.perf_counter()
        trainer.update()
        trainer.optimizer.zero_grad(set_to_none=True)
        end = time.perf_counter()
        for i, seconds in enumerate((forward - start, backward - forward, end - backward)):
            totals[i] += seconds * 1e3 / (STEPS * 4)
    torch.cuda.synchronize()
    return totals[0], totals[1], totals[2]


def _host_profile(trainer: Trainer, batch: tuple, top: int) -> None:
    """The host functions that take the most time over 50 steps (cProfile, by own time)."""
    profiler = cProfile.Profile()
    torch.cuda.synchronize()
    profiler.enable()
    for _ in range(50):
        trainer.step(*batch)
    torch.cuda.synchronize()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def _kernel_times(trainer: Trainer, batch: tuple) -> dict[str, tuple[int, float]]:
    """Per kernel name: launches and GPU ms, per step."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            trainer.step(*batch)
        torch.cuda.synchronize()
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            entry = totals[event.name[:90]]
            entry[0] += 1
            entry[1] += event.device_time / 1e3
    return {name: (int(n / STEPS), ms / STEPS) for name, (n, ms) in totals.items()}


def profile_case(name: str, mode: str, update_mode: str, top: int, host_top: int) -> None:
    make_model, batches_for, make_optimizer = CASES[name]
    torch.manual_seed(0)
    model = make_model().cuda()
    batch = tuple(t.cuda() for t in batches_for["cuda"]())
    for backend in ("inductor", "mlirc"):
        trainer = Trainer(backend, model, make_optimizer, mode, update_mode)
        for _ in range(5):
            trainer.step(*batch)
        wall = _wall_ms(trainer, batch)
        host = _host_phases_ms(trainer, batch)
        kernels = _kernel_times(trainer, batch)
        busy = sum(ms for _, ms in kernels.values())
        launches = sum(n for n, _ in kernels.values())
        print(f"\n{name} {backend}: wall {wall:.3f} ms/step, GPU busy {busy:.3f} ms, {launches} kernels/step")
        print(f"  host ms: forward {host[0]:.3f}, backward {host[1]:.3f}, optimizer step {host[2]:.3f}")
        for kernel, (n, ms) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]:
            print(f"  {ms:8.3f} ms  x{n:<4d} {kernel}")
        if host_top:
            _host_profile(trainer, batch, host_top)
        del trainer
        torch._dynamo.reset()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="bert,gpt2")
    parser.add_argument("--mode", default="reduce-overhead")
    parser.add_argument("--update-mode", default="default")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--host-top", type=int, default=0, help="also cProfile 50 steps: this many functions")
    args = parser.parse_args()
    for name in args.cases.split(","):
        profile_case(name, args.mode, args.update_mode, args.top, args.host_top)


if __name__ == "__main__":
    main()

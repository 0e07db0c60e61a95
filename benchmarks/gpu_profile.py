"""Where a compiled model's GPU time goes: kernels per call, GPU busy time and
wall time per call, for eager, Inductor and mlirc, side by side.

    python benchmarks/gpu_profile.py [--cases mlp,gpt2] [--top 8]
    python benchmarks/gpu_profile.py --cases resnet18@32,gpt2@32   # zoo models at a batch

Wall time much above busy time means the host (Python per launch, allocation)
is the limit, not the kernels; the top kernels by time say which kernels to
work on when it is not.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable

import torch
from gpu_bench import _gpu_sized, _zoo_case
from models import MODELS

import mlirc  # noqa: F401  (registers the backend)

CALLS = 20


def _wall_ms(fn: Callable, args: tuple) -> float:
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):  # the best of 5 batches of CALLS back-to-back calls
        start = time.perf_counter()
        for _ in range(CALLS):
            fn(*args)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) * 1e3 / CALLS)
    return best


def _host_ms(fn: Callable, args: tuple, calls: int = 3) -> float:
    """Python time per call while the GPU is kept busy: the launch cost the GPU must
    hide.  Few calls, so the launches fit in the driver's queue without blocking."""
    torch.cuda.synchronize()
    torch.cuda._sleep(int(1e9))  # GPU spin so launches only queue
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    host = (time.perf_counter() - start) * 1e3 / calls
    torch.cuda.synchronize()
    return host


def _kernels(fn: Callable, args: tuple) -> tuple[float, Counter, Counter]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn(*args)
        torch.cuda.synchronize()
    count, busy = Counter(), Counter()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            count[event.name] += 1
            busy[event.name] += event.device_time
    return sum(busy.values()) / 1e3 / CALLS, count, busy


def profile_case(name: str, top: int) -> None:
    # `<zoo model>@<batch>` is benchmarks/zoo.py's model at that batch
    fn, args = _zoo_case(name)[1:3] if "@" in name else _gpu_sized(name)
    print(f"## {name}")
    print("| backend | wall ms | host ms | GPU busy ms | kernels/call |")
    print("|---|---|---|---|---|")
    tops = {}
    with torch.no_grad():
        for backend in ("eager", "inductor", "mlirc"):
            torch._dynamo.reset()
            compiled = fn if backend == "eager" else torch.compile(fn, backend=backend)
            compiled(*args)
            wall, host = _wall_ms(compiled, args), _host_ms(compiled, args)
            busy, count, per_kernel = _kernels(compiled, args)
            print(f"| {backend} | {wall:.3f} | {host:.3f} | {busy:.3f} | {sum(count.values()) / CALLS:.0f} |")
            tops[backend] = per_kernel
    for backend, per_kernel in tops.items():
        print(f"\n{backend}, top kernels (us/call):")
        for kernel, us in per_kernel.most_common(top):
            print(f"  {us / CALLS:8.1f}  {kernel[:110]}")
    print(flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(MODELS))
    p.add_argument("--top", type=int, default=8)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)
    for name in args.cases.split(","):
        profile_case(name, args.top)


if __name__ == "__main__":
    main()

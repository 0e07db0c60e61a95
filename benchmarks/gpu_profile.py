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


def _host_profile(fn: Callable, args: tuple, top: int, calls: int = 4) -> list[str]:
    """Where the host's time per call goes (cProfile, by own time), the GPU kept busy
    so that launches only queue (few calls, as in _host_ms)."""
    import cProfile
    import pstats

    torch.cuda.synchronize()
    torch.cuda._sleep(int(2e9))
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn(*args)
    profiler.disable()
    torch.cuda.synchronize()
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:top]
    return [
        f"  {own * 1e3 / calls:7.3f} ms  {cumulative * 1e3 / calls:7.3f} cum  {count / calls:6.1f}x"
        f"  {path.rsplit('/', 1)[-1]}:{line}({function})"[:150]
        for (path, line, function), (_, count, own, cumulative, _) in rows
    ]


def profile_case(name: str, top: int, host_top: int = 0) -> None:
    # `<zoo model>@<batch>` is benchmarks/zoo.py's model at that batch
    fn, args = _zoo_case(name)[1:3] if "@" in name else _gpu_sized(name)
    print(f"## {name}")
    print("| backend | wall ms | host ms | GPU busy ms | kernels/call |")
    print("|---|---|---|---|---|")
    tops, hosts = {}, {}
    with torch.no_grad():
        for backend in ("eager", "inductor", "mlirc"):
            torch._dynamo.reset()
            compiled = fn if backend == "eager" else torch.compile(fn, backend=backend)
            compiled(*args)
            wall, host = _wall_ms(compiled, args), _host_ms(compiled, args)
            busy, count, per_kernel = _kernels(compiled, args)
            print(f"| {backend} | {wall:.3f} | {host:.3f} | {busy:.3f} | {sum(count.values()) / CALLS:.0f} |")
            tops[backend] = per_kernel
            if host_top and backend != "eager":
                hosts[backend] = _host_profile(compiled, args, host_top)
    for backend, per_kernel in tops.items():
        print(f"\n{backend}, top kernels (us/call):")
        for kernel, us in per_kernel.most_common(top):
            print(f"  {us / CALLS:8.1f}  {kernel[:110]}")
    for backend, rows in hosts.items():
        print(f"\n{backend}, host time per call by function (cProfile, own time):")
        print("\n".join(rows))
    print(flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(MODELS))
    p.add_argument("--top", type=int, default=8)
    p.add_argument("--host-top", type=int, default=0, help="also print the N functions the host spends most time in")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)
    for name in args.cases.split(","):
        profile_case(name, args.top, args.host_top)


if __name__ == "__main__":
    main()

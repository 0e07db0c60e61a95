"""Hot sizes: a size called often gets its own static compile, kept where it is faster.

A symbolic graph's kernels are compiled once for every size (they take their sizes
as arguments: passes/cpu/size_args.py, passes/gpu/lower_to_tt.py), and one host wrapper serves every size
(backends/symbolic_wrapper.py), so a new size costs no compile.  A size of its
own can still be faster: a wrapper bound to it times its GEMMs, packs its weights and
keeps its scratch; its own kernels have constant trip counts and exact tails, and row
loops form over rows whose count the binding knows.  So at a size's HOT_CALLS-th call
it is bound, timed against the wrapper for every size on the call's own arguments,
interleaved, and the faster serves it; where that is the bound wrapper, its own
kernels are compiled (as with MLIRC_RUNTIME_SIZES=0) and timed against it right
after, in the same call.  Where there is no wrapper for every size, a size starts
bound and gets its own kernels at its HOT_CALLS-th call.  The compiles and timings
happen once per hot size, inside the call that makes it hot.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from mlirc.frontend.stats import stats

log = logging.getLogger(__name__)

HOT_CALLS = 16  # calls at one size before it is compiled for that size alone
ROUNDS = 5  # interleaved timed rounds per candidate, at most
ROUND_S = 0.01  # each round lasts about this long, at least one call
BUDGET_S = 0.5  # the timing's share of the hot call, beyond one warm-up call each


def _round(fn: Callable, args: tuple, calls: int) -> float:
    """Seconds per call; on a GPU, until its kernels have run (launches are queued)."""
    sync = _synchronize(args)
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    sync()
    return (time.perf_counter() - start) / calls


def _synchronize(args: tuple) -> Callable[[], None]:
    """Waits for the GPUs of the call's tensors (any GPU in use where it has none:
    a graph's CUDA work may take only CPU scalars and ints)."""
    devices = {a.device for a in args if isinstance(a, torch.Tensor) and a.is_cuda}
    if not devices and torch.cuda.is_available() and torch.cuda.is_initialized():
        devices = {torch.device("cuda", torch.cuda.current_device())}
    return (lambda: [torch.cuda.synchronize(d) for d in devices]) if devices else (lambda: None)  # type: ignore[return-value]


_timing = threading.local()  # set while faster() runs: the calls it times count no calls


def faster(current: Callable, candidate: Callable, args: tuple) -> Callable:
    """Whichever of two calls with the same answers runs `args` faster (medians of
    interleaved rounds after one warm-up call each; as many rounds as BUDGET_S
    allows, and for a graph slower than that, the warm-up calls decide).  A
    candidate that is itself a HotSizeCall (the wrapper for every size's hot size,
    bound, before its own kernels) does not get hot from being timed."""
    _timing.on = True
    try:
        return _faster(current, candidate, args)
    finally:
        _timing.on = False


def _faster(current: Callable, candidate: Callable, args: tuple) -> Callable:
    warm = (_round(current, args, 1), _round(candidate, args, 1))
    once = max(*warm, 1e-6)
    calls = max(1, int(ROUND_S / once))
    rounds = min(ROUNDS, int(BUDGET_S / (2 * calls * once)))
    times: dict[int, list[float]] = {0: [], 1: []} if rounds else {0: [warm[0]], 1: [warm[1]]}
    for _ in range(rounds):
        for index, fn in enumerate((current, candidate)):
            times[index].append(_round(fn, args, calls))
    kept, other = (0, 1) if statistics.median(times[0]) <= statistics.median(times[1]) else (1, 0)
    log.debug("hot size: %s kept (%.3g s against %.3g s)", ("shared", "static")[kept], *(
        statistics.median(times[i]) for i in (kept, other)
    ))  # fmt: skip
    return (current, candidate)[kept]


class HotSizeCall:
    """One size's call through the kernels of every size; at its HOT_CALLS-th call,
    `specialize()` compiles the size on its own and the faster of the two is kept."""

    def __init__(self, call: Callable, specialize: Callable[[tuple], Callable], hot: bool = False) -> None:
        self.call = call
        self.specialize: Callable[[tuple], Callable] | None = specialize  # takes the hot call's arguments
        # hot: the size was hot before this call existed (bound once hot): it specializes at its next call
        self.calls = HOT_CALLS - 1 if hot else 0

    def __call__(self, *args: Any) -> Any:
        if self.specialize is not None and not getattr(_timing, "on", False):
            self.calls += 1
            if self.calls >= HOT_CALLS:
                self._decide(args)
        return self.call(*args)

    def _decide(self, args: tuple) -> None:
        specialize, self.specialize = self.specialize, None
        try:
            static = specialize(args)
        except Exception:  # noqa: BLE001 - the shared kernels keep serving the size
            log.debug("compiling a hot size on its own failed", exc_info=True)
            return
        stats().symbolic_hot_sizes += 1
        self.call = faster(self.call, static, args)
        stats().symbolic_hot_static += self.call is static

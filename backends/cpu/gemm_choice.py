"""Which library runs a CPU GEMM: torch.mm (MKL's sgemm in torch's x86 builds),
oneDNN's matmul (`torch.ops.mkldnn._linear_pointwise`, plain weights, no post-op), or,
for a weight that stays the same tensor (a parameter), MKL's GEMM on the weight
packed once (backends/cpu/packed_weights.py; timed at the exact row count).

Neither wins everywhere.  On the suite's shapes, oneDNN's f32 GEMM is 7-23% faster
for the large ones (512x256x1024: 1.33 against 1.60 ms on 2 cores), while its
fixed cost of ~12 us (primitive lookup) makes it lose on small ones (7x33x129: 17
against 5 us).  Where the break-even lies depends on the CPU and the thread count,
so the choice is measured: the first time a wrapper is built for a GEMM of a given
shape and layout (its row count rounded up to a power of two), both are timed on
random operands of that layout in back-to-back pairs, and oneDNN is chosen where the median of the pairs' time ratios says it is
faster.  Ratios of neighbouring calls, not each library's best time, because a
busy neighbour on a shared machine slows whole stretches: on 2 cores a spell of
contention once made both libraries' minima the single-thread ones and flipped
the choice for 64x784x512, a 12% loss for the MLP.  The answer is remembered for
the process.

Both compute the same products in a different order: results agree to float32
rounding (relative 1e-6 on K=784), as two BLAS builds would.  In bfloat16 (on CPUs
where oneDNN takes it) all three sum in float32 and round once; they agreed bit for bit
on the shapes measured, though oneDNN's inner product (the linear calls) and its
matmul (torch.mm) may order sums differently.  oneDNN's post-ops are not used: its
ReLU maps NaN to 0 where eager keeps NaN.
"""

from __future__ import annotations

import logging
import math
import statistics
import time
from collections.abc import Callable

import torch

from mlirc.backends.cpu import packed_weights
from mlirc.config import config
from mlirc.errors import MlircError

log = logging.getLogger(__name__)

BLAS, ONEDNN, PACKED = "mm", "mm_onednn", "mm_packed"  # library-call names (see library_calls.CPU_LIBRARY_CALLS)
# The same calls with a bias added before their one rounding (an "addmm" library kernel)
WITH_BIAS = {BLAS: "addmm", ONEDNN: "addmm_onednn", PACKED: "addmm_packed"}
MODES = ("auto", "blas", "onednn")
# Below this many multiply-adds oneDNN's fixed cost outweighs any gain: not timed.
MIN_MACS = 1 << 21
# oneDNN is chosen where the median ratio is below this.  Not a wider margin: a
# tie costs nothing either way, but when a busy neighbour slows both libraries to
# single-thread speed the ratios shrink towards 1 (0.96 against 0.87 for
# 64x784x512), and a margin then hands the clearly faster one's place to torch.mm.
MARGIN = 1.0
ROUNDS = 7
WARMUP = 2
BATCH_MAX = 4
# Seconds of timing per GEMM shape, roughly: a language model's vocabulary projection
# at batch 8 (1024x768x50257, 0.35 s a call on 2 cores) took 23 s of GPT-2's compile
# at 7 rounds.  A call that long needs neither many rounds nor an untimed call first
# to be measured well; the rounds shrink to fit (at least one).
BUDGET_S = 1.0
LONG_CALL_S = 0.01
_choices: dict[tuple, str] = {}


def onednn_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def onednn_mm(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b (+ bias) through oneDNN; its weight operand is b's (N, K) transpose, as a linear layer's."""
    return torch.ops.mkldnn._linear_pointwise(a, b.t(), bias, "none", [], "")


def _eligible(a: torch.Tensor, b: torch.Tensor) -> bool:
    """float32 from MIN_MACS up; bfloat16 at any size but 0 (a packed weight halves a
    one-row GEMM's time there: oneDNN's bf16 call costs what torch.mm's does)."""
    (m, k), n = a.shape, b.shape[1]
    least = MIN_MACS if a.dtype == torch.float32 else 1
    bf16_ok = a.dtype == torch.float32 or torch.ops.mkldnn._is_mkldnn_bf16_supported()  # AVX-512 CPUs only
    return (
        a.dtype == b.dtype
        and a.dtype in (torch.float32, torch.bfloat16)
        and m * n * k >= least
        and onednn_available()
        and bf16_ok
    )


def _packable(a: torch.Tensor, b: torch.Tensor, stable_weight: bool) -> bool:
    """Can MKL pack b once: b is a dense (K, N) weight or a row-major (N, K) one's
    transpose that stays the same tensor from call to call (an argument: a parameter,
    or a prepared value)."""
    dense = b.is_contiguous() or b.t().is_contiguous()
    return stable_weight and a.is_contiguous() and dense and packed_weights.linear_available(a.dtype)


def choose_mm(a: torch.Tensor, b: torch.Tensor, stable_weight: bool = False) -> str:
    """The library call for a @ b, given the operands' layouts (meta tensors);
    `stable_weight`: b is an argument or a view of one (see _packable)."""
    mode = config.cpu_gemm
    if mode not in MODES:
        raise MlircError(f"mlirc: MLIRC_CPU_GEMM={mode!r} is not a CPU GEMM mode; expected one of {', '.join(MODES)}")
    if mode == "blas" or not _eligible(a, b):
        return BLAS
    if mode == "onednn":
        return ONEDNN
    packable = _packable(a, b, stable_weight)
    if packable and a.dtype == torch.bfloat16:
        # Not timed: the same oneDNN GEMM on a weight reordered once never lost to the
        # plain call (1-4% faster at 128 rows, 2x at one, on 2 cores), a gap that
        # compile-time timing cannot resolve (median ratios 0.99-1.03 either way).
        return PACKED
    # Packing is for an exact row count: timed at it, not at its power-of-two bucket.
    rows = a.shape[0] if packable else _rows_bucket(a.shape[0])
    key = (rows, a.shape[1], a.stride(), tuple(b.shape), b.stride(), a.dtype, torch.get_num_threads(), packable)
    if key not in _choices:
        _choices[key] = _measure(a, b, packable)
    return _choices[key]


def _rows_bucket(rows: int) -> int:
    """The power of two at or above `rows`: one timing serves every row count up to
    it.  A graph with symbolic sizes is compiled again at each new batch size, where
    re-timing each GEMM cost 0.3 of a BERT layer's 2.3 s; the break-even moves with
    the size by far more than a factor of two (7x33x129 against 512x256x1024)."""
    return 1 << max(rows - 1, 0).bit_length()


def _like(meta: torch.Tensor) -> torch.Tensor:
    """Random values in `meta`'s layout (a view of a larger buffer where it is not dense)."""
    size = 1 + sum((s - 1) * st for s, st in zip(meta.shape, meta.stride(), strict=True))
    return torch.randn(size, dtype=meta.dtype).as_strided(meta.shape, meta.stride())


def _call_s(fn: Callable[[], object]) -> float:
    """One call's time.  It sets the calls per timed sample: a single short call's
    time swings with whatever ran just before it (on 2 cores +-30% for a 300 us
    GEMM), a millisecond's worth less."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _measure(a_meta: torch.Tensor, b_meta: torch.Tensor, packable: bool = False) -> str:
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily(), torch.no_grad():  # the compiler runs under the tracer's fake mode
        a, b = _like(a_meta), _like(b_meta)
        out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        candidates: dict[str, Callable[[], object]] = {
            BLAS: lambda: torch.mm(a, b, out=out),
            ONEDNN: lambda: onednn_mm(a, b),
        }
        if packable:
            site = packed_weights.PackedLinear()
            candidates[PACKED] = lambda: site(a, b, b)
        for fn in candidates.values():  # oneDNN creates its primitive; pages are touched
            fn()
        call_s = _call_s(candidates[BLAS])
        long_call = call_s > LONG_CALL_S
        for _ in range(0 if long_call else WARMUP - 1):
            for fn in candidates.values():
                fn()
        batch = max(1, min(BATCH_MAX, round(1e-3 / max(call_s, 1e-7))))
        calls_per_round = 2 * (1 if long_call else 1 + batch)
        rounds = max(1, min(ROUNDS, int(BUDGET_S / (calls_per_round * call_s))))
        ratios: dict[str, list[float]] = {name: [] for name in candidates if name != BLAS}
        best = dict.fromkeys(candidates, math.inf)
        for round_ in range(rounds):
            times = {}
            for name in candidates if round_ % 2 else reversed(candidates):
                if not long_call:
                    candidates[name]()  # untimed: back in this library's steady state
                start = time.perf_counter()
                for _ in range(batch):
                    candidates[name]()
                times[name] = (time.perf_counter() - start) / batch
                best[name] = min(best[name], times[name])
            for name in ratios:
                ratios[name].append(times[name] / times[BLAS])
    medians = {name: statistics.median(r) for name, r in ratios.items()}
    fastest = min(medians, key=medians.__getitem__)
    choice = fastest if medians[fastest] < MARGIN else BLAS
    log.info(
        "mlirc: %sx%s @ %sx%s runs on %s (time / torch.mm's: %s; best us: %s)",
        *a_meta.shape,
        *b_meta.shape,
        choice,
        {n: round(m, 2) for n, m in medians.items()},
        {n: round(t * 1e6, 1) for n, t in best.items()},
    )
    return choice

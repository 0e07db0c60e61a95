"""Which memory layout a CPU convolution runs in, chosen per shape by timing both.

oneDNN's convolutions are much faster on channels-last (NHWC) data for some shapes
(a 3-channel stem: 1.8 ms NCHW against 0.3 ms NHWC on 2 cores) and slower for
others; converting the input to NHWC and the result back costs a copy of each.
Inductor keeps whole CNNs in NHWC; mlirc's kernels read NCHW, so it converts at the
call, and only where the converted call wins.  Both variants are timed once per
shape and dtype at compile time (a few calls each) and the choice is remembered for
the process.
"""

from __future__ import annotations

import functools
import logging
import time

import torch

log = logging.getLogger(__name__)

TIMED_CALLS = 5
# Below this many multiply-adds the call costs microseconds: a choice is not worth timing.
MIN_MACS = 1 << 22


def _median_s(fn, reps: int) -> float:
    fn()  # warm-up: oneDNN builds its primitive on the first call
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


@functools.cache
def prefers_channels_last(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: tuple, padding: tuple, dilation: tuple,
    groups: int, dtype: torch.dtype,
) -> bool:  # fmt: skip
    """Is conv2d with an NHWC-converted input (and the result made NCHW again) faster?"""
    n, _, h, w = x_shape
    macs = n * h * w * w_shape[0] * w_shape[1] * w_shape[2] * w_shape[3] // max(stride[0] * stride[1], 1)
    if macs < MIN_MACS or dtype not in (torch.float32, torch.float64):
        return False
    x = torch.randn(x_shape, dtype=dtype)
    weight = torch.randn(w_shape, dtype=dtype)
    args = (None, list(stride), list(padding), list(dilation), groups)
    with torch.no_grad():
        nchw = _median_s(lambda: torch.conv2d(x, weight, *args).contiguous(), TIMED_CALLS)
        nhwc = _median_s(
            lambda: torch.conv2d(x.contiguous(memory_format=torch.channels_last), weight, *args).contiguous(),
            TIMED_CALLS,
        )
    log.debug("conv2d %s x %s: NCHW %.3f ms, NHWC %.3f ms", x_shape, w_shape, nchw * 1e3, nhwc * 1e3)
    return nhwc < 0.9 * nchw  # a clear win only: timings of a few calls are noisy

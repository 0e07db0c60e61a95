"""Training-mode dropout as generated code: a counter-based generator.

`aten.native_dropout` (F.dropout in training) draws its mask from torch's generator
inside ATen, which no compiled kernel can reproduce.  Here it decomposes, as Inductor
replaces random ops, into one seed drawn from torch's generator per call (an
`aten.randint` library call, so torch.manual_seed makes runs reproducible) and a hash
of (seed, element index) -- SplitMix64's finalizer, computed with int64 ops that
compile like any other (wrapping multiplies, xor, and logical shifts as floor
divisions by powers of two, which equal arithmetic shifts, then a mask).

Documented difference: the masks are not the ones eager's generator draws (nor
Inductor's); each element is kept with probability 1 - p (to 2^-24), independently,
and kept elements are `x * 1 * (1 / (1 - p))` as in eager.  p = 0 and p = 1 are
eager's special cases (p = 1 scales by 0: a NaN stays NaN); the backward
(grad * mask * scale) follows by autograd.
"""

from __future__ import annotations

import math

import torch

aten = torch.ops.aten

GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)  # SplitMix64's increment, as an int64
MIX = (0xBF58476D1CE4E5B9 - (1 << 64), 0x94D049BB133111EB - (1 << 64))
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UNIFORM_BITS = 24  # kept with probability threshold / 2^24


def _shift_right(z: torch.Tensor, k: int) -> torch.Tensor:
    """z >> k as an unsigned 64-bit shift."""
    return torch.div(z, 1 << k, rounding_mode="floor") & ((1 << (64 - k)) - 1)


def hashed_uniform_bits(seed: torch.Tensor, shape: torch.Size, device: torch.device) -> torch.Tensor:
    """UNIFORM_BITS random bits per element (int64 in [0, 2^24)), a function of the
    seed and the element's index alone."""
    index = torch.arange(math.prod(shape), device=device, dtype=torch.int64).view(shape)
    z = seed + index * GOLDEN
    z = (z ^ _shift_right(z, 30)) * MIX[0]
    z = (z ^ _shift_right(z, 27)) * MIX[1]
    z = z ^ _shift_right(z, 31)
    return _shift_right(z, 64 - UNIFORM_BITS)


def native_dropout(x: torch.Tensor, p: float, train: bool | None) -> tuple[torch.Tensor, torch.Tensor]:
    if not train or p == 0:
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    if p == 1:  # eager's scale is then 0, not inf: NaN and inf give NaN, negatives -0
        keep = torch.zeros_like(x, dtype=torch.bool)
        return x * keep.to(x.dtype) * 0.0, keep
    seed = torch.randint(INT64_MIN, INT64_MAX, (), device=x.device, dtype=torch.int64)
    threshold = math.ceil((1 - p) * (1 << UNIFORM_BITS))
    keep = hashed_uniform_bits(seed, x.shape, x.device) < threshold
    return x * keep.to(x.dtype) * (1.0 / (1.0 - p)), keep

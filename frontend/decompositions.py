"""The decomposition table AOTAutograd applies before import: PyTorch's core ATen
decompositions, minus those that would hide ops mlirc lowers directly and keeps
recognisable for fusion (softmax, layer norm, ...)."""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch._decomp import core_aten_decompositions

aten = torch.ops.aten

KEEP = (aten.gelu.default, aten.silu.default)


@functools.cache
def decomposition_table() -> dict[Any, Any]:
    table = dict(core_aten_decompositions())
    for op in KEEP:
        table.pop(op, None)
    return table

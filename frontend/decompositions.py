"""The decomposition table AOTAutograd applies before import.

PyTorch's core ATen decompositions, minus those that would hide ops mlirc lowers
directly and keeps recognisable for fusion (gelu, silu); plus PyTorch's own
decompositions of some ops mlirc has no lowering for (norms, repeat, adaptive
pooling, group norm, ...): a decomposed op compiles if its pieces do.

EXTRA is a list, not "everything in torch._decomp": some decompositions produce
prims ops (whose eager fallback is not always eager's answer, e.g. prims.signbit
of +0.0) or in-place/alias nodes AOTAutograd rejects.  Each entry was checked with
the OpInfo sweep (tests/opinfo_sweep.py).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch._decomp import core_aten_decompositions
from torch._decomp import decomposition_table as all_decompositions

from mlirc.frontend import random_ops
from mlirc.frontend.foreach_ops import foreach_decompositions
from mlirc.frontend.lowerings import LOWERINGS

aten = torch.ops.aten

# max_unpool: its decomposition scatters into the flattened tensor, where an index
# outside its plane lands in the next plane instead of raising as eager does.
# std: its decomposition rounds the variance to float32 before the root, where eager
# takes the root of its float64 variance (std of 1e30 and 0 is 7e29, not inf).
# addcmul/addcdiv: the decomposition rounds a half-precision result three times.
KEEP = (
    aten.gelu.default, aten.silu.default, aten.max_unpool2d.default, aten.max_unpool3d.default,
    aten.std.correction, aten.std_mean.correction, aten.addcmul.default, aten.addcdiv.default,
)  # fmt: skip

# Kept whole while library kernels are on (MLIRC_LIBRARY_GEMM): ATen's fused CPU flash
# attention never writes the (L x L) score matrix, which bmm + softmax + bmm must.
# It is a library kernel (frontend/library_kernels.py), as in Inductor.
LIBRARY_KEEP = (aten._scaled_dot_product_flash_attention_for_cpu.default,)

EXTRA = (
    aten.linalg_vector_norm.default,
    aten.repeat.default,
    aten._native_batch_norm_legit_functional.default,
    aten._adaptive_avg_pool2d.default,
    aten.hardtanh.default,
    aten.fmax.default,
    aten.fmin.default,
    aten.ldexp.Tensor,
    aten.narrow_copy.default,
    aten.native_group_norm.default,
    aten.elu.default,
    aten.permute_copy.default,
    aten.unbind_copy.int,
    aten.view_copy.default,
    aten.addmv.default,
    aten.leaky_relu.default,
    aten.hypot.default,
    aten.bitwise_left_shift.Tensor,
    aten.bitwise_right_shift.Tensor,
    aten.slice_scatter.default,
    aten.adaptive_max_pool2d.default,
    aten.dist.default,
    aten._batch_norm_with_update_functional.default,
    aten.grid_sampler_2d.default,
    aten.max_pool3d_with_indices.default,
)


def _take(self: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    # PyTorch's own decomposition indexes with Python's [], which reads a 0-d index
    # as an integer (`.item()`): a data-dependent value AOTAutograd cannot trace.
    return aten.index.Tensor(self.reshape(-1), [index])


# Our decompositions where PyTorch's does not trace, or has none.
OVERRIDES = {aten.take.default: _take, aten.native_dropout.default: random_ops.native_dropout}


def decomposition_table() -> dict[Any, Any]:
    from mlirc.config import config

    return _table(config.library_gemm)


@functools.cache
def _table(library_kernels: bool) -> dict[Any, Any]:
    table = dict(core_aten_decompositions())
    for op in EXTRA:
        if op not in LOWERINGS and op in all_decompositions:
            table.setdefault(op, all_decompositions[op])
    table.update(OVERRIDES)
    table.update(foreach_decompositions())
    for op in KEEP + (LIBRARY_KEEP if library_kernels else ()):
        table.pop(op, None)
    return table

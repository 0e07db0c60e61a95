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


def _reduce_loss(loss: torch.Tensor, reduction: int) -> torch.Tensor:
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


# Losses whose eager kernels compute in the input's dtype, one rounding per operation,
# where PyTorch's decompositions compute in float32: a float16 square of 300 is inf in
# eager's mse_loss, and so is the loss's mean.  Each aten op below rounds as eager's
# kernel rounds (ATen's mse_kernel, smooth_l1_kernel, soft_margin_loss); float32 and
# float64 compute the same either way.
def _mse_loss(self: torch.Tensor, target: torch.Tensor, reduction: int = 1) -> torch.Tensor:
    diff = self - target
    return _reduce_loss(diff * diff, reduction)


def _smooth_l1_loss(self: torch.Tensor, target: torch.Tensor, reduction: int = 1, beta: float = 1.0) -> torch.Tensor:
    if beta == 0.0 or (self.device.type == "cpu" and self.dtype == torch.bfloat16):
        # ATen's l1 path, and its CPU bfloat16 kernel, which computes in float32
        return all_decompositions[aten.smooth_l1_loss.default](self, target, reduction, beta)
    z = (self - target).abs()
    beta_value = torch.full((), beta, dtype=self.dtype, device=self.device)
    small = z * 0.5 * z / beta_value
    return _reduce_loss(torch.where(z < beta_value, small, z - beta_value * 0.5), reduction)


def _soft_margin_loss(self: torch.Tensor, target: torch.Tensor, reduction: int = 1) -> torch.Tensor:
    return _reduce_loss(torch.log1p(torch.exp(-self * target)), reduction)


def _logsumexp(self: torch.Tensor, dim: Any, keepdim: bool = False) -> torch.Tensor:
    """ATen's composite, op by op in the input's dtype (PyTorch's reference computes in
    float32): a float16 row of 70,000 zeros sums to inf there, so eager's answer is inf."""
    if self.numel() == 0 or not self.is_floating_point():
        return all_decompositions[aten.logsumexp.default](self, dim, keepdim)
    dims = [dim] if isinstance(dim, int) else list(dim)
    maxes = torch.amax(self, dims, keepdim=True)
    maxes = torch.masked_fill(maxes, maxes.abs() == float("inf"), 0)
    squeezed = maxes if keepdim else maxes.squeeze(dims)
    return torch.sum(torch.exp(self - maxes), dims, keepdim).log().add(squeezed)


def _assert_within_unit(x: torch.Tensor, message: str) -> None:
    """Eager's value check of a probability tensor: every element in [0, 1] (NaN is
    not), as a torch assert that mlirc compiles into a run-time check."""
    torch._assert_async(((x >= 0) & (x <= 1)).all(), message)


def _binary_cross_entropy(
    self: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None, reduction: int = 1
) -> torch.Tensor:
    _assert_within_unit(self, "all elements of input should be between 0 and 1")
    _assert_within_unit(target, "all elements of target should be between 0 and 1")
    return all_decompositions[aten.binary_cross_entropy.default](self, target, weight, reduction)


def _bernoulli(self: torch.Tensor, *, generator: Any = None) -> torch.Tensor:
    _assert_within_unit(self, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return all_decompositions[aten.bernoulli.default](self, generator=generator)


def _index_add(
    self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: Any = 1
) -> torch.Tensor:
    """ATen's shape checks first (PyTorch's decomposition broadcasts a source of the
    wrong shape): raised while tracing, they make the graph run eagerly, which raises."""
    count = index.numel()
    if source.dim() and count != source.shape[dim]:
        raise RuntimeError(
            f"index_add_(): Number of indices ({count}) should be equal to source.size(dim) ({source.shape[dim]})"
        )
    self_sizes, source_sizes = list(self.shape), list(source.shape)
    if self.dim() and source.dim():
        del self_sizes[dim % self.dim()], source_sizes[dim % source.dim()]
    if self_sizes != source_sizes:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. "
            f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}"
        )
    return all_decompositions[aten.index_add.default](self, dim, index, source, alpha=alpha)


# Our decompositions where PyTorch's does not trace, has none, or computes where eager
# does not.
OVERRIDES = {
    aten.take.default: _take,
    aten.native_dropout.default: random_ops.native_dropout,
    aten.mse_loss.default: _mse_loss,
    aten.smooth_l1_loss.default: _smooth_l1_loss,
    aten.soft_margin_loss.default: _soft_margin_loss,
    aten.logsumexp.default: _logsumexp,
    aten.binary_cross_entropy.default: _binary_cross_entropy,
    aten.bernoulli.default: _bernoulli,
    aten.index_add.default: _index_add,
}


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

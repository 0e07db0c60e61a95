"""Lowerings of pairwise distances: cdist and pdist.

p-norms of row differences, reduced over the feature dim with the differences fused
in.  For p = 2 over many rows ATen switches to the matmul form
sqrt(max(|a|^2 - 2 a.b + |b|^2, 0)), whose rounding differs: cdist follows the
same switch, so its answers are eager's.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.frontend.lowerings.api import LoweringContext, out_dtype, out_shape, register

aten = torch.ops.aten
MM_ROWS = 25  # ATen's use_mm_for_euclid_dist_if_necessary: more rows than this on either side


def _norm(lctx: LoweringContext, diff: ir.Value, p: float, dtype: torch.dtype) -> ir.Value:
    """The p-norm over the last dim of `diff`, as torch defines each p."""
    last = [len(shapes.shape_of(diff)) - 1]
    size = b.elementwise("abs", diff)
    if p == 0:
        nonzero = b.convert(b.elementwise("ne", diff, lctx.typed(0.0, dtype)), shapes.element_type(dtype))
        return b.reduce("reduce_sum", nonzero, last, False)
    if p == 1:
        return b.reduce("reduce_sum", size, last, False)
    if p == 2:
        return b.elementwise("sqrt", b.reduce("reduce_sum", b.elementwise("mul", diff, diff), last, False))
    if math.isinf(p):
        return b.reduce("reduce_max", size, last, False)
    powered = b.reduce("reduce_sum", b.elementwise("pow", size, lctx.typed(p, dtype)), last, False)
    return b.elementwise("pow", powered, lctx.typed(1.0 / p, dtype))


def _float_input(node: fx.Node) -> str | None:
    return None if out_dtype(node).is_floating_point else f"{out_dtype(node)} distances"


@register(aten._cdist_forward.default, check=_float_input)
def _cdist(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    x1, x2 = lctx.typed(node.args[0], dtype), lctx.typed(node.args[1], dtype)
    p, mode = float(node.args[2]), node.args[3]
    if math.prod(out_shape(node)) == 0:  # nothing to compute (and no 0-batch GEMM to build)
        return b.broadcast(lctx.typed(0.0, dtype), lctx.shape(node))
    s1, s2 = list(shapes.shape_of(x1)), list(shapes.shape_of(x2))
    rows, cols = s1[-2], s2[-2]
    if p == 2 and (mode == 1 or (mode in (None, 0) and (rows > MM_ROWS or cols > MM_ROWS))):
        return _cdist_matmul(lctx, x1, x2, dtype, out_shape(node))
    diff = b.elementwise("sub", b.reshape(x1, [*s1[:-1], 1, s1[-1]]), b.reshape(x2, [*s2[:-2], 1, cols, s2[-1]]))
    return b.reshape(_norm(lctx, diff, p, dtype), lctx.shape(node))


def _cdist_matmul(
    lctx: LoweringContext, x1: ir.Value, x2: ir.Value, dtype: torch.dtype, shape: tuple[int, ...]
) -> ir.Value:
    """sqrt(max(|a|^2 - 2 a.b + |b|^2, 0)) with the cross term from a (batched) GEMM."""
    s1, s2 = list(shapes.shape_of(x1)), list(shapes.shape_of(x2))
    square1 = b.reduce("reduce_sum", b.elementwise("mul", x1, x1), [len(s1) - 1], True)
    square2 = b.reduce("reduce_sum", b.elementwise("mul", x2, x2), [len(s2) - 1], True)
    batch = math.prod(s1[:-2])
    a = b.reshape(x1, [batch, s1[-2], s1[-1]])
    bt = b.permute(b.reshape(x2, [batch, s2[-2], s2[-1]]), [0, 2, 1])
    cross = b.create("batch_matmul", [a, bt], shapes.torch_tensor_type((batch, s1[-2], s2[-2]), dtype))
    cross = b.reshape(cross, list(shape))
    square2 = b.reshape(square2, [*s2[:-2], 1, s2[-2]])
    total = b.elementwise(
        "add", b.elementwise("sub", square1, b.elementwise("mul", cross, lctx.typed(2.0, dtype))), square2
    )
    return b.elementwise("sqrt", b.elementwise("maximum", total, lctx.typed(0.0, dtype)))


@register(aten._pdist_forward.default, check=_float_input)
def _pdist(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Distances of rows i < j, in row-major pair order."""
    dtype = out_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    rows, features = shapes.shape_of(x)
    first, second = np.triu_indices(rows, k=1)
    i64 = ir.IntegerType.get_signless(64)

    def pick(positions: np.ndarray) -> ir.Value:
        attr = ir.DenseElementsAttr.get(positions.astype(np.int64), type=shapes.tensor_type((len(positions),), i64))
        index = b.constant(attr)
        return b.create(
            "index_select", [x, index], shapes.tensor_type((len(positions), features), shapes.elem_of(x)), dim=0
        )

    if len(first) == 0:
        return b.broadcast(lctx.typed(0.0, dtype), [0])
    p = float(node.args[1]) if len(node.args) > 1 else 2.0
    return _norm(lctx, b.elementwise("sub", pick(first), pick(second)), p, dtype)

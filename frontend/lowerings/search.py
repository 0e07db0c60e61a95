"""Lowerings of searches in sorted data (searchsorted, bucketize) and of histc.

A binary search per value, unrolled: ceil(log2(n + 1)) rounds of elementwise
compares and one gather each, so it vectorizes on the CPU and tiles on the GPU.
The compare is ATen's own (`!(mid >= value)` goes right for the lower bound), which
puts NaN values, and NaNs at the end of the sequence, where eager puts them.
"""

from __future__ import annotations

import math

import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.dialects.runtime_checks import RuntimeCheck
from mlirc.frontend.lowerings.api import (
    DENSE_SCATTER_LIMIT,
    LoweringContext,
    arg,
    node_meta,
    out_dtype,
    register,
    result_dtype,
)
from mlirc.frontend.lowerings.checks import check_index

aten = torch.ops.aten


def _binary_search(
    lctx: LoweringContext, sequence: ir.Value, values: ir.Value, right: bool, result: torch.dtype
) -> ir.Value:
    """For each value, how many entries of its row of `sequence` precede it."""
    n = shapes.shape_of(sequence)[-1]
    value_shape = list(shapes.shape_of(values))
    i64 = torch.int64

    def const(v: int) -> ir.Value:
        return b.broadcast(lctx.typed(v, i64), value_shape)

    start, end = const(0), const(n)
    for _ in range(math.ceil(math.log2(n + 1)) if n else 0):
        active = b.elementwise("lt", start, end)
        mid = b.elementwise("floor_div", b.elementwise("add", start, end), const(2))
        at = b.elementwise("minimum", mid, const(n - 1))  # finished lanes may sit at n
        if len(shapes.shape_of(sequence)) == 1:
            flat = b.reshape(at, [math.prod(value_shape)])
            element = shapes.elem_of(sequence)
            picked = b.create(
                "index_select", [sequence, flat], shapes.tensor_type((math.prod(value_shape),), element), dim=0
            )
            mid_value = b.reshape(picked, value_shape)
        else:
            rank = len(value_shape)
            gathered = shapes.tensor_type(tuple(value_shape), shapes.elem_of(sequence))
            mid_value = b.create("gather", [sequence, at], gathered, dim=rank - 1)
        stays = b.elementwise("gt" if right else "ge", mid_value, values)
        go_right = b.elementwise("logical_and", active, b.elementwise("logical_not", stays))
        go_left = b.elementwise("logical_and", active, stays)
        start = b.elementwise("select", go_right, b.elementwise("add", mid, const(1)), start)
        end = b.elementwise("select", go_left, mid, end)
    return b.convert(start, shapes.element_type(result))


def _search_check(node: fx.Node) -> str | None:
    sequence = node_meta(node.args[0])
    if not isinstance(node.args[1], fx.Node):  # a Python scalar
        return "bool sequence" if sequence.dtype == torch.bool else None
    values = node_meta(node.args[1])
    if sequence.dim() > 1 and tuple(sequence.shape[:-1]) != tuple(values.shape[:-1]):
        return "sequence and values with different leading dims"
    if sequence.dtype == torch.bool or values.dtype == torch.bool:
        return "bool sequence"
    return None


@register(aten.searchsorted.Tensor, aten.searchsorted.Scalar, check=_search_check)
def _searchsorted(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    common = result_dtype(node.args[0], node.args[1])
    sequence = lctx.typed(node.args[0], common)
    sorter = node.kwargs.get("sorter")
    if sorter is not None:  # the sequence in sorted order
        dim = len(shapes.shape_of(sequence)) - 1
        order = lctx.typed(sorter, torch.int64)
        check_index(lctx, node, order, shapes.shape_of(sequence), dim)
        sequence = b.create("gather", [sequence, order], sequence.type, dim=dim)
    right = bool(node.kwargs.get("right", False)) or node.kwargs.get("side") == "right"
    values = lctx.typed(node.args[1], common)
    return b.reshape(_binary_search(lctx, sequence, values, right, out_dtype(node)), lctx.shape(node))


def _bucketize_check(node: fx.Node) -> str | None:
    if torch.bool in (node_meta(node.args[0]).dtype, node_meta(node.args[1]).dtype):
        return "bool boundaries"
    return None


@register(aten.bucketize.Tensor, check=_bucketize_check)
def _bucketize(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """searchsorted of every input value in the 1-D boundaries."""
    common = result_dtype(node.args[0], node.args[1])
    values = lctx.typed(node.args[0], common)
    boundaries = lctx.typed(node.args[1], common)
    right = bool(arg(node, 3, "right", False))
    return b.reshape(_binary_search(lctx, boundaries, values, right, out_dtype(node)), lctx.shape(node))


def _histc_check(node: fx.Node) -> str | None:
    x = node_meta(node.args[0])
    if not x.dtype.is_floating_point:
        return f"{x.dtype} histc"
    bins = arg(node, 1, "bins", 100)
    if x.numel() * bins > DENSE_SCATTER_LIMIT:
        return f"a histogram of {x.numel()} values in {bins} bins (dense limit {DENSE_SCATTER_LIMIT})"
    lo, hi = float(arg(node, 2, "min", 0)), float(arg(node, 3, "max", 0))
    if lo != hi and not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        return f"a histogram over [{lo}, {hi}] (eager raises)"
    return None


def _is_finite(lctx: LoweringContext, x: ir.Value, dtype: torch.dtype) -> ir.Value:
    return b.elementwise("lt", b.elementwise("abs", x), lctx.typed(math.inf, dtype))  # false for NaN


@register(aten.histc.default, check=_histc_check)
def _histc(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Counts per bin, as ATen bins them: (x - lo) * bins / (hi - lo), truncated, the
    top edge in the last bin, values outside [lo, hi] dropped.  lo == hi == 0 takes
    the data's range (widened by 1 each side if it is a single value)."""
    dtype = out_dtype(node)
    bins = arg(node, 1, "bins", 100)
    lo, hi = float(arg(node, 2, "min", 0)), float(arg(node, 3, "max", 0))
    x = b.reshape(lctx.typed(node.args[0], dtype), [node_meta(node.args[0]).numel()])
    if lo == hi:
        if node_meta(node.args[0]).numel():
            low, high = b.reduce("reduce_min", x, [0], False), b.reduce("reduce_max", x, [0], False)
        else:
            low, high = lctx.typed(lo, dtype), lctx.typed(hi, dtype)
        same = b.elementwise("eq", low, high)
        low = b.elementwise("select", same, b.elementwise("sub", low, lctx.typed(1.0, dtype)), low)
        high = b.elementwise("select", same, b.elementwise("add", high, lctx.typed(1.0, dtype)), high)
        # the data's range holds an inf or NaN: eager's error
        finite = b.elementwise("logical_and", _is_finite(lctx, low, dtype), _is_finite(lctx, high, dtype))
        lctx.require(finite, RuntimeCheck("RuntimeError", "torch.histc: range of [min, max] is not finite"))
    else:
        low, high = lctx.typed(lo, dtype), lctx.typed(hi, dtype)
    scaled = b.elementwise("mul", b.elementwise("sub", x, low), lctx.typed(float(bins), dtype))
    position = b.convert(
        b.elementwise("div", scaled, b.elementwise("sub", high, low)), shapes.element_type(torch.int64)
    )
    position = b.elementwise("select", b.elementwise("eq", x, high), lctx.typed(bins - 1, torch.int64), position)
    inside = b.elementwise("logical_and", b.elementwise("ge", x, low), b.elementwise("le", x, high))
    position = b.elementwise("select", inside, position, lctx.typed(-1, torch.int64))
    grid = shapes.torch_tensor_type((bins, node_meta(node.args[0]).numel()), torch.int64)
    match = b.elementwise(
        "eq", b.reshape(position, [1, node_meta(node.args[0]).numel()]), b.create("iota", [], grid, dim=0)
    )
    return b.reduce("reduce_sum", b.convert(match, shapes.element_type(dtype)), [1], False)

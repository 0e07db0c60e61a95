"""Lowerings of scans: cumsum, cumprod, logcumsumexp, cummax, cummin.

Each output position i reduces the inputs j <= i of its row: a reduction over a
[.., i, j] triangle (inputs fused in, nothing materialized), in input order per
position, so it vectorizes and needs no carried loop.  Its cost is quadratic in
the scanned length, so only short scans are compiled (DENSE_SCATTER_LIMIT, shared
with the scatters); longer ones fall back.
"""

from __future__ import annotations

import math

import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.frontend.lowerings.api import (
    DENSE_SCATTER_LIMIT,
    LoweringContext,
    narrow_to_out,
    node_meta,
    opmath_dtype,
    out_dtype,
    register,
)

aten = torch.ops.aten


def _scan_check(node: fx.Node) -> str | None:
    x = node_meta(node.args[0])
    length = x.shape[node.args[1] % x.dim()] if x.dim() else 1
    if x.numel() * length > DENSE_SCATTER_LIMIT:
        return f"a scan of length {length} over {x.numel()} elements (dense limit {DENSE_SCATTER_LIMIT})"
    return None


class _Triangle:
    """x with its scanned dim last, and the [.., i, j] view where j <= i."""

    def __init__(self, lctx: LoweringContext, x: ir.Value, dim: int) -> None:
        shape = list(shapes.shape_of(x))
        if not shape:
            x, shape, dim = b.reshape(x, [1]), [1], 0
        self.rank, self.dim = len(shape), dim % len(shape)
        self.order = [d for d in range(self.rank) if d != self.dim] + [self.dim]
        self.rows = b.permute(x, self.order) if self.dim != self.rank - 1 else x
        self.row_shape = list(shapes.shape_of(self.rows))
        n = self.row_shape[-1]
        grid = shapes.torch_tensor_type((n, n), torch.int64)
        self.before = b.elementwise(
            "le", b.create("iota", [], grid, dim=1), b.create("iota", [], grid, dim=0)
        )  # [i, j]: j <= i
        self.spread = b.reshape(self.rows, self.row_shape[:-1] + [1, n])  # x_j along the last axis
        self.positions = b.create("iota", [], grid, dim=1)
        self.lctx = lctx

    def fold(self, name: str, values: ir.Value, identity: float | int, dtype: torch.dtype) -> ir.Value:
        """reduce `name` over j <= i of `values` (shaped like `spread`)."""
        kept = b.elementwise("select", self.before, values, self.lctx.typed(identity, dtype))
        return b.reduce(name, kept, [len(self.row_shape)], False)

    def restore(self, value: ir.Value, shape: tuple[int, ...]) -> ir.Value:
        if self.dim != self.rank - 1:
            value = b.permute(value, [self.order.index(d) for d in range(self.rank)])
        return b.reshape(value, list(shape))


def _cumulative(name: str, identity: float | int):
    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        dtype = opmath_dtype(node)
        x = lctx.typed(node.args[0], dtype)
        tri = _Triangle(lctx, x, node.args[1])
        return narrow_to_out(
            tri.restore(tri.fold(name, tri.spread, identity, dtype), tuple(node_meta(node).shape)), node
        )

    return lower


register(aten.cumsum.default, check=_scan_check)(_cumulative("reduce_sum", 0))
register(aten.cumprod.default, check=_scan_check)(_cumulative("reduce_prod", 1))


def _float_scan_check(node: fx.Node) -> str | None:
    return _scan_check(node) if out_dtype(node).is_floating_point else "an integer logcumsumexp"


@register(aten.logcumsumexp.default, check=_float_scan_check)
def _logcumsumexp(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """log sum exp over j <= i, shifted by the running max; all -inf stays -inf."""
    dtype = opmath_dtype(node)
    tri = _Triangle(lctx, lctx.typed(node.args[0], dtype), node.args[1])
    peak = tri.fold("reduce_max", tri.spread, -math.inf, dtype)
    finite_peak = b.elementwise("select", b.elementwise("isinf", peak), lctx.typed(0.0, dtype), peak)
    shifted = b.elementwise(
        "exp", b.elementwise("sub", tri.spread, b.reshape(finite_peak, [*shapes.shape_of(finite_peak), 1]))
    )
    total = b.elementwise("add", b.elementwise("log", tri.fold("reduce_sum", shifted, 0.0, dtype)), finite_peak)
    return narrow_to_out(tri.restore(total, tuple(node_meta(node).shape)), node)


def _extreme_scan(largest: bool):
    def lower(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value]:
        """The running max (min) and the latest position holding it; NaN wins."""
        dtype = out_dtype(node)
        tri = _Triangle(lctx, lctx.typed(node.args[0], dtype), node.args[1])
        if dtype.is_floating_point:
            identity = -math.inf if largest else math.inf
        elif dtype == torch.bool:
            identity = not largest
        else:
            identity = torch.iinfo(dtype).min if largest else torch.iinfo(dtype).max
        values = tri.fold("reduce_max" if largest else "reduce_min", tri.spread, identity, dtype)
        current = b.reshape(values, [*shapes.shape_of(values), 1])
        same = b.elementwise("eq", tri.spread, current)
        if dtype.is_floating_point:  # NaN == NaN here: a NaN's position is the answer
            both_nan = b.elementwise("logical_and", b.elementwise("isnan", tri.spread), b.elementwise("isnan", current))
            same = b.elementwise("logical_or", same, both_nan)
        where = b.elementwise("logical_and", same, tri.before)
        latest = b.reduce(
            "reduce_max", b.elementwise("select", where, tri.positions, lctx.typed(-1, torch.int64)),
            [len(tri.row_shape)], False,
        )  # fmt: skip
        shape = tuple(node_meta(node.args[0]).shape)
        return tri.restore(values, shape), tri.restore(latest, shape)

    return lower


register(aten.cummax.default, check=_scan_check)(_extreme_scan(True))
register(aten.cummin.default, check=_scan_check)(_extreme_scan(False))

"""Lowerings of scatters along one dim: scatter, scatter_add, scatter_reduce, index_reduce.

Like index_put (lowerings_tensor.py), a scatter here is a dense masked reduction:
for each target position t along `dim`, the updates j whose index is t are found
through a [.., T, J, ..] match and folded with the reduction.  No atomics, exact
update order per target (duplicates: the last j wins, as in ATen's loop), and it
vectorizes; its cost is targets x updates, so only small scatters are compiled.
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
    all_checks,
    arg,
    dense_scatter_fits,
    fill_values_fit,
    narrow_to_out,
    node_meta,
    opmath_dtype,
    register,
    scatter_add_dtype,
)
from mlirc.frontend.lowerings.checks import check_index

aten = torch.ops.aten
REDUCES = frozenset({"sum", "prod", "mean", "amax", "amin"})


def _check(node: fx.Node, index_numel: int, reduce: str | None) -> str | None:
    x = node_meta(node.args[0])
    if reduce is not None and reduce not in REDUCES:
        return f"scatter reduce '{reduce}'"
    if reduce == "mean" and not x.dtype.is_floating_point:
        return "an integer scatter mean"
    if x.dtype == torch.bool and reduce is not None:
        return "a bool scatter reduction"
    # dense_scatter's match grid: each update against each target along `dim` (the
    # index's other dims are the grid's own, not x's)
    targets = x.shape[node.args[1] % x.dim()] if x.dim() else 1
    if not isinstance(targets * index_numel + x.numel(), int):
        return "a scatter of symbolic size (compiled per size)"
    if _adds_elements(node, reduce):
        return None
    if not dense_scatter_fits(targets * index_numel, x.numel() + index_numel):
        return f"a scatter of {index_numel} updates into {x.numel()} elements (dense limit {DENSE_SCATTER_LIMIT})"
    return None


def _adds_elements(node: fx.Node, reduce: str | None) -> bool:
    """A summing scatter past the dense match's size: one mlirc.scatter_add of single
    elements instead (a loop on the CPU, atomics on the GPU)."""
    x = node_meta(node.args[0])
    if reduce != "sum" or not scatter_add_dtype(x.dtype) or not bool(node.kwargs.get("include_self", True)):
        return False
    if node.target not in (aten.scatter_add.default, aten.scatter_reduce.two, aten.scatter.reduce):
        return False
    index_numel = node_meta(node.args[2]).numel()
    targets = x.shape[node.args[1] % x.dim()] if x.dim() else 1
    return not dense_scatter_fits(targets * index_numel, x.numel() + index_numel)


def _scatter_reduce_of(node: fx.Node) -> tuple[str | None, bool]:
    """The fold (None: the last update wins) and include_self, by ATen's names."""
    reduce = node.kwargs.get("reduce")
    if node.target == aten.scatter_reduce.two:
        return node.args[4], bool(node.kwargs.get("include_self", True))
    if node.target == aten.scatter_add.default:
        return "sum", True
    if reduce is not None:  # scatter(..., reduce='add'|'multiply'): ATen's older names
        return {"add": "sum", "multiply": "prod"}.get(reduce, reduce), True
    return None, True


def _scatter_check(node: fx.Node) -> str | None:
    return _check(node, node_meta(node.args[2]).numel(), _scatter_reduce_of(node)[0])


def _sliced(value: ir.Value, shape: list[int]) -> ir.Value:
    """The leading corner of `value` of the given shape (src may exceed the index)."""
    if list(shapes.shape_of(value)) == shape:
        return value
    rank = len(shape)
    return b.slice_(value, [0] * rank, [1] * rank, shape)


def _padded(value: ir.Value, shape: list[int], fill: ir.Value) -> ir.Value:
    """`value` grown (high side) to `shape`; positions no update reached hold `fill`."""
    have = list(shapes.shape_of(value))
    if have == shape:
        return value
    high = [want - got for want, got in zip(shape, have, strict=True)]
    return b.create(
        "pad", [value, fill], shapes.tensor_type(tuple(shape), shapes.elem_of(value)), low=[0] * len(shape), high=high
    )


def dense_scatter(
    lctx: LoweringContext, x: ir.Value, dim: int, index: ir.Value, src: ir.Value, reduce: str | None,
    include_self: bool, dtype: torch.dtype,
) -> ir.Value:  # fmt: skip
    """x with src scattered along `dim` at `index` (same shape as the used part of
    src), folded by `reduce` (None: the last update wins)."""
    x_shape, i_shape = list(shapes.shape_of(x)), list(shapes.shape_of(index))
    targets, updates = x_shape[dim], i_shape[dim]
    grid = i_shape[:dim] + [targets, updates] + i_shape[dim + 1 :]  # J sits at dim + 1
    spread = i_shape[:dim] + [1, updates] + i_shape[dim + 1 :]
    i64 = torch.int64
    match = b.elementwise(
        "eq", b.reshape(index, spread), b.create("iota", [], shapes.torch_tensor_type(grid, i64), dim=dim)
    )
    values = b.reshape(_sliced(src, i_shape), spread)
    hit = b.reduce("reduce_any", match, [dim + 1], False)
    if reduce is None:
        position = b.create("iota", [], shapes.torch_tensor_type(grid, i64), dim=dim + 1)
        latest = b.reduce("reduce_max", b.elementwise("select", match, position, lctx.typed(-1, i64)), [dim + 1], False)
        at = b.elementwise("select", hit, latest, lctx.typed(0, i64))
        picked = b.create(
            "gather",
            [_sliced(src, i_shape), at],
            shapes.tensor_type(tuple(shapes.shape_of(at)), shapes.elem_of(src)),
            dim=dim,
        )
        folded = picked
    else:
        identity = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if identity is None:  # amax / amin
            identity = -math.inf if reduce == "amax" else math.inf
            if not dtype.is_floating_point:
                info = torch.iinfo(dtype)
                identity = info.min if reduce == "amax" else info.max
        name = {
            "sum": "reduce_sum",
            "mean": "reduce_sum",
            "prod": "reduce_prod",
            "amax": "reduce_max",
            "amin": "reduce_min",
        }[reduce]
        folded = b.reduce(name, b.elementwise("select", match, values, lctx.typed(identity, dtype)), [dim + 1], False)
    hit = _padded(hit, x_shape, lctx.typed(False, torch.bool))
    folded = _padded(folded, x_shape, lctx.typed(0, dtype))
    if reduce is None or not include_self:
        if reduce == "mean":
            count = _padded(
                b.reduce("reduce_sum", b.convert(match, shapes.element_type(dtype)), [dim + 1], False),
                x_shape,
                lctx.typed(1, dtype),
            )
            folded = b.elementwise("div", folded, b.elementwise("maximum", count, lctx.typed(1, dtype)))
        return b.elementwise("select", hit, folded, x)
    combine = {"sum": "add", "prod": "mul", "amax": "maximum", "amin": "minimum", "mean": "add"}[reduce]
    result = b.elementwise(combine, x, folded)
    if reduce == "mean":
        count = b.reduce("reduce_sum", b.convert(match, shapes.element_type(dtype)), [dim + 1], False)
        count = _padded(count, x_shape, lctx.typed(0, dtype))
        result = b.elementwise("div", result, b.elementwise("add", count, lctx.typed(1, dtype)))
    return b.elementwise("select", hit, result, x)


@register(
    aten.scatter.src, aten.scatter.value, aten.scatter.reduce, aten.scatter.value_reduce,
    aten.scatter_add.default, aten.scatter_reduce.two, check=all_checks(_scatter_check, fill_values_fit),
)  # fmt: skip
def _scatter(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = opmath_dtype(node)
    x = _at_least_1d(lctx.typed(node.args[0], dtype))
    dim = node.args[1] % len(shapes.shape_of(x))
    index = _at_least_1d(lctx.typed(node.args[2], torch.int64))
    check_index(lctx, node, index, shapes.shape_of(x), dim)
    source = node.args[3]
    src = lctx.typed(source, dtype)
    if not isinstance(source, fx.Node):  # scatter.value: one value everywhere
        src = b.broadcast(src, list(shapes.shape_of(index)))
    src = _at_least_1d(src)
    reduce, include_self = _scatter_reduce_of(node)
    if _adds_elements(node, reduce):  # in opmath: eager's CPU sum rounds a half once, at the end
        return narrow_to_out(b.reshape(add_elements(x, dim, index, src), lctx.shape(node)), node)
    return narrow_to_out(
        b.reshape(dense_scatter(lctx, x, dim, index, src, reduce, include_self, dtype), lctx.shape(node)), node
    )


def add_elements(x: ir.Value, dim: int, index: ir.Value, src: ir.Value) -> ir.Value:
    """x with src[j] added at x[j with its `dim` coordinate index[j]] for each j of
    the index (src's leading corner of its shape): x as a column of elements, one
    update per index element, in the index's row-major order -- per target, the
    order of eager's CPU loop (ascending along `dim`).  `index` is checked (a
    negative entry, valid for scatter_reduce, wraps here)."""
    x_shape, i_shape = list(shapes.shape_of(x)), list(shapes.shape_of(index))
    i64 = torch.int64
    strides = [math.prod(x_shape[d + 1 :]) for d in range(len(x_shape))]
    grid = shapes.torch_tensor_type(i_shape, i64)
    size = b.scalar_constant(x_shape[dim], shapes.element_type(i64))
    index = b.convert(index, shapes.element_type(i64))
    wrapped = b.elementwise(
        "select", b.elementwise("lt", index, b.scalar_constant(0, shapes.element_type(i64))),
        b.elementwise("add", index, size), index,
    )  # fmt: skip
    linear = None
    for d, stride in enumerate(strides):
        coordinate = wrapped if d == dim else b.create("iota", [], grid, dim=d)
        term = b.elementwise("mul", coordinate, b.scalar_constant(stride, shapes.element_type(i64)))
        linear = term if linear is None else b.elementwise("add", linear, term)
    updates, elements = math.prod(i_shape), math.prod(x_shape)
    if updates == 0:
        return x
    column = b.reshape(x, [elements, 1])
    values = b.reshape(_sliced(src, i_shape), [updates, 1])
    summed = b.create("scatter_add", [column, b.reshape(linear, [updates]), values], column.type)
    return b.reshape(summed, x_shape)


def _at_least_1d(value: ir.Value) -> ir.Value:
    """0-d tensors scatter as [1]-shaped ones (ATen treats them so)."""
    return b.reshape(value, [1]) if not shapes.shape_of(value) else value


def _index_reduce_check(node: fx.Node) -> str | None:
    return _check(node, node_meta(node.args[3]).numel(), node.args[4])


@register(aten.index_reduce.default, check=_index_reduce_check)
def _index_reduce(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """A scatter along `dim` whose index is the same for every other coordinate."""
    dtype = opmath_dtype(node)
    x = _at_least_1d(lctx.typed(node.args[0], dtype))
    rank = len(shapes.shape_of(x))
    dim = node.args[1] % rank
    source = _at_least_1d(lctx.typed(node.args[3], dtype))
    source_shape = list(shapes.shape_of(source))
    along = [1] * rank
    along[dim] = source_shape[dim]
    index = _at_least_1d(lctx.typed(node.args[2], torch.int64))
    check_index(lctx, node, index, shapes.shape_of(x), dim)
    index = b.broadcast(b.reshape(index, along), source_shape)
    include_self = bool(arg(node, 5, "include_self", True))
    scattered = dense_scatter(lctx, x, dim, index, source, node.args[4], include_self, dtype)
    return narrow_to_out(b.reshape(scattered, lctx.shape(node)), node)


def _unpool_geometry(node: fx.Node) -> tuple[list[int], int, int]:
    """(leading dims, input elements per plane, output elements per plane)."""
    shape = list(node_meta(node.args[0]).shape)
    spatial = len(node.args[2])
    return shape[:-spatial], math.prod(shape[-spatial:]), math.prod(node.args[2])


def _max_unpool_check(node: fx.Node) -> str | None:
    lead, hw_in, hw_out = _unpool_geometry(node)
    if math.prod(lead) * hw_in * hw_out > DENSE_SCATTER_LIMIT:
        return f"an unpooling of {hw_in} into {hw_out} positions per plane (dense limit {DENSE_SCATTER_LIMIT})"
    return None


@register(aten.max_unpool2d.default, aten.max_unpool3d.default, check=_max_unpool_check)
def _max_unpool(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Each plane's values scattered to their indices in the plane.  Not PyTorch's
    decomposition, which offsets the indices by plane and scatters into the whole
    tensor: an index outside its plane would land in the next one, where eager
    raises "Found an invalid max index"."""
    dtype = opmath_dtype(node)
    lead, hw_in, hw_out = _unpool_geometry(node)
    planes = math.prod(lead)
    values = b.reshape(lctx.typed(node.args[0], dtype), [planes, hw_in])
    index = b.reshape(lctx.typed(node.args[1], torch.int64), [planes, hw_in])
    check_index(lctx, node, index, [planes, hw_out], 1)
    zeros = b.broadcast(lctx.typed(0, dtype), [planes, hw_out])
    unpooled = dense_scatter(lctx, zeros, 1, index, values, None, True, dtype)
    return narrow_to_out(b.reshape(unpooled, lctx.shape(node)), node)

"""Lowerings of data-movement and tensor-creation ATen ops (views are values here)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import dims, shapes
from mlirc.errors import UnsupportedOpError
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
    out_dtype,
    out_shape,
    register,
    scatter_add_dtype,
)
from mlirc.frontend.lowerings.checks import check_index

aten = torch.ops.aten


@register(
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.flatten.using_ints,
)  # fmt: skip
def _reshape(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    return b.reshape(lctx.value(node.args[0]), lctx.shape(node))


@register(
    aten.clone.default, aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default,
    aten._conj.default, aten._conj_physical.default, aten.conj_physical.default, aten.resolve_conj.default,
    aten.resolve_neg.default,
    # a decomposition's copy into eager's strides (lerp's of a transposed input):
    # strides are the results' layouts' business (importer), values stay
    torch.ops.prims.copy_strided.default,
)  # fmt: skip
def _identity(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    return lctx.value(node.args[0])


@register(aten.expand.default)
def _expand(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    before, after = node_meta(node.args[0]).shape, node_meta(node).shape
    if len(before) == len(after) and all(_same_size(m, n) for m, n in zip(before, after, strict=True)):
        # An expand to its own symbolic shape (a matmul's operands, decomposed for bmm):
        # no broadcast for later passes to wait on.
        return lctx.value(node.args[0])
    return b.broadcast(lctx.value(node.args[0]), lctx.shape(node))


@register(aten.permute.default)
def _permute(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    rank = len(shapes.shape_of(x))
    return b.permute(x, [d % rank for d in node.args[1]])


@register(aten.t.default, aten.transpose.int, aten.numpy_T.default)
def _transpose(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    rank = len(shapes.shape_of(x))
    perm = list(range(rank))
    if rank >= 2:
        d0, d1 = (node.args[1] % rank, node.args[2] % rank) if node.target == aten.transpose.int else (0, 1)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.permute(x, perm)


def _slice(x: ir.Value, dim: int, start: int, step: int, result_shape: b.MixedShape) -> ir.Value:
    """`x` sliced along `dim`; its other dims are x's own (read off x where symbolic,
    so that later passes see the slice keep them whole)."""
    rank = len(result_shape)
    result_shape = [size if i == dim else dims.dim_of(x, i) for i, size in enumerate(result_shape)]
    starts = [0] * rank
    steps = [1] * rank
    starts[dim], steps[dim] = start, step
    return b.slice_(x, starts, steps, result_shape)


@register(aten.slice.Tensor)
def _slice_tensor(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    in_shape = shapes.shape_of(x)
    dim = arg(node, 1, "dim", 0) % len(in_shape)
    start = arg(node, 2, "start", None) or 0
    step = arg(node, 4, "step", 1)
    size = in_shape[dim]
    if size is not None:
        start = min(max(start + size if start < 0 else start, 0), size)
        return _slice(x, dim, start, step, lctx.shape(node))
    if not isinstance(start, int) or start < 0:
        raise UnsupportedOpError("aten.slice", "a symbolic dim sliced from its end or at a symbolic offset")
    shape = lctx.shape(node)
    if start == 0 and step == 1 and _same_size(node_meta(node).shape[dim], node_meta(node.args[0]).shape[dim]):
        shape[dim] = dims.dim_of(x, dim)  # the whole dim (x[:, :1] slices dim 0 to INT_MAX): visibly so
    return _slice(x, dim, start, step, shape)


def _same_size(a: int | torch.SymInt, b: int | torch.SymInt) -> bool:
    """Are two sizes the same expression?  Compared without a guard (SymInt == adds one)."""
    expr = lambda size: size.node.expr if isinstance(size, torch.SymInt) else size  # noqa: E731
    return expr(a) == expr(b)


@register(aten.select.int)
def _select(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    in_shape = shapes.shape_of(x)
    dim = node.args[1] % len(in_shape)
    index = node.args[2] % in_shape[dim]
    sliced_shape = [1 if i == dim else d for i, d in enumerate(lctx.sizes.mixed(node_meta(node.args[0]).shape))]
    return b.reshape(_slice(x, dim, index, 1, sliced_shape), lctx.shape(node))


@register(aten.cat.default)
def _cat(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    rank = len(out_shape(node))
    # torch lets 1-D empty tensors join any cat; they contribute nothing.
    parts = [lctx.typed(t, dtype) for t in node.args[0] if tuple(node_meta(t).shape) != (0,) or rank == 1]
    dim = arg(node, 1, "dim", 0) % rank
    result = parts[0]
    for part in parts[1:]:
        shape = list(shapes.shape_of(result))
        joined = shapes.shape_of(part)[dim]
        shape[dim] = None if None in (shape[dim], joined) else shape[dim] + joined
        result = b.create("concat", [result, part], shapes.torch_tensor_type(shape, dtype), dim=dim)
    return result


def _pad_check(node: fx.Node) -> str | None:
    return "negative padding" if any(p < 0 for p in node.args[1]) else None


@register(aten.constant_pad_nd.default, check=all_checks(_pad_check, fill_values_fit))
def _constant_pad(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    rank = len(shapes.shape_of(x))
    pad = list(node.args[1])
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if not any(low) and not any(high):  # a copy, as clone is (TF-style "same" padding of a 1x1 window)
        return x
    value = lctx.typed(arg(node, 2, "value", 0), out_dtype(node))
    return b.create("pad", [x, value], shapes.torch_tensor_type(out_shape(node), out_dtype(node)), low=low, high=high)


def _index_operand(lctx: LoweringContext, index: fx.Node) -> ir.Value:
    return lctx.typed(index, torch.int64)


@register(aten.index_select.default)
def _index_select(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    if not shapes.shape_of(x):  # a 0-d tensor selects as a [1]-shaped one
        x = b.reshape(x, [1])
    dim = node.args[1] % len(shapes.shape_of(x))
    index = b.reshape(_index_operand(lctx, node.args[2]), [node_meta(node.args[2]).numel()])
    check_index(lctx, node, index, shapes.shape_of(x), dim)
    return b.reshape(_gather_along(x, dim, index), lctx.shape(node))


def _index_check(node: fx.Node) -> str | None:
    for index in node.args[1]:
        if index is not None and node_meta(index).dtype in (torch.bool, torch.uint8):
            return "boolean mask index (data-dependent shape)"
    return None


def _linear_index(
    lctx: LoweringContext, node: fx.Node, indices: list, positions: list[int], shape: list[int]
) -> ir.Value:
    """The broadcast index tensors at `positions` (adjacent dims of `shape`) as one
    row-major index into those dims collapsed: each checked against its dim (eager's
    error), negative ones wrapped."""
    linear = None
    for d in positions:
        index = _index_operand(lctx, indices[d])
        check_index(lctx, node, index, shape, d)
        size = lctx.typed(shape[d], torch.int64)
        negative = b.elementwise("lt", index, lctx.typed(0, torch.int64))
        wrapped = b.elementwise("select", negative, b.elementwise("add", index, size), index)
        linear = wrapped if linear is None else b.elementwise("add", b.elementwise("mul", linear, size), wrapped)
    return linear


@register(aten.index.Tensor, check=_index_check)
def _index(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """x[i0, i1, ...] with integer index tensors: the indexed dims are collapsed into
    one, the broadcast indices linearized (negative ones wrapped), one index_select."""
    x = lctx.value(node.args[0])
    indices = list(node.args[1])
    positions = [d for d, index in enumerate(indices) if index is not None]
    rank = len(shapes.shape_of(x))
    if positions != list(range(positions[0], positions[-1] + 1)):
        # Separated index tensors put the broadcast dims first: move them there.
        x = b.permute(x, positions + [d for d in range(rank) if d not in positions])
        indices = [indices[d] for d in positions]
        positions = list(range(len(positions)))
    shape = list(shapes.shape_of(x))
    first, last = positions[0], positions[-1]
    linear = _linear_index(lctx, node, indices, positions, shape)
    collapsed = shape[:first] + [math.prod(shape[first : last + 1])] + shape[last + 1 :]
    flat_index = b.reshape(linear, [math.prod(shapes.shape_of(linear))])
    return b.reshape(_gather_along(b.reshape(x, collapsed), first, flat_index), lctx.shape(node))


def _as_strided_check(node: fx.Node) -> str | None:
    """Storage order is value order only for a contiguous input at offset 0."""
    x = node_meta(node.args[0])
    if x.storage_offset() != 0 or not x.is_contiguous():
        return "as_strided of a non-contiguous input (its storage layout is not in the graph)"
    size, stride = node.args[1], node.args[2]
    offset = arg(node, 3, "storage_offset", None) or 0
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True) if n > 0)
    if math.prod(size) and (last >= x.numel() or offset < 0):
        return "as_strided beyond the input's elements"
    return None


@register(aten.as_strided.default, aten.as_strided_copy.default, check=_as_strided_check)
def _as_strided(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """A gather from the flattened input at offset + sum(i_k * stride_k)."""
    x = lctx.value(node.args[0])
    size, stride = list(node.args[1]), list(node.args[2])
    offset = arg(node, 3, "storage_offset", None) or 0
    index_type = shapes.torch_tensor_type(size, torch.int64)
    linear = b.broadcast(lctx.typed(offset, torch.int64), size)
    for dim, step in enumerate(stride):
        position = b.create("iota", [], index_type, dim=dim)
        linear = b.elementwise("add", linear, b.elementwise("mul", position, lctx.typed(step, torch.int64)))
    flat = b.reshape(x, [math.prod(shapes.shape_of(x))])
    return b.reshape(_gather_along(flat, 0, b.reshape(linear, [math.prod(size)])), size)


@register(aten.unfold.default, aten.unfold_copy.default)
def _unfold(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Windows of `size` every `step` along `dim`, as a new last dim: one gather
    along `dim` at positions i * step + j, reshaped and moved into place."""
    x = lctx.value(node.args[0])
    shape = list(shapes.shape_of(x))
    rank = len(shape)
    dim, size, step = node.args[1] % max(rank, 1), node.args[2], node.args[3]
    if rank == 0:  # a 0-d tensor unfolds into [1]
        return b.reshape(x, [1])
    windows = out_shape(node)[dim]
    grid = shapes.torch_tensor_type((windows, size), torch.int64)
    starts = b.elementwise("mul", b.create("iota", [], grid, dim=0), lctx.typed(step, torch.int64))
    positions = b.elementwise("add", starts, b.create("iota", [], grid, dim=1))
    gathered = _gather_along(x, dim, b.reshape(positions, [windows * size]))
    split = shape[:dim] + [windows, size] + shape[dim + 1 :]
    order = [d for d in range(rank + 1) if d != dim + 1] + [dim + 1]
    return b.permute(b.reshape(gathered, split), order)


def _index_put_check(node: fx.Node) -> str | None:
    reason = _index_check(node)
    if reason:
        return reason
    x, values = node_meta(node.args[0]), node_meta(node.args[2])
    if values.dtype != x.dtype and (values.dtype.is_floating_point and not x.dtype.is_floating_point):
        return "values of a wider kind than the tensor"
    index_shape = torch.broadcast_shapes(*(node_meta(i).shape for i in node.args[1] if i is not None))
    if not arg(node, 3, "accumulate", False) and sum(n > 1 for n in index_shape) > 1:
        # Duplicate targets keep the update ATen writes last, in TensorIterator's
        # order; over one index dim that is the last one, over several it is not defined.
        return "index_put over a multi-dim index without accumulate (order of duplicates)"
    updates = math.prod(index_shape)
    if not isinstance(x.numel() * updates + node_meta(node.args[2]).numel(), int):
        return "an index_put of symbolic size (compiled per size)"
    if _scatters_rows(node):
        return None
    if not dense_scatter_fits(x.numel() * updates, x.numel() + node_meta(node.args[2]).numel()):
        return f"a scatter of {updates} updates into {x.numel()} elements (dense limit {DENSE_SCATTER_LIMIT})"
    return None


def _scatters_rows(node: fx.Node) -> bool:
    """Is this index_put an accumulating one past the dense match's size, which the
    backends' scatter_add (a loop, atomics) does instead?  Embedding's backward."""
    x = node_meta(node.args[0])
    if not arg(node, 3, "accumulate", False) or not scatter_add_dtype(x.dtype):
        return False
    index_shape = torch.broadcast_shapes(*(node_meta(i).shape for i in node.args[1] if i is not None))
    updates = math.prod(index_shape)
    return not dense_scatter_fits(x.numel() * updates, x.numel() + node_meta(node.args[2]).numel())


@register(aten.index_put.default, check=_index_put_check)
def _index_put(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """x[indices] = values (or += with accumulate).  The indexed dims collapse to one
    of M targets and the broadcast indices to K updates; each target takes the sum
    of its updates, or the last one written, through a [M, K] match mask."""
    dtype = opmath_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    indices = list(node.args[1]) + [None] * (len(shapes.shape_of(x)) - len(node.args[1]))
    positions = [d for d, index in enumerate(indices) if index is not None]
    rank = len(shapes.shape_of(x))
    order = list(range(rank))
    if positions != list(range(positions[0], positions[-1] + 1)):  # as x[i, :, j]: broadcast dims first
        order = positions + [d for d in range(rank) if d not in positions]
        x = b.permute(x, order)
        indices = [indices[d] for d in positions] + [None] * (rank - len(positions))
        positions = list(range(len(positions)))
    shape = list(shapes.shape_of(x))
    first, last = positions[0], positions[-1]
    linear = _linear_index(lctx, node, indices, positions, shape)
    index_shape = list(shapes.shape_of(linear))
    targets, updates = math.prod(shape[first : last + 1]), math.prod(index_shape)
    pre, post = shape[:first], shape[last + 1 :]
    if _scatters_rows(node):
        result = _scatter_rows(lctx, node, x, linear, pre, targets, post)
        if order != list(range(rank)):
            result = b.permute(result, [order.index(d) for d in range(rank)])
        return narrow_to_out(result, node)
    collapsed = b.reshape(x, pre + [targets] + post)
    # values broadcast to [pre, index_shape, post], then [pre, 1, K, post]
    values = b.broadcast(lctx.typed(node.args[2], dtype), pre + index_shape + post)
    values = b.reshape(values, pre + [1, updates] + post)
    grid = shapes.torch_tensor_type((targets, updates), torch.int64)
    match = b.elementwise("eq", b.reshape(linear, [1, updates]), b.create("iota", [], grid, dim=0))
    expand = [1] * len(pre) + [targets, updates] + [1] * len(post)
    match_full = b.reshape(match, expand)
    k_dim = len(pre) + 1
    if arg(node, 3, "accumulate", False):
        picked = b.elementwise("select", match_full, values, lctx.typed(0, dtype))
        if dtype == torch.bool:  # True + True stays True
            result = b.elementwise("logical_or", collapsed, b.reduce("reduce_any", picked, [k_dim], False))
        else:
            result = b.elementwise("add", collapsed, b.reduce("reduce_sum", picked, [k_dim], False))
    else:  # the last update wins, as in ATen's sequential loop
        k = b.create("iota", [], grid, dim=1)
        latest = b.reduce("reduce_max", b.elementwise("select", match, k, lctx.typed(-1, torch.int64)), [1], False)
        hit = b.elementwise("ge", latest, lctx.typed(0, torch.int64))
        clamped = b.elementwise("select", hit, latest, lctx.typed(0, torch.int64))
        chosen = _gather_along(b.reshape(values, pre + [updates] + post), len(pre), clamped)
        hit_full = b.reshape(hit, [1] * len(pre) + [targets] + [1] * len(post))
        result = b.elementwise("select", hit_full, chosen, collapsed)
    result = b.reshape(result, shape)
    if order != list(range(rank)):
        result = b.permute(result, [order.index(d) for d in range(rank)])
    return narrow_to_out(result, node)


def _scatter_rows(
    lctx: LoweringContext, node: fx.Node, x: ir.Value, linear: ir.Value, pre: list, targets: int, post: list
) -> ir.Value:
    """x (as [pre, targets, post]) with values added at the targets `linear` names,
    one mlirc.scatter_add over rows [targets, pre * post].  In eager's dtype per
    device: x's own on the CPU (ATen adds update by update in it, rounding each
    time), opmath on CUDA (ATen sorts the updates and sums each row's in it)."""
    x_meta = node_meta(node.args[0])
    dtype = x_meta.dtype if x_meta.device.type == "cpu" else opmath_dtype(node)
    shape = list(shapes.shape_of(x))
    index_shape = list(shapes.shape_of(linear))
    updates, rest = math.prod(index_shape), math.prod(pre) * math.prod(post)
    # the targets (or the updates) first, then the dims before them, then those after
    order = [len(pre), *range(len(pre)), *range(len(pre) + 1, len(pre) + 1 + len(post))]
    rows = b.convert(x, shapes.element_type(dtype))
    rows = b.reshape(b.permute(b.reshape(rows, pre + [targets] + post), order), [targets, rest])
    values = b.broadcast(lctx.typed(node.args[2], dtype), pre + index_shape + post)
    values = b.permute(b.reshape(values, pre + [updates] + post), order)
    values = b.reshape(values, [updates, rest])
    flat = b.reshape(linear, [updates])
    summed = b.create("scatter_add", [rows, flat, values], shapes.tensor_type((targets, rest), shapes.elem_of(rows)))
    summed = b.reshape(summed, [targets] + pre + post)
    back = [order.index(d) for d in range(len(order))]
    return b.reshape(b.permute(summed, back), shape)


@register(aten.empty.memory_format, aten.empty_like.default, aten.new_empty.default, aten.empty_permuted.default)
def _empty(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Uninitialized in eager; zeros here (as cheap, and deterministic)."""
    return b.broadcast(lctx.typed(0, out_dtype(node)), lctx.shape(node))


@register(aten.copy.default)
def _copy(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """copy(self, src): src broadcast to self's shape, in self's dtype."""
    return b.broadcast(lctx.typed(node.args[1], out_dtype(node)), lctx.shape(node))


@register(aten.split_with_sizes.default, aten.split.Tensor)
def _split(lctx: LoweringContext, node: fx.Node) -> list[ir.Value]:
    """Slices along `dim`; the outputs' shapes come from torch's metadata."""
    x = lctx.value(node.args[0])
    rank = len(shapes.shape_of(x))
    dim = arg(node, 2, "dim", 0) % max(rank, 1)
    pieces, start = [], 0
    for meta in node_meta(node):
        pieces.append(_slice(x, dim, start, 1, lctx.sizes.mixed(meta.shape)))
        start += meta.shape[dim]
    return pieces


def _index_constant(values: list[int]) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    array = ir.DenseElementsAttr.get(np.asarray(values, dtype=np.int64), type=shapes.tensor_type((len(values),), i64))
    return b.constant(array)


def _gather_along(x: ir.Value, dim: int, index: ir.Value) -> ir.Value:
    """index_select of `x` along `dim` by a 1-D i64 `index`."""
    shape = list(shapes.shape_of(x))
    shape[dim] = shapes.shape_of(index)[0]
    return b.create("index_select", [x, index], shapes.tensor_type(tuple(shape), shapes.elem_of(x)), dim=dim)


def _select_along(x: ir.Value, dim: int, positions: list[int]) -> ir.Value:
    """x gathered at fixed `positions` along `dim` (a static index_select)."""
    return _gather_along(x, dim, _index_constant(positions))


@register(aten.flip.default)
def _flip(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    shape = shapes.shape_of(x)
    for d in sorted({d % len(shape) for d in node.args[1]} if shape else ()):
        x = _select_along(x, d, list(range(shape[d] - 1, -1, -1)))
    return x


@register(aten.diagonal.default)
def _diagonal(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """The two dims moved last and collapsed; the diagonal gathered from the product."""
    x = lctx.value(node.args[0])
    rank = len(shapes.shape_of(x))
    offset = arg(node, 1, "offset", 0)
    d1, d2 = arg(node, 2, "dim1", 0) % rank, arg(node, 3, "dim2", 1) % rank
    rest = [d for d in range(rank) if d not in (d1, d2)]
    y = b.permute(x, [*rest, d1, d2])
    shape = list(shapes.shape_of(y))
    n1, n2 = shape[-2], shape[-1]
    length = out_shape(node)[-1]
    start = offset if offset >= 0 else -offset * n2
    flat = b.reshape(y, [*shape[:-2], n1 * n2])
    return b.reshape(_select_along(flat, rank - 2, [start + i * (n2 + 1) for i in range(length)]), lctx.shape(node))


@register(aten.embedding.default)
def _embedding(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    weight = lctx.value(node.args[0])
    count = node_meta(node.args[1]).numel()
    index = b.reshape(_index_operand(lctx, node.args[1]), [count])
    check_index(lctx, node, index, shapes.shape_of(weight))
    rows_shape = (count, shapes.shape_of(weight)[1])
    rows = b.create("index_select", [weight, index], shapes.tensor_type(rows_shape, shapes.elem_of(weight)), dim=0)
    return b.reshape(rows, lctx.shape(node))


@register(aten.gather.default, check=lambda n: "sparse_grad" if n.kwargs.get("sparse_grad") else None)
def _gather(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.value(node.args[0])
    dim = node.args[1] % max(len(shapes.shape_of(x)), 1)
    index = _index_operand(lctx, node.args[2])
    check_index(lctx, node, index, shapes.shape_of(x), dim)
    return b.create("gather", [x, index], shapes.torch_tensor_type(out_shape(node), out_dtype(node)), dim=dim)


@register(
    aten.full.default, aten.full_like.default, aten.scalar_tensor.default, aten.new_full.default, check=fill_values_fit
)
def _full(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    value = node.args[-1] if node.target != aten.new_full.default else node.args[2]
    if node.target == aten.scalar_tensor.default:
        value = node.args[0]
    scalar = lctx.typed(value, out_dtype(node))
    return b.broadcast(scalar, lctx.shape(node))


@register(aten.zeros_like.default, aten.ones_like.default, aten.zeros.default, aten.ones.default)
def _zeros_ones(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    value = 1 if node.target in (aten.ones_like.default, aten.ones.default) else 0
    return b.broadcast(lctx.typed(value, out_dtype(node)), lctx.shape(node))


@register(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    args = list(node.args) + [None] * 3
    if node.target == aten.arange.default:
        start, step = 0, 1
    else:
        start, step = args[0], (args[2] if node.target == aten.arange.start_step and args[2] is not None else 1)
    dtype = out_dtype(node)
    iota = b.iota(lctx.shape(node), 0, shapes.element_type(torch.int64))
    # torch computes start + i * step in the result dtype.
    values = b.convert(iota, shapes.element_type(dtype))
    if step != 1:
        values = b.elementwise("mul", values, lctx.typed(step, dtype))
    if start != 0:
        values = b.elementwise("add", values, lctx.typed(start, dtype))
    return values

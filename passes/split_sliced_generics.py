"""mlirc-split-sliced-generics: an elementwise generic read only through disjoint
slices computes each slice in a generic of its own.

Attention's `qkv(x).view(b, t, 3, h, d).permute(2, 0, 3, 1, 4)` followed by `q, k, v =
...` is one generic writing the stacked [3, b, h, t, d] tensor and three slices of it.
Fusion cannot see through the slices: the stacked tensor was written whole, q and v
were views of it and k was copied again, transposed, for `q @ k.T` -- the backward
saved that copy and the two views, so the stacked tensor (k's third included) lived to
the end of the backward.  Split per slice, k's generic fuses into the transpose (one
kernel writes k.T), and q, k.T and v are three tensors that die apart, as Inductor's
three clones do.

A slice of the split generic's input is taken through the input's indexing map; a
slice of an expand_shape moves above it where it is one run of the source's elements
per group, so the generic that makes the reshaped value (the linear layer's bias add)
is split in the next round, and the bias add fuses into each of q's, k's and v's
generics.  What a
slice of a library call's result reads stays a slice: a kernel reads it in place.

On the GPU only (the GPU backend turns it on): on the CPU the kernels compiled once for every size (MLIRC_RUNTIME_SIZES)
would expand a strided slice into a group of two `?` dims (rows as [batch, tokens]), which
MLIR's expand-strided-metadata does not take (it asserts), and a graph's symbolic and static
imports must form the same kernels.

Taken: all-parallel generics with one result written through the identity, inputs read
through projected permutations (dims, and constants from mlirc-fold-slice-reads), whose
every use is an extract_slice with static offsets, unit strides, sizes that are static or
a symbolic dim kept whole, at most MAX_SLICES of them and no two overlapping: each
element is computed at most once, as before.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, tensor

from mlirc.dialects.dims import Dim, index_constant
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import clone_body, constant_index, defining_op, erase_op, nested_ops
from mlirc.passes.base.linalg_utils import all_parallel, indexing_maps
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-split-sliced-generics"
# Each slice becomes a kernel of its own (a launch each on the GPU): an unbind of a long
# dim stays one generic.
MAX_SLICES = 8
MAX_ROUNDS = 4  # a generic, the reshape above it, the generic above that (q, k, v's bias add)

Box = tuple[tuple[int, int], ...]  # per dim: [start, stop); a symbolic dim kept whole is (0, -1)


def _slice_box(slice_op: ir.Operation) -> Box | None:
    """Where the slice lies in its source, or None unless its rank is the source's and
    its strides 1, and each offset and size is a constant, or the size a symbolic dim
    of the source kept whole (`tensor.dim` of it, as the importer writes one)."""
    if slice_op.name != "tensor.extract_slice":
        return None
    source = slice_op.operands[0]
    if ir.RankedTensorType(source.type).rank != ir.RankedTensorType(slice_op.results[0].type).rank:
        return None
    operands = iter(list(slice_op.operands)[1:])
    offsets, sizes, strides = (
        [next(operands) if v == ir.ShapedType.get_dynamic_size() else v for v in ir.DenseI64ArrayAttr(slice_op.attributes[name])]
        for name in ("static_offsets", "static_sizes", "static_strides")
    )  # fmt: skip
    box = []
    for dim, (offset, size, stride) in enumerate(zip(offsets, sizes, strides, strict=True)):
        offset, stride = (v if isinstance(v, int) else constant_index(v) for v in (offset, stride))
        if offset is None or stride != 1:
            return None
        if isinstance(size, int) or constant_index(size) is not None:
            size = size if isinstance(size, int) else constant_index(size)
            box.append((offset, offset + size))
        elif offset == 0 and _is_dim_of(size, source, dim):
            box.append((0, -1))
        else:
            return None
    return tuple(box)


def _is_dim_of(size: ir.Value, source: ir.Value, dim: int) -> bool:
    owner = defining_op(size)
    return (
        owner is not None
        and owner.name == "tensor.dim"
        and owner.operands[0] == source
        and constant_index(owner.operands[1]) == dim
    )


def _at_most_one(box: Box) -> bool:
    """A slice of one element or none: split, unit-dim folding makes it a 0-d slice
    inside a kernel, which the GPU lowering does not take (and it saves nothing)."""
    return all(stop != -1 and stop - start <= 1 for start, stop in box)


def _disjoint(boxes: list[Box]) -> bool:
    def overlap(a: Box, b: Box) -> bool:
        return all(
            sa == (0, -1) or sb == (0, -1) or (sa[0] < sb[1] and sb[0] < sa[1]) for sa, sb in zip(a, b, strict=True)
        )

    return not any(overlap(a, b) for a, b in itertools.combinations(boxes, 2))


def _splittable(generic: ir.Operation) -> list[ir.Operation] | None:
    """The slices to compute apart, or None where `generic` stays whole."""
    if generic.name != "linalg.generic" or len(generic.results) != 1 or not all_parallel(generic):
        return None
    if list(list(generic.regions[0].blocks[0].arguments)[-1].uses):
        return None  # the body reads its init: a slice's own init would not hold those values
    maps = indexing_maps(generic)
    if maps[-1] != ir.AffineMap.get_identity(maps[-1].n_dims) or not all(
        _reads_dims_or_constants(m) for m in maps[:-1]
    ):
        return None
    users = [use.owner.operation for use in generic.results[0].uses]
    slices = [op for op in users if op.name != "tensor.dim"]  # a size: read off the init instead
    if not slices or len(slices) > MAX_SLICES or len(set(slices)) != len(slices):
        return None
    boxes = [_slice_box(s) for s in slices]
    if any(b is None for b in boxes) or not _disjoint(boxes) or any(_at_most_one(b) for b in boxes):
        return None
    return slices


def _reads_dims_or_constants(amap: ir.AffineMap) -> bool:
    dims = [ir.AffineDimExpr(e).position for e in amap.results if isinstance(e, ir.AffineDimExpr)]
    constants = [e for e in amap.results if isinstance(e, ir.AffineConstantExpr)]
    return len(dims) + len(constants) == len(amap.results) and len(set(dims)) == len(dims)


def _input_slice(value: ir.Value, amap: ir.AffineMap, box: Box) -> ir.Value:
    """`value` cut to what the loops in `box` read of it through `amap`."""
    whole = le.dims_of(value)
    offsets: list[Dim] = []
    sizes: list[Dim] = []
    for dim, expr in enumerate(amap.results):
        start, stop = box[ir.AffineDimExpr(expr).position] if isinstance(expr, ir.AffineDimExpr) else (0, -1)
        # kept whole: a constant read (one element of the dim), or a symbolic dim
        offsets.append(0 if stop == -1 else start)
        sizes.append(whole[dim] if stop == -1 else stop - start)
    if all(o == 0 for o in offsets) and sizes == whole:
        return value
    return le.extract_slice(value, offsets, sizes)


def _split(generic: ir.Operation, slices: list[ir.Operation]) -> None:
    maps = indexing_maps(generic)
    n_inputs = len(generic.operands) - 1
    inputs = list(generic.operands)[:n_inputs]
    body = generic.regions[0].blocks[0]
    boxes = [_slice_box(s) for s in slices]  # before the sizes they read move to the init
    for use in list(generic.results[0].uses):
        if use.owner.operation.name == "tensor.dim":
            use.owner.operation.operands[0] = generic.operands[n_inputs]
    with ir.InsertionPoint(generic), generic.location:
        whole = le.dims_of(generic.operands[n_inputs])  # the init's sizes, before every slice
    for slice_op, box in zip(slices, boxes, strict=True):
        with ir.InsertionPoint(slice_op), slice_op.location:
            sliced = [_input_slice(v, m, box) for v, m in zip(inputs, maps, strict=False)]
            result_type = ir.RankedTensorType(slice_op.results[0].type)
            init = le.empty(
                [whole[d] if stop == -1 else stop - start for d, (start, stop) in enumerate(box)],
                result_type.element_type,
            )
            part = linalg.GenericOp(
                [result_type], sliced, [init], generic.attributes["indexing_maps"], generic.attributes["iterator_types"]
            )
            block = part.regions[0].blocks.append(*[a.type for a in body.arguments])
            args = list(block.arguments)
            yielded = clone_body(generic, block, args[:n_inputs])
            with ir.InsertionPoint(block):
                linalg.YieldOp(yielded)
        slice_op.results[0].replace_all_uses_with(part.results[0])
        erase_op(slice_op)
    erase_op(generic)


def _move_above_expand(slice_op: ir.Operation) -> bool:
    """extract_slice(expand_shape(x)) -> expand_shape(extract_slice(x)), where each group
    of the expand is kept whole or cut in its first dim only (its other dims whole and
    static): q, k and v's thirds of [rows, 3 * heads * dim] viewed as [rows, 3, heads, dim].
    Upstream's pattern (`tensor.bubble_up_extract_slice`) gives up on symbolic groups, and
    a graph's static and symbolic imports must form the same kernels."""
    expand = defining_op(slice_op.operands[0]) if slice_op.name == "tensor.extract_slice" else None
    box = _slice_box(slice_op) if expand is not None and expand.name == "tensor.expand_shape" else None
    if box is None:
        return False
    source = expand.operands[0]
    dynamic = iter(list(expand.operands)[1:])
    out_shape: list[Dim] = [
        next(dynamic) if d == ir.ShapedType.get_dynamic_size() else d
        for d in ir.DenseI64ArrayAttr(expand.attributes["static_output_shape"])
    ]
    offsets: list[Dim] = []
    sizes: list[Dim | None] = []  # None: the source's dim, whole
    new_shape: list[Dim] = []
    for group in ir.ArrayAttr(expand.attributes["reassociation"]):
        group = [ir.IntegerAttr(d).value for d in ir.ArrayAttr(group)]
        inner = out_shape[group[0] + 1 : group[-1] + 1]
        kept = [box[d] == (0, -1) or box[d] == (0, out_shape[d]) for d in group]
        if all(kept):
            offsets.append(0)
            sizes.append(None)
            new_shape += out_shape[group[0] : group[-1] + 1]
        elif all(kept[1:]) and all(isinstance(n, int) for n in inner):
            start, stop = box[group[0]]
            offsets.append(start * math.prod(inner))
            sizes.append((stop - start) * math.prod(inner))
            new_shape += [stop - start, *inner]
        else:
            return False  # an inner dim cut, or a symbolic one: the group's elements are not one run
    with ir.InsertionPoint(slice_op), slice_op.location:
        whole = le.dims_of(source)
        sliced = le.extract_slice(source, offsets, [whole[g] if n is None else n for g, n in enumerate(sizes)])
        moved = tensor.ExpandShapeOp(
            slice_op.results[0].type, sliced, expand.attributes["reassociation"],
            [d for d in new_shape if isinstance(d, ir.Value)],
            [ir.ShapedType.get_dynamic_size() if isinstance(d, ir.Value) else d for d in new_shape],
        ).result  # fmt: skip
    slice_op.results[0].replace_all_uses_with(moved)
    erase_op(slice_op)
    _drop_if_unread(expand, out_shape)
    return True


def _drop_if_unread(expand: ir.Operation, out_shape: list[Dim]) -> None:
    """Erase `expand` where only sizes are read of it (`tensor.dim`, as the importer
    sizes slices): those are its output_shape's."""
    users = [use.owner.operation for use in expand.results[0].uses]
    if any(u.name != "tensor.dim" or constant_index(u.operands[1]) is None for u in users):
        return
    for dim_op in users:
        with ir.InsertionPoint(dim_op), dim_op.location:
            size = out_shape[constant_index(dim_op.operands[1])]
            dim_op.results[0].replace_all_uses_with(size if isinstance(size, ir.Value) else index_constant(size))
        erase_op(dim_op)
    erase_op(expand)


def _split_round(module: ir.Operation) -> bool:
    for op in [op for op in nested_ops(module) if op.name == "tensor.extract_slice"]:
        _move_above_expand(op)
    split = False
    # generics only: a split erases the body ops that a walk of every op would visit next
    for op in [op for op in nested_ops(module) if op.name == "linalg.generic"]:
        slices = _splittable(op)
        if slices is not None:
            _split(op, slices)
            split = True
    return split


@dataclass(frozen=True)
class SplitSlicedGenericsOptions:
    # the GPU backend's alone (the module's docstring says why not the CPU's)
    split_sliced: bool = False


@register_pass(
    NAME, "Compute each of an elementwise generic's disjoint slices in a generic of its own", SplitSlicedGenericsOptions
)
def split_sliced_generics(module: ir.Operation, options: SplitSlicedGenericsOptions) -> None:
    if not options.split_sliced or not any(op.name == "tensor.extract_slice" for op in nested_ops(module)):
        return
    for _ in range(MAX_ROUNDS):
        if not _split_round(module):
            return

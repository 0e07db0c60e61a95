"""mlirc-fold-slice-reads: a generic that reads one element of some dims of a tensor
reads it through its indexing map, not through a slice.

`x[:, 0:1]` broadcast against `x` (a row's first element, which layer norm centres
on) is a separate tensor to every pass after this one: fusion cannot see that it
lies inside x's rows, and a CPU row loop could not compute it row by row.  Read
as `x` through `(d0, d1) -> (d0, 0)` it is one more operand of the generic that
reads x anyway.  Only slices that keep each dim whole or pick one element of it
(unit strides, static offsets) fold: their maps stay dims and constants, which
every schedule reads.  A symbolic dim is whole where its size is the source's
(`tensor.dim` of it), as the importer reads Dynamo's symbols.
"""

from __future__ import annotations

from mlir import ir

from mlirc.dialects import shapes
from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.registry import register_pass


def picked_elements(slice_op: ir.Operation) -> dict[int, int] | None:
    """The slice's source dims that it takes the first element of (dim -> 0), when
    it keeps every other dim whole with unit strides; else None."""
    if slice_op.name != "tensor.extract_slice":
        return None
    source, result = shapes.shape_of(slice_op.operands[0]), shapes.shape_of(slice_op.results[0])
    if len(source) != len(result):
        return None  # rank-reducing
    offsets, sizes, strides = (
        list(ir.DenseI64ArrayAttr(slice_op.attributes[name]))
        for name in ("static_offsets", "static_sizes", "static_strides")
    )
    whole_dims = _whole_symbolic_dims(slice_op, sizes)
    if whole_dims is None:
        return None
    picked: dict[int, int] = {}
    for dim, (offset, size, stride, whole) in enumerate(zip(offsets, sizes, strides, source, strict=True)):
        if stride != 1:
            return None
        if offset == 0 and (size == whole or dim in whole_dims):
            continue
        if size != 1 or offset != 0:
            return None
        picked[dim] = offset
    return picked or None


def _whole_symbolic_dims(slice_op: ir.Operation, sizes: list[int]) -> set[int] | None:
    """The dims whose size operand is the source's own size there (`tensor.dim` of it:
    a symbolic dim kept whole), or None where an offset, a stride or another size is
    an operand."""
    dynamic = [d for d, size in enumerate(sizes) if size == ir.ShapedType.get_dynamic_size()]
    operands = list(slice_op.operands)[1:]
    if len(operands) != len(dynamic):
        return None
    whole: set[int] = set()
    for dim, size in zip(dynamic, operands, strict=True):
        owner = size.owner
        if isinstance(owner, ir.Block) or owner.name != "tensor.dim" or owner.operands[0] != slice_op.operands[0]:
            return None
        index = owner.operands[1].owner
        if isinstance(index, ir.Block) or index.name != "arith.constant":
            return None
        if ir.IntegerAttr(index.attributes["value"]).value != dim:
            return None
        whole.add(dim)
    return whole


def _defines_every_loop(maps: list[ir.AffineMap]) -> bool:
    """Does some operand still index each loop with a plain dim (its range)?"""
    defined = {ir.AffineDimExpr(e).position for m in maps for e in m.results if isinstance(e, ir.AffineDimExpr)}
    return defined == set(range(maps[0].n_dims))


def _fold_into(generic: ir.Operation) -> bool:
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    inputs = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])[0]
    changed = False
    for index in range(inputs):
        owner = generic.operands[index].owner
        if isinstance(owner, ir.Block):
            continue
        picked = picked_elements(owner.operation)
        if picked is None:
            continue
        old = maps[index]
        exprs = [ir.AffineConstantExpr.get(picked[d]) if d in picked else e for d, e in enumerate(old.results)]
        candidate = [*maps[:index], ir.AffineMap.get(old.n_dims, old.n_symbols, exprs), *maps[index + 1 :]]
        if not _defines_every_loop(candidate):
            continue
        maps = candidate
        generic.operands[index] = owner.operation.operands[0]
        if not list(owner.operation.results[0].uses):
            erase_op(owner.operation)  # visited already: a slice comes before its readers
        changed = True
    if changed:
        generic.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    return changed


@register_pass("mlirc-fold-slice-reads", "Generics read single-element slices (x[:, 0:1]) through their indexing maps")
def fold_slice_reads(module: ir.Operation) -> None:
    for op in list(nested_ops(module)):
        if op.name == "linalg.generic":
            _fold_into(op)

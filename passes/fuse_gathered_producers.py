"""mlirc-fuse-gathered-producers: an elementwise producer read only through
`tensor.extract` (a padding, a pooling window, a concatenation: gathers) is computed
at the gathered index inside its readers instead of being written out.

Upstream elementwise fusion fuses producers through indexing maps only; a gather's
body reads its source with `tensor.extract` at computed (clamped) indices, so a batch
norm + ReLU6 before MobileNetV2's explicit padding stayed a kernel of its own, and the
padding a second pass over the same activation (two ~55 us kernels on the H100 where
Inductor runs one).  Here the producer's body is cloned at each extract: its inputs
are read at the producer's indexing maps applied to the gathered index, and the
value it yields replaces the extract.  Once no reader is left, the producer is gone.

Taken: all-parallel generics with one result, read only by extracts (directly or
through reshapes with static inner sizes: the index is linearized or delinearized),
with an output map that is a permutation, input maps of dims and constants, and small
bodies (a window reads an element up to its size times: the body is recomputed that
often) without integer division (its divide-by-zero must stay where eager would
raise it, not in a clamped padding lane).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import defining_op, erase_op, nested_ops
from mlirc.passes.base.linalg_utils import RESHAPES, all_parallel, indexing_maps
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-fuse-gathered-producers"
MAX_INLINED_OPS = 16  # a producer's body ops: recomputed per read of a window
TRAPPING_OPS = frozenset(
    {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi"}
)


def _output_dims(amap: ir.AffineMap) -> list[int] | None:
    """The loop dim of each result of a permutation map; None for any other map."""
    dims = [ir.AffineDimExpr(e).position if isinstance(e, ir.AffineDimExpr) else -1 for e in amap.results]
    return dims if sorted(dims) == list(range(amap.n_dims)) else None


def _reads_by_dims(amap: ir.AffineMap) -> bool:
    return all(isinstance(e, ir.AffineDimExpr | ir.AffineConstantExpr) for e in amap.results)


def inlinable_at_gathers(producer: ir.Operation) -> bool:
    """Can this pass compute `producer` at a gathered index (its maps and body, not
    its readers)?  mlirc-recompute-cheap-producers asks before it gives a gather its
    own copy of a producer that others read too."""
    if producer.name != "linalg.generic" or len(producer.results) != 1 or not all_parallel(producer):
        return False
    maps = indexing_maps(producer)
    if _output_dims(maps[-1]) is None or not all(_reads_by_dims(m) for m in maps[:-1]):
        return False
    body = list(nested_ops(producer))
    return len(body) <= MAX_INLINED_OPS and not any(op.name in TRAPPING_OPS or op.regions for op in body)


def _inlinable(producer: ir.Operation) -> bool:
    return inlinable_at_gathers(producer) and _gathered_reads(producer.results[0]) is not None


Read = tuple[ir.Operation, tuple[ir.Operation, ...]]  # an extract, the reshapes between


def _gathered_reads(value: ir.Value, reshapes: tuple[ir.Operation, ...] = ()) -> list[Read] | None:
    """Every read of `value`: extracts in linalg bodies, through reshapes (folded unit
    dims, a batch and channels merged for a per-channel window); None if anything
    else reads it."""
    reads: list[Read] = []
    for use in value.uses:
        user = use.owner.operation
        if user.name in RESHAPES and reshape_groups(user) is not None:
            inner = _gathered_reads(user.results[0], (user, *reshapes))
            if inner is None:
                return None
            reads += inner
        elif user.name == "tensor.extract" and user.parent is not None and user.parent.name == "linalg.generic":
            reads.append((user, reshapes))
        else:
            return None
    return reads


def reshape_groups(reshape: ir.Operation) -> list[list[int]] | None:
    """The reshape's groups of expanded dims, where each dim but a group's first is
    static (the index arithmetic needs their sizes)."""
    expanded = reshape.results[0] if reshape.name == "tensor.expand_shape" else reshape.operands[0]
    shape = ir.RankedTensorType(expanded.type).shape
    groups = [
        [ir.IntegerAttr(d).value for d in ir.ArrayAttr(g)] for g in ir.ArrayAttr(reshape.attributes["reassociation"])
    ]
    return groups if all(shape[d] >= 0 for g in groups for d in g[1:]) else None


def _source_index(reshape: ir.Operation, index: list[ir.Value]) -> list[ir.Value]:
    """The index into the reshape's source of the element at `index` of its result:
    a group of expanded dims linearized (expand_shape) or delinearized (collapse_shape)."""
    groups = reshape_groups(reshape)
    if reshape.name == "tensor.expand_shape":
        expanded = ir.RankedTensorType(reshape.results[0].type).shape
        source = []
        for group in groups:
            flat = index[group[0]]
            for d in group[1:]:
                flat = arith.addi(arith.muli(flat, le.index_const(expanded[d])), index[d])
            source.append(flat)
        return source
    expanded = ir.RankedTensorType(reshape.operands[0].type).shape
    source: list[ir.Value] = [None] * len(expanded)  # type: ignore[list-item]
    for flat, group in zip(index, groups, strict=True):
        for d in reversed(group[1:]):
            if expanded[d] == 1:
                source[d] = le.index_const(0)
                continue
            size = le.index_const(expanded[d])
            source[d] = arith.remui(flat, size)
            flat = arith.divui(flat, size)
        source[group[0]] = flat
    return source


def _element(source: ir.Value, amap: ir.AffineMap, loop_index: list[ir.Value]) -> ir.Value:
    """source[amap(loop_index)]: a scalar operand is its own element."""
    if not isinstance(source.type, ir.RankedTensorType):
        return source
    indices = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            indices.append(loop_index[ir.AffineDimExpr(expr).position])
        else:
            indices.append(le.index_const(ir.AffineConstantExpr(expr).value))
    return tensor.extract(source, indices)


def _inline_at(producer: ir.Operation, read: Read) -> None:
    """Replace the read's extract by the producer's body at the index it reads."""
    extract, reshapes = read
    maps = indexing_maps(producer)
    out_dims = _output_dims(maps[-1])
    with ir.InsertionPoint(extract), extract.location:
        index = list(extract.operands)[1:]
        for reshape in reshapes:
            index = _source_index(reshape, index)
    loop_index: list[ir.Value] = [None] * len(out_dims)  # type: ignore[list-item]
    for position, dim in enumerate(out_dims):
        loop_index[dim] = index[position]
    body = producer.regions[0].blocks[0]
    with ir.InsertionPoint(extract), extract.location:
        mapping = {
            arg: _element(v, m, loop_index)
            for arg, v, m in zip(body.arguments, producer.operands, maps, strict=True)
            if list(arg.uses)  # the init is read only by bodies that accumulate into it
        }
        for op in body.operations:
            op = op.operation
            if op.name == "linalg.yield":
                extract.results[0].replace_all_uses_with(mapping.get(op.operands[0], op.operands[0]))
                break
            if op.name == "linalg.index":
                mapping[op.results[0]] = loop_index[ir.IntegerAttr(op.attributes["dim"]).value]
                continue
            clone = op.clone()
            for i, v in enumerate(clone.operands):
                if v in mapping:
                    clone.operands[i] = mapping[v]
            mapping.update(zip(op.results, clone.results, strict=True))
    erase_op(extract)


def _gathered_producers(func_op: ir.Operation) -> list[ir.Operation]:
    producers = []
    for op in nested_ops(func_op):
        if op.name != "tensor.extract" or op.parent is None or op.parent.name != "linalg.generic":
            continue
        source = op.operands[0]
        while (producer := defining_op(source)) is not None and producer.name in RESHAPES:
            source = producer.operands[0]
        if producer is not None and producer not in producers and _inlinable(producer):
            producers.append(producer)
    return producers


def _erase_unread_reshapes(value: ir.Value) -> None:
    """Erase the reshapes of `value` that nothing reads once its gathers are inlined,
    last first.  Some were unread before: mlirc-recompute-cheap-producers redirects a
    reader's reshape to its copy's and leaves the original behind, and erasing the
    producer under it aborted the process."""
    for use in list(value.uses):
        user = use.owner.operation
        if user.name in RESHAPES:
            _erase_unread_reshapes(user.results[0])
            if not list(user.results[0].uses):
                erase_op(user)


@register_pass(NAME, "Compute an elementwise producer read only by gathers (tensor.extract) inside its readers")
def fuse_gathered_producers(module: ir.Operation) -> None:
    for func_op in module.regions[0].blocks[0].operations:
        # a producer inlined may expose its own producers to the next round (a pad of a pad)
        while producers := _gathered_producers(func_op.operation):
            for producer in producers:
                for read in _gathered_reads(producer.results[0]):
                    _inline_at(producer, read)
                _erase_unread_reshapes(producer.results[0])
                erase_op(producer)

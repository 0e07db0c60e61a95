"""A linalg op's loops as the CPU schedule reads them: their sizes and iterator
types, the order that walks the result contiguously, and which indexing maps the
vectorizer takes."""

from __future__ import annotations

import math

from mlir import ir

from mlirc.dialects import shapes
from mlirc.passes.base.linalg_utils import written_map


def loop_sizes(op: ir.Operation) -> list[int | None] | None:
    """Iteration-space sizes of a linalg op (from its operands' shapes; None: known
    only at run time)."""
    if op.name == "linalg.matmul":
        m, k = shapes.shape_of(op.operands[0])
        return [m, shapes.shape_of(op.operands[1])[1], k]
    if op.name == "linalg.batch_matmul":
        bsz, m, k = shapes.shape_of(op.operands[0])
        return [bsz, m, shapes.shape_of(op.operands[1])[2], k]
    if op.name == "linalg.copy":
        return list(shapes.shape_of(op.results[0]))
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    sizes: dict[int, int] = {}
    for value, attr in zip(op.operands, maps, strict=False):
        amap = ir.AffineMapAttr(attr).value
        for expr, size in zip(amap.results, shapes.shape_of(value), strict=False):
            if isinstance(expr, ir.AffineDimExpr) and sizes.get(expr.position) is None:
                sizes[expr.position] = size
    count = ir.AffineMapAttr(maps[0]).value.n_dims
    return [sizes.get(d, 1) for d in range(count)]


def iterator_types(op: ir.Operation) -> list[str]:
    """The op's iterator types as text (`#linalg.iterator_type<parallel>`, ...)."""
    return [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def at_most(size: int | None, bound: int) -> bool:
    """Is `size` known to be at most `bound` (a size known only at run time is not)?"""
    return size is not None and size <= bound


# What a size known only at run time counts as where sizes are compared: large.
UNKNOWN_SIZE = 1 << 20


def _known(size: int | None) -> int:
    return UNKNOWN_SIZE if size is None else size


def output_order(op: ir.Operation) -> tuple[int, ...] | None:
    """The loops in the order the result lies in memory, where the result's map is a
    permutation of all-parallel loops: a gather writing channels-last (a padding
    between convolutions) then writes, and mostly reads, contiguous rows."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    out_map = ir.AffineMapAttr(ir.ArrayAttr(op.attributes["indexing_maps"])[len(op.operands) - 1]).value
    if not out_map.is_permutation or any(not it.endswith("<parallel>") for it in iterator_types(op)):
        return None
    order = tuple(ir.AffineDimExpr(e).position for e in out_map.results)
    return None if order == tuple(range(len(order))) else order


def _largest_input(op: ir.Operation) -> int | None:
    inputs = list(op.operands)[: len(op.operands) - len(op.results)]
    sizes = [math.prod(map(_known, shapes.shape_of(v))) if isinstance(v.type, ir.ShapedType) else 0 for v in inputs]
    return max(range(len(sizes)), key=sizes.__getitem__) if sizes and max(sizes) > 1 else None


def interchange(op: ir.Operation) -> tuple[int, ...] | None:
    """Move the loop that walks both the result's and the largest input's last
    (contiguous) dim innermost, where it is not: channels-last kernels come out of
    mlirc-channels-last with the channel loop second, and vectorizing the
    innermost loop would then read and write with a stride."""
    out_map = written_map(op)
    if out_map is None:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    largest = _largest_input(op)
    if largest is None or not out_map.results or not maps[largest].results:
        return None
    last_out, last_in = out_map.results[-1], maps[largest].results[-1]
    if not (isinstance(last_out, ir.AffineDimExpr) and isinstance(last_in, ir.AffineDimExpr)):
        return None
    dim = ir.AffineDimExpr(last_out).position
    if dim != ir.AffineDimExpr(last_in).position or dim == out_map.n_dims - 1:
        return None
    if not iterator_types(op)[dim].endswith("<parallel>"):
        return None
    return tuple(d for d in range(out_map.n_dims) if d != dim) + (dim,)


def reads_dims_or_constants(amap: ir.AffineMap, vector_dim: int | None = None) -> bool:
    """A projected permutation, or one with zeros among its results (a row's first
    element, mlirc-fold-slice-reads).  With `vector_dim` (the loop that is
    vectorized), a map with zeros must not read along it: MLIR's vectorizer takes
    (d0, d1) -> (d0, 0) as a broadcast of one element, and fails on (d0) -> (0, d0)."""
    results = list(amap.results)
    dims = [ir.AffineDimExpr(e).position for e in results if isinstance(e, ir.AffineDimExpr)]
    # a 0 only: the vectorizer reads it as a broadcast, and fails on other constants
    constants = sum(1 for e in results if isinstance(e, ir.AffineConstantExpr) and ir.AffineConstantExpr(e).value == 0)
    if len(dims) + constants != len(results) or len(set(dims)) != len(dims):
        return False
    return vector_dim is None or not constants or vector_dim not in dims

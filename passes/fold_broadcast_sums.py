"""mlirc-fold-broadcast-sums: a sum over loops that its summand does not depend on is
the summand times their count.

The mean's backward broadcasts a [B, D] gradient over the T tokens it averaged, and a
layer norm's bias gradient sums that [B, T, D] tensor over B and T.  Upstream fusion
will not put the broadcast into the sum: no input of the fused op would span the T
loop, so its range would be lost.  The broadcast was written out whole (BERT's last
layer norm: 4 MB on the GPU at batch 64) to be summed back.  Here the sum reads the
broadcast's inputs and loses the T loop; the summand is multiplied by T.

The product is eager's sum up to rounding (a sum's order is not eager's anyway),
also for NaN and infinities and integers' wrap-around; a loop of no iterations is
left alone (0 * inf would be NaN where the sum is its init).

Taken: a linalg.generic whose body yields `summand + out` (out read nowhere else),
reading an all-parallel generic's result (written through the identity; its inputs
read through dims and constants), where some of the sum's reduction loops are read by
no other operand of it and no input of the producer, with static ranges whose
product the element type holds exactly (256 in half precision).  The
producer stays for its other readers.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith

from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import clone_body, erase_op, nested_ops
from mlirc.passes.base.linalg_utils import all_parallel, dps_inputs, indexing_maps, loop_ranges
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-fold-broadcast-sums"
SUMS = {"arith.addf": arith.mulf, "arith.addi": arith.muli}  # the combiner -> what repeats it


def _reducing(op: ir.Operation) -> list[int]:
    kinds = [str(k) for k in ir.ArrayAttr(op.attributes["iterator_types"])]
    return [d for d, kind in enumerate(kinds) if kind.endswith("<reduction>")]


def _dims(amap: ir.AffineMap) -> set[int]:
    found: set[int] = set()

    def walk(expr: ir.AffineExpr) -> None:
        if isinstance(expr, ir.AffineDimExpr):
            found.add(expr.position)
        elif isinstance(expr, ir.AffineBinaryExpr):
            walk(expr.lhs)
            walk(expr.rhs)

    for e in amap.results:
        walk(e)
    return found


def _combiner(op: ir.Operation) -> tuple[ir.Operation, int] | None:
    """The body's `summand + out` and the summand's operand index, where `out` is read
    by it alone and the body has no linalg.index."""
    body = op.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    out = list(body.arguments)[-1]
    root = ops[-1].operands[0].owner if len(ops) >= 2 and len(ops[-1].operands) == 1 else None
    if root is None or isinstance(root, ir.Block) or root.operation.name not in SUMS:
        return None
    root = root.operation
    if any(o.name == "linalg.index" for o in ops) or [u.owner for u in out.uses] != [root]:
        return None
    operands = list(root.operands)
    return (root, 1 - operands.index(out)) if operands.count(out) == 1 else None


def _composed(producer_map: ir.AffineMap, read: ir.AffineMap) -> ir.AffineMap | None:
    """The producer's input map seen from the reader's loops (None unless the producer
    map is dims and constants)."""
    exprs = []
    for e in producer_map.results:
        if isinstance(e, ir.AffineDimExpr):
            exprs.append(read.results[e.position])
        elif isinstance(e, ir.AffineConstantExpr):
            exprs.append(e)
        else:
            return None
    return ir.AffineMap.get(read.n_dims, 0, exprs)


def _renumbered(amap: ir.AffineMap, kept: list[int]) -> ir.AffineMap:
    """`amap` over the loops in `kept` only (the others do not appear in it)."""
    replacements = [ir.AffineDimExpr.get(kept.index(d)) if d in kept else ir.AffineConstantExpr.get(0)
                    for d in range(amap.n_dims)]  # fmt: skip
    return ir.AffineMap.get(
        len(kept), 0, [e.compose(ir.AffineMap.get(amap.n_dims, 0, replacements)) for e in amap.results]
    )


def _fold(op: ir.Operation) -> bool:
    if op.name != "linalg.generic" or len(op.results) != 1 or not _reducing(op):
        return False
    combine = _combiner(op)
    if combine is None:
        return False
    maps, inputs = indexing_maps(op), dps_inputs(op)
    for index, value in enumerate(inputs):
        producer = value.owner
        if isinstance(producer, ir.Block) or not _broadcasting_producer(producer.operation):
            continue
        producer = producer.operation
        composed = [_composed(m, maps[index]) for m in indexing_maps(producer)[:-1]]
        if any(m is None for m in composed):
            continue
        others = [m for i, m in enumerate(maps[:-1]) if i != index]
        spanned = set().union(*(_dims(m) for m in [*others, *composed]))
        unspanned = [d for d in _reducing(op) if d not in spanned]
        ranges = loop_ranges(op)
        if not unspanned or any(ranges[d] < 1 for d in unspanned):
            continue  # nothing to fold, a symbolic range, or an empty loop (the sum is its init)
        count = math.prod(ranges[d] for d in unspanned)
        if not _exact(op.results[0].type, count):
            continue
        _rewrite(op, index, producer, composed, unspanned, count, combine)
        return True
    return False


def _exact(result_type: ir.Type, count: int) -> bool:
    """Is `count` a value of the sum's element type (bfloat16 holds integers up to 256,
    an i8 up to 127)?"""
    elem = ir.RankedTensorType(result_type).element_type
    if isinstance(elem, ir.IntegerType):
        return count < 2 ** (ir.IntegerType(elem).width - 1)
    return count <= {16: 256}.get(ir.FloatType(elem).width, 2**24)


def _broadcasting_producer(producer: ir.Operation) -> bool:
    if producer.name != "linalg.generic" or len(producer.results) != 1 or not all_parallel(producer):
        return False
    out_map = indexing_maps(producer)[-1]
    body = producer.regions[0].blocks[0]
    return (
        out_map == ir.AffineMap.get_identity(out_map.n_dims)
        and not list(list(body.arguments)[-1].uses)
        and not any(o.name == "linalg.index" for o in nested_ops(producer))
    )


def _rewrite(
    op: ir.Operation,
    index: int,
    producer: ir.Operation,
    composed: list[ir.AffineMap],
    unspanned: list[int],
    count: int,
    combine: tuple[ir.Operation, int],
) -> None:
    maps, inputs = indexing_maps(op), dps_inputs(op)
    kept = [d for d in range(maps[0].n_dims) if d not in unspanned]
    kinds = [str(k).split("<")[-1].rstrip(">") for k in ir.ArrayAttr(op.attributes["iterator_types"])]
    others = [i for i in range(len(inputs)) if i != index]
    new_inputs = [inputs[i] for i in others] + dps_inputs(producer)
    new_maps = [_renumbered(maps[i], kept) for i in others] + [_renumbered(m, kept) for m in composed]
    root, summand_at = combine

    def body(args: list[ir.Value]) -> list[ir.Value]:
        block = args[0].owner
        value = clone_body(producer, block, args[len(others) : len(new_inputs)])[0]
        reader_args = [args[others.index(i)] if i != index else value for i in range(len(inputs))]
        summand = clone_body(op, block, [*reader_args, args[-1]], stop=root)[summand_at]
        repeat = arith.constant(summand.type, float(count) if root.name == "arith.addf" else count)
        repeated = SUMS[root.name](summand, repeat)
        operands = [repeated, args[-1]] if summand_at == 0 else [args[-1], repeated]
        return [_combined(root, operands)]

    with ir.InsertionPoint(op), op.location:
        result = le.generic(new_inputs, new_maps, [op.operands[len(inputs)]], [_renumbered(maps[-1], kept)],
                            [kinds[d] for d in kept], body)[0]  # fmt: skip
    op.results[0].replace_all_uses_with(result)
    erase_op(op)


def _combined(root: ir.Operation, operands: list[ir.Value]) -> ir.Value:
    clone = root.clone()
    for i, v in enumerate(operands):
        clone.operands[i] = v
    return clone.results[0]


@register_pass(NAME, "Fold a sum over loops its summand does not read into a product by their count")
def fold_broadcast_sums(module: ir.Operation) -> None:
    # generics only: a fold erases the body ops that a walk of every op would visit next
    for op in [op for op in nested_ops(module) if op.name == "linalg.generic"]:
        _fold(op)

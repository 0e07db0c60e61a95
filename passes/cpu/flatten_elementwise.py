"""mlirc-cpu-flatten-elementwise: an elementwise generic over dense, same-shaped
operands becomes a loop over one flat dim (upstream's flatten_elementwise).

mlirc-cpu-vectorize tiles the innermost dim to the vector width and the others to 1:
a conv weight's [128, 128, 3, 3] update (an optimizer step, a weight gradient's
scaling) ran as 49152 masked vectors of 3 live lanes in 8, 10x slower than eager's
flat loop.  Where every operand is read at the element written (identity maps, or
a 0-d scalar), the element order is the row-major one for all of them, so the loops
collapse into one: full vectors, a peeled tail.  Broadcasts, permuted reads,
gathers and index-dependent bodies keep their loops.
"""

from __future__ import annotations

from mlir import ir

from mlirc.passes.base.ir_utils import nested_ops, run_transform
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-cpu-flatten-elementwise"
MARK = "mlirc.flatten"
_LINES = [
    f"%ops = transform.structured.match attributes{{{MARK}}} in %root : (!transform.any_op) -> !transform.any_op",
    "%flat = transform.structured.flatten_elementwise %ops : (!transform.any_op) -> !transform.any_op",
]


def flattenable(op: ir.Operation) -> bool:
    """An all-parallel generic of static rank >= 2 reading and writing every operand
    at the element of its loop (or a 0-d scalar), with no index-dependent body."""
    if op.name != "linalg.generic":
        return False
    if any(not str(it).endswith("<parallel>") for it in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    rank = maps[0].n_dims
    if rank < 2 or any(m != ir.AffineMap.get_identity(rank) and len(m.results) for m in maps):
        return False
    if any(isinstance(v.type, ir.ShapedType) and not ir.ShapedType(v.type).has_static_shape for v in op.operands):
        return False
    return not any(inner.name in ("linalg.index", "tensor.extract") for inner in nested_ops(op))


def _own_inits(op: ir.Operation) -> None:
    """Each result its own tensor.empty: a multi-result generic (mlirc-fuse-multi-output)
    shares one, and once its collapsed view is shared, bufferization gives the second
    result a fresh flat buffer that the kernel then copies into its out-parameter."""
    outputs = len(op.results)
    first = len(op.operands) - outputs
    seen = set()
    for i in range(first, len(op.operands)):
        init = op.operands[i]
        if init in seen and init.owner.name == "tensor.empty" and not len(init.owner.operands):
            with ir.InsertionPoint(op), op.location:
                op.operands[i] = init.owner.clone().results[0]
        seen.add(init)


@register_pass(NAME, "Elementwise generics over dense same-shaped operands -> one flat loop (CPU)")
def cpu_flatten_elementwise(module: ir.Operation) -> None:
    marked = [op for op in nested_ops(module) if flattenable(op)]
    if not marked:
        return
    for op in marked:
        op.attributes[MARK] = ir.UnitAttr.get()
        _own_inits(op)
    run_transform(module, _LINES)
    for op in nested_ops(module):
        if MARK in op.attributes:
            del op.attributes[MARK]

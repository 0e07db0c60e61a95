"""mlirc-cpu-masked-reductions: masked max/min vector reductions get an explicit
neutral element.

The vectorizer masks the lanes of a reduction vector past the end of a short row
(`vector.mask %m { vector.reduction <maximumf>, %v, %acc }`), and MLIR's lowering
of that mask fills the dead lanes with the smallest *denormal* of the opposite
sign instead of an infinity: amax over rows of negative values came out as
-1.4e-45.  Here every masked maximumf/minimumf (and maxnumf/minnumf) reduction
becomes a select of -inf/+inf into the dead lanes and an unmasked reduction.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.registry import register_pass

# vector.reduction kinds whose masked form needs an infinity: kind -> which one
NEUTRAL = {"maximumf": float("-inf"), "maxnumf": float("-inf"), "minimumf": float("inf"), "minnumf": float("inf")}


def _masked_extremum(op: ir.Operation) -> tuple[ir.Operation, float] | None:
    """The reduction inside a `vector.mask`, and its neutral element, if it is a max/min."""
    if op.name != "vector.mask" or not op.regions[0].blocks:
        return None
    inner = [o.operation for o in op.regions[0].blocks[0].operations if o.operation.name != "vector.yield"]
    if len(inner) != 1 or inner[0].name != "vector.reduction":
        return None
    kind = str(inner[0].attributes["kind"])  # "#vector.kind<maximumf>"
    name = kind[kind.find("<") + 1 : kind.rfind(">")]
    return (inner[0], NEUTRAL[name]) if name in NEUTRAL else None


def _unmask(mask_op: ir.Operation, reduction: ir.Operation, neutral: float) -> None:
    vec = reduction.operands[0]
    vtype = ir.VectorType(vec.type)
    with ir.InsertionPoint(mask_op), mask_op.location:
        fill = arith.ConstantOp(
            vtype, ir.DenseElementsAttr.get_splat(vtype, ir.FloatAttr.get(vtype.element_type, neutral))
        )
        live = arith.select(mask_op.operands[0], vec, fill)
        clone = reduction.clone()
        clone.operands[0] = live
    mask_op.results[0].replace_all_uses_with(clone.results[0])
    erase_op(mask_op)


@register_pass("mlirc-cpu-masked-reductions", "Masked vector max/min reductions with an infinity in the dead lanes")
def cpu_masked_reductions(module: ir.Operation) -> None:
    found = [(op, hit) for op in nested_ops(module) if (hit := _masked_extremum(op)) is not None]
    for op, (reduction, neutral) in found:
        _unmask(op, reduction, neutral)

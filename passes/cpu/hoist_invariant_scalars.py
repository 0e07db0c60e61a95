"""mlirc-cpu-hoist-invariant-scalars: math on 0-d operands runs once per kernel call,
not once per vector.

A linalg.generic body is the loop's body: what it computes from 0-d operands and
constants alone is the same at every element, but it stays in the loop through
lowering, where LLVM cannot hoist it -- the 0-d operand is a load through a pointer
that the loop's stores may alias.  An Adam/AdamW step's bias corrections are two
`powf(beta, step)`, two divisions and a square root of the 0-d step count: a libm
call per vector of 16 floats made a [1000, 256] parameter's update compute-bound.
Here each 0-d input is read once before the generic (`tensor.extract`), and the body
ops that depend on nothing else move out with it; the vectorizer broadcasts them.

Only ops that cannot trap move: float arithmetic and math, comparisons, selects,
casts and integer ops other than division and remainder.  An integer division by a
0-d zero would raise SIGFPE where the loop (empty, or never reaching it) did not.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from mlirc.passes.base.ir_utils import nested_ops
from mlirc.passes.base.registry import register_pass

# integer division and remainder trap on a zero divisor: never executed speculatively
TRAPPING = frozenset(
    {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi", "arith.ceildivui"}
    | {"arith.floordivsi"}
)
HOISTABLE_DIALECTS = ("arith.", "math.")


def _hoistable(op: ir.Operation) -> bool:
    return op.name.startswith(HOISTABLE_DIALECTS) and op.name not in TRAPPING and not op.regions


def _scalar_inputs(generic: ir.Operation) -> list[tuple[ir.BlockArgument, ir.Value]]:
    """(block argument, operand) of each input read as a whole 0-d tensor."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    inputs = len(generic.operands) - len(generic.results)
    body = generic.regions[0].blocks[0]
    pairs = []
    for i in range(inputs):
        value = generic.operands[i]
        if isinstance(value.type, ir.RankedTensorType) and value.type.rank == 0 and not maps[i].results:
            pairs.append((body.arguments[i], value))
    return pairs


def _hoist(generic: ir.Operation) -> None:
    pairs = [(arg, value) for arg, value in _scalar_inputs(generic) if list(arg.uses)]
    body = generic.regions[0].blocks[0]
    invariant: set = set()
    with ir.InsertionPoint(generic), generic.location:
        for arg, value in pairs:
            element = _constant_element(value) or tensor.ExtractOp(value, []).result
            arg.replace_all_uses_with(element)
            invariant.add(element)
    for inner in list(body.operations):
        if not _hoistable(inner):
            continue
        operands = list(inner.operands)
        if not all(v in invariant or not _defined_in(v, body) for v in operands):
            continue
        if not operands and inner.name != "arith.constant":
            continue
        inner.move_before(generic)
        invariant.update(inner.results)


def _constant_element(value: ir.Value) -> ir.Value | None:
    """A 0-d constant's element as a scalar constant, the form a statically traced
    graph has (a graph bound from a symbolic import keeps 0-d constants as operands:
    both must end in the same kernels, tests/test_symbolic_import.py)."""
    owner = value.owner
    if isinstance(value, ir.BlockArgument) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return None
    return arith.ConstantOp(ir.RankedTensorType(value.type).element_type, attr.get_splat_value()).result


def _defined_in(value: ir.Value, body: ir.Block) -> bool:
    """Whether `value` is the body's own (an argument or an op's result in it)."""
    if isinstance(value, ir.BlockArgument):
        return ir.BlockArgument(value).owner == body
    return value.owner.operation.block == body


@register_pass(
    "mlirc-cpu-hoist-invariant-scalars",
    "CPU: math on a generic's 0-d operands (an optimizer's bias corrections) computed once, before the loop",
)
def cpu_hoist_invariant_scalars(module: ir.Operation) -> None:
    for op in list(nested_ops(module)):
        if op.name == "linalg.generic":
            _hoist(op)

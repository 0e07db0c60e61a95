"""mlirc-cpu-widen-halves: bfloat16/float16 generics compute in float32 and round once,
where eager does: at each op's result.

Eager computes every half-precision op in float32 (ATen's opmath) and rounds its
result once; reductions accumulate in float32.  A linalg body on bf16 values would
instead round after every arith op (x86 has no bf16 arithmetic: the LLVM conversion
emulates each op in f32 and truncates it), and a bf16 accumulator rounds the running
sum at every step.  Here, before fusion (each generic is still about one ATen op),
every generic that computes on half values:

* widens its half block arguments to f32 at the top of the body and computes in f32;
  a value made half inside the body (a constant, an explicit `.to(bfloat16)`, a read)
  keeps its rounding and is widened right after;
* rounds what it yields into a half result once, at the yield;
* reduces into an f32 accumulator (the init widened before the loop, the result
  rounded after it) where it reduces into a half one.

A body with an op outside WIDENABLE (a bitcast of a half value) is left as it is.
Fusion then keeps each op's rounding inside fused bodies (a truncf/extf pair is not
folded away), so a fused chain rounds where eager's separate kernels do.  CPU only:
the GPU kernels compute halves in f32 as they load them (mlirc-gpu-lower-to-tt).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from mlirc.dialects import shapes
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.linalg_utils import is_fill
from mlirc.passes.base.registry import register_pass

HALF_TYPES = (ir.BF16Type, ir.F16Type)
# Ops that may take half operands: each is type-generic over floats, so with f32
# operands it computes the same function in f32.
WIDENABLE = frozenset(
    {f"arith.{n}" for n in "addf subf mulf divf remf negf maximumf minimumf maxnumf minnumf cmpf select".split()}
    | {"arith.fptosi", "arith.fptoui", "arith.extf", "linalg.yield"}
)


def _is_half(t: ir.Type) -> bool:
    return isinstance(t, HALF_TYPES)


def _f32() -> ir.Type:
    return ir.F32Type.get()


def _widenable(generic: ir.Operation) -> bool:
    body = generic.regions[0].blocks[0]
    values = [*body.arguments, *(r for op in body.operations for r in op.results)]
    if not any(_is_half(v.type) for v in values):
        return False
    if any(isinstance(v.type, ir.ShapedType) and 0 in v.type.shape for v in generic.operands):
        return False  # no element to compute: nothing to widen (and tiling an empty loop asserts)
    for op in body.operations:
        half_in = any(_is_half(v.type) for v in op.operands)
        if half_in and op.name not in WIDENABLE and not op.name.startswith("math."):
            return False
    return True


def _widen_body(generic: ir.Operation, f32_outs: set[int]) -> None:
    """The body computes in f32; outs in `f32_outs` have f32 block args and yields.
    Half results are still yielded as f32 values here (`widen` rounds them)."""
    body = generic.regions[0].blocks[0]
    n_in = len(generic.operands) - len(generic.results)
    wide: dict[ir.Value, ir.Value] = {}
    first = body.operations[0]
    with ir.InsertionPoint(first), first.location:
        for i, arg in enumerate(body.arguments):
            if _is_half(arg.type) and (i - n_in) not in f32_outs:
                wide[arg] = arith.ExtFOp(_f32(), arg).result
    made_here = set(wide.values())  # the widening extfs, skipped below
    for i in f32_outs:
        arg = body.arguments[n_in + i]
        arg.set_type(_f32())
    for op in list(body.operations):
        if len(op.results) == 1 and op.results[0] in made_here:
            continue
        if op.name == "linalg.yield":
            for i, value in enumerate(list(op.operands)):
                if value in wide and not isinstance(value.owner, ir.Block):  # a half argument yields as it is
                    op.operands[i] = wide[value]
            continue
        # (a value widened in place is f32 already: `wide` remembers it was half)
        computes_on_half = any(_is_half(v.type) or v in wide for v in op.operands)
        for i, operand in enumerate(op.operands):
            if operand not in wide and _is_half(operand.type):  # captured from outside the body
                with ir.InsertionPoint.at_block_begin(body), generic.location:
                    wide[operand] = arith.ExtFOp(_f32(), operand).result
                made_here.add(wide[operand])
            if operand in wide:
                op.operands[i] = wide[operand]
        if op.name == "arith.extf" and computes_on_half and op.results[0].type == _f32():
            op.results[0].replace_all_uses_with(op.operands[0])  # already f32
            erase_op(op)
            continue
        for result in op.results:
            if not _is_half(result.type):
                continue
            if computes_on_half:  # a function of widened values: now computed in f32
                result.set_type(_f32())
                wide[result] = result
            else:  # made half here (a constant, a cast, a read): its rounding stays
                with ir.InsertionPoint.after(op), op.location:
                    wide[result] = arith.ExtFOp(_f32(), result).result
                made_here.add(wide[result])


def _half_accumulators(generic: ir.Operation) -> dict[int, float] | None:
    """Outs whose running value the body reads (reductions) and whose type is half,
    with the constant each starts from; None where one does not start from a
    constant fill.  The f32 accumulator is then a fill too, which kernel formation
    copies into each reduction's kernel: a shared init tensor passed to two kernels
    would be overwritten by the first one's sums."""
    body = generic.regions[0].blocks[0]
    n_in = len(generic.operands) - len(generic.results)
    starts = {}
    for i, result in enumerate(generic.results):
        if not _is_half(shapes.elem_of(result)) or not list(body.arguments[n_in + i].uses):
            continue
        init = generic.operands[n_in + i].owner
        value = None if isinstance(init, ir.Block) or not is_fill(init) else init.operands[0].owner
        if value is None or isinstance(value, ir.Block) or value.name != "arith.constant":
            return None
        starts[i] = ir.FloatAttr(value.attributes["value"]).value
    return starts


def _round(value: ir.Value, elem: ir.Type) -> ir.Value:
    """An f32 tensor rounded elementwise to `elem`."""
    rank = len(shapes.shape_of(value))
    return le.generic(
        [value], [le.identity_map(rank)], [le.empty(le.dims_of(value), elem)], [le.identity_map(rank)],
        ["parallel"] * rank, lambda args: [arith.TruncFOp(elem, args[0]).result],
    )[0]  # fmt: skip


def widen(generic: ir.Operation, accumulators: dict[int, float]) -> None:
    n_in = len(generic.operands) - len(generic.results)
    half_results = {i: shapes.elem_of(r) for i, r in enumerate(generic.results) if _is_half(shapes.elem_of(r))}
    _widen_body(generic, set(accumulators))
    body = generic.regions[0].blocks[0]
    yield_op = body.operations[len(body.operations) - 1]
    with ir.InsertionPoint(yield_op), yield_op.location:
        for i, value in enumerate(list(yield_op.operands)):
            if i in half_results and i not in accumulators and value.type == _f32():
                yield_op.operands[i] = arith.TruncFOp(half_results[i], value).result
    with ir.InsertionPoint(generic), generic.location:
        for i, start in accumulators.items():
            sizes = le.dims_of(generic.operands[n_in + i])  # symbolic ones read off the half init
            generic.operands[n_in + i] = le.fill(arith.ConstantOp(_f32(), start).result, le.empty(sizes, _f32()))
    for i in accumulators:
        result = generic.results[i]
        result.set_type(ir.RankedTensorType.get(ir.RankedTensorType(result.type).shape, _f32()))
        users = [u.owner for u in result.uses]  # before the rounding's own reads (its sizes too)
        with ir.InsertionPoint.after(generic), generic.location:
            rounded = _round(result, half_results[i])
        for user in users:
            for j, operand in enumerate(user.operands):
                if operand == result:
                    user.operands[j] = rounded


@register_pass("mlirc-cpu-widen-halves", "CPU: bf16/f16 generics compute in f32, round at results, sum in f32")
def cpu_widen_halves(module: ir.Operation) -> None:
    for op in [op for op in nested_ops(module) if op.name == "linalg.generic"]:
        accumulators = _half_accumulators(op) if _widenable(op) else None
        if accumulators is not None:
            widen(op, accumulators)

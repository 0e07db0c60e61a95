"""mlirc-resolve-call-dims: a `?` size read off a call's result is read off the
call's operands instead.

Two symbolic sizes are known equal only where they are the same value (the same
`tensor.dim` read, after upstream's resolve-ranked-shaped-type-result-dims).  That
rewrite stops at a call: a library GEMM's result (passes/outline_library_calls.py)
keeps `tensor.dim` reads of it, while the ops around it read the same sizes off
the graph's inputs.  Fusion then meets the two apart (a residual add after an
attention's batched matmul: the reshape between them cannot fold) and forms one
kernel more than on static sizes.  Here each such read becomes the callee's own
answer: the result is an op's destination (a linalg op's init), and so on back to a
`tensor.empty` whose size is a `tensor.dim` of a callee argument or a constant.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from mlirc.passes.base.dim_sources import call_result_dim
from mlirc.passes.base.ir_utils import constant_index, defining_op, erase_op, nested_ops
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-resolve-call-dims"


def _resolve(dim_op: ir.Operation) -> None:
    source, index = dim_op.operands[0], constant_index(dim_op.operands[1])
    call = defining_op(source)
    if index is None or call is None or call.name != "func.call":
        return
    found = call_result_dim(call, ir.OpResult(source).result_number, index)
    if found is None:
        return
    with ir.InsertionPoint(dim_op), dim_op.location:
        if isinstance(found, int):
            size = arith.ConstantOp(ir.IndexType.get(), found).result
        else:
            argument, dim = found
            size = tensor.dim(call.operands[argument], arith.ConstantOp(ir.IndexType.get(), dim).result)
    dim_op.results[0].replace_all_uses_with(size)
    erase_op(dim_op)


@register_pass(NAME, "Read a call result's `?` sizes off the call's operands, as its callee computes them")
def resolve_call_dims(module: ir.Operation) -> None:
    for op in [op for op in nested_ops(module) if op.name == "tensor.dim"]:
        _resolve(op)

"""Where a `?` size comes from: which argument's dim of a function (or which
constant) a value's dim is, followed through destination-passing ops; and a call
result's, as its callee computes it.  Read by mlirc-resolve-call-dims, by the size
keys of fusion (size_keys.py) and by row groups (row_groups.py).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from mlirc.passes.base.ir_utils import constant_index, defining_op, entry_block_argument

# A size: the callee argument and dim it is read from, or a constant.
Source = tuple[int, int] | int


def _argument_of(value: ir.Value, fn: func.FuncOp) -> int | None:
    number = entry_block_argument(value)
    return number if number is not None and ir.BlockArgument(value).owner == fn.entry_block else None


def _size_source(size: ir.Value, fn: func.FuncOp) -> Source | None:
    """Where an `index` size in `fn` comes from, if it is an argument's dim or a constant."""
    constant = constant_index(size)
    if constant is not None:
        return constant
    owner = defining_op(size)
    if owner is None or owner.name != "tensor.dim":
        return None
    argument, dim = _argument_of(owner.operands[0], fn), constant_index(owner.operands[1])
    return None if argument is None or dim is None else (argument, dim)


def dim_source(value: ir.Value, dim: int, fn: func.FuncOp) -> Source | None:
    """Dim `dim` of `value` in `fn`, followed through destinations to its source."""
    while True:
        argument = _argument_of(value, fn)
        if argument is not None:
            return argument, dim
        owner = defining_op(value)
        if owner is None:
            return None
        if owner.name == "tensor.empty":
            shape = ir.RankedTensorType(value.type).shape
            dynamic = sum(1 for s in shape[:dim] if s == ir.ShapedType.get_dynamic_size())
            return _size_source(owner.operands[dynamic], fn)
        init = linalg_init(owner, ir.OpResult(value).result_number)
        if init is None:
            return None
        value = init


def linalg_init(op: ir.Operation, result: int) -> ir.Value | None:
    """The init a linalg op on tensors writes result `result` into: its outs are the
    second operand segment (ins, outs).  None for other ops (linalg.pack's segments
    hold more)."""
    if not op.name.startswith("linalg.") or "operandSegmentSizes" not in op.attributes:
        return None
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    return op.operands[segments[0] + result] if len(segments) == 2 and result < segments[1] else None


def _returned(fn: func.FuncOp) -> list[ir.Value] | None:
    """What a one-block function returns (None for a function of several blocks)."""
    terminator = fn.entry_block.operations[len(fn.entry_block.operations) - 1]
    return list(terminator.operands) if terminator.operation.name == "func.return" else None


def _callee(call: ir.Operation) -> func.FuncOp | None:
    module = call.parent
    while module is not None and module.name != "builtin.module":
        module = module.parent
    if module is None:
        return None
    name = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
    try:
        callee = ir.SymbolTable(module)[name]
    except KeyError:
        return None
    return callee if isinstance(callee, func.FuncOp) and not callee.is_external else None


def call_result_dim(call: ir.Operation, result: int, dim: int) -> Source | None:
    """Dim `dim` of a call's result `result`, as its callee computes it: from which
    operand's dim, or a constant (None: the callee computes it otherwise)."""
    callee = _callee(call)
    returned = None if callee is None else _returned(callee)
    return None if returned is None else dim_source(returned[result], dim, callee)

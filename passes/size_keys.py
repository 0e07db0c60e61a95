"""Which `?` sizes are the same size: a key per size, equal keys for equal sizes.

Upstream folds a reshape pair (`expand_shape` of a `collapse_shape`) where the
types say it is the identity; on `?` dims the types cannot say, and two reads of
one size (a `tensor.dim` of an op's result, of its init, of the graph's input it
was computed from) are different values.  A key follows a size back to where it
was made -- an argument's dim, an `index` argument, a constant, arithmetic on
those -- through destinations, `tensor.empty` sizes, reshapes' output shapes and
calls (the callee's answer, passes/resolve_call_dims.py).  Sizes with equal keys
are equal at every binding; a size it cannot follow has no key (None) and equals
nothing, not even itself.
"""

from __future__ import annotations

from collections.abc import Hashable

from mlir import ir
from mlir.dialects import func

from mlirc.passes.resolve_call_dims import call_result_dim, constant_index, defining_op

Key = Hashable

_COMMUTATIVE = ("arith.addi", "arith.muli")
_ARITHMETIC = (*_COMMUTATIVE, "arith.subi", "arith.divsi", "arith.divui", "arith.floordivsi", "arith.ceildivsi")
_MAX_DEPTH = 64  # a size is a short expression; deeper is treated as unknown


def size_key(size: ir.Value, depth: int = 0) -> Key | None:
    """The key of an `index` value."""
    constant = constant_index(size)
    if constant is not None:
        return constant
    if depth > _MAX_DEPTH:
        return None
    if isinstance(size, ir.BlockArgument):
        block_arg = ir.BlockArgument(size)
        return ("index-arg", block_arg.arg_number) if isinstance(block_arg.owner.owner, func.FuncOp) else None
    op = defining_op(size)
    if op is None:
        return None
    if op.name == "tensor.dim":
        index = constant_index(op.operands[1])
        return None if index is None else dim_key(op.operands[0], index, depth + 1)
    if op.name in _ARITHMETIC:
        keys = [size_key(v, depth + 1) for v in op.operands]
        if any(k is None for k in keys):
            return None
        return (op.name, *(sorted(keys, key=repr) if op.name in _COMMUTATIVE else keys))
    if op.name == "affine.apply":
        keys = [size_key(v, depth + 1) for v in op.operands]
        return None if any(k is None for k in keys) else (str(op.attributes["map"]), *keys)
    return None


def dim_key(tensor: ir.Value, dim: int, depth: int = 0) -> Key | None:
    """The key of dim `dim` of a tensor value."""
    static = ir.RankedTensorType(tensor.type).shape[dim]
    if static != ir.ShapedType.get_dynamic_size():
        return static
    if depth > _MAX_DEPTH:
        return None
    if isinstance(tensor, ir.BlockArgument):
        block_arg = ir.BlockArgument(tensor)
        return ("dim", block_arg.arg_number, dim) if isinstance(block_arg.owner.owner, func.FuncOp) else None
    op = defining_op(tensor)
    if op is None:
        return None
    rule = _DIM_RULES.get(op.name) or (_linalg_dim if op.name.startswith("linalg.") else None)
    return None if rule is None else rule(op, ir.OpResult(tensor).result_number, dim, depth + 1)


def same_size(a: Key | None, b: Key | None) -> bool:
    return a is not None and a == b


def _dynamic_operand(op: ir.Operation, shape: list[int], dim: int, first: int) -> ir.Value:
    """The size operand for `?` dim `dim` of `shape`, the op's sizes starting at operand `first`."""
    return op.operands[first + sum(1 for s in shape[:dim] if s == ir.ShapedType.get_dynamic_size())]


def _empty_dim(op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    return size_key(_dynamic_operand(op, ir.RankedTensorType(op.results[0].type).shape, dim, 0), depth)


def _expand_dim(op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    return size_key(_dynamic_operand(op, ir.RankedTensorType(op.results[0].type).shape, dim, 1), depth)


def _collapse_dim(op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    groups = [list(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.attributes["reassociation"])]
    keys = [dim_key(op.operands[0], ir.IntegerAttr(d).value, depth) for d in groups[dim]]
    if any(k is None for k in keys):
        return None
    return keys[0] if len(keys) == 1 else ("arith.muli", *sorted(keys, key=repr))


def _slice_dim(op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    dynamic = ir.ShapedType.get_dynamic_size()
    first = 1 + sum(1 for o in offsets if o == dynamic)
    return size_key(op.operands[first + sum(1 for s in sizes[:dim] if s == dynamic)], depth)


def _call_dim(op: ir.Operation, result: int, dim: int, depth: int) -> Key | None:
    found = call_result_dim(op, result, dim)
    if found is None or isinstance(found, int):
        return found
    argument, argument_dim = found
    return dim_key(op.operands[argument], argument_dim, depth)


def _linalg_dim(op: ir.Operation, result: int, dim: int, depth: int) -> Key | None:
    # A linalg op on tensors writes result i into its i-th init, the operands' tail.
    return dim_key(op.operands[len(op.operands) - len(op.results) + result], dim, depth)


_DIM_RULES = {
    "tensor.empty": _empty_dim,
    "tensor.expand_shape": _expand_dim,
    "tensor.collapse_shape": _collapse_dim,
    "tensor.extract_slice": _slice_dim,
    "func.call": _call_dim,
}

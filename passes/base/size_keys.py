"""Which `?` sizes are the same size: a key per size, equal keys for equal sizes.

Upstream folds a reshape pair (`expand_shape` of a `collapse_shape`) where the
types say it is the identity; on `?` dims the types cannot say, and two reads of
one size (a `tensor.dim` of an op's result, of its init, of the graph's input it
was computed from) are different values.  A key follows a size back to where it
was made -- an argument's dim, an `index` argument, a constant, arithmetic on
those -- through destinations, `tensor.empty` sizes, reshapes' output shapes and
calls (the callee's answer, dim_sources.py).  Sizes with equal keys
are equal at every binding; a size it cannot follow has no key (None) and equals
nothing, not even itself.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from mlir import ir

from mlirc.passes.base.dim_sources import call_result_dim, linalg_init
from mlirc.passes.base.ir_utils import constant_index, defining_op, entry_block_argument

Key = int  # an interned size expression (SizeKeys)

_COMMUTATIVE = ("arith.addi", "arith.muli")
_ARITHMETIC = (*_COMMUTATIVE, "arith.subi", "arith.divsi", "arith.divui", "arith.floordivsi", "arith.ceildivsi")
_MAX_DEPTH = 64  # a size is a short expression; deeper is treated as unknown


class SizeKeys:
    """Keys of sizes, each computed once and interned as a small int (a size's
    expression is a DAG: a key spelled out as nested tuples would grow with its
    paths, not its nodes).  Keys compare only within one SizeKeys."""

    def __init__(self) -> None:
        self._sizes: dict[ir.Value, Key | None] = {}
        self._dims: dict[tuple[ir.Value, int], Key | None] = {}
        self._ids: dict[tuple, int] = {}

    def _intern(self, *parts: Hashable) -> int:
        return self._ids.setdefault(parts, len(self._ids))

    def size(self, size: ir.Value, depth: int = 0) -> Key | None:
        """The key of an `index` value."""
        if size not in self._sizes:
            self._sizes[size] = None if depth > _MAX_DEPTH else self._size(size, depth)
        return self._sizes[size]

    def dim(self, tensor: ir.Value, dim: int, depth: int = 0) -> Key | None:
        """The key of dim `dim` of a tensor value."""
        if (tensor, dim) not in self._dims:
            self._dims[tensor, dim] = None if depth > _MAX_DEPTH else self._dim(tensor, dim, depth)
        return self._dims[tensor, dim]

    def _size(self, size: ir.Value, depth: int) -> Key | None:
        constant = constant_index(size)
        if constant is not None:
            return self._intern("constant", constant)
        argument = entry_block_argument(size)
        if argument is not None:
            return self._intern("index-arg", argument)
        op = defining_op(size)
        if op is None:
            return None
        if op.name == "tensor.dim":
            index = constant_index(op.operands[1])
            return None if index is None else self.dim(op.operands[0], index, depth + 1)
        if op.name in _ARITHMETIC or op.name == "affine.apply":
            keys = [self.size(v, depth + 1) for v in op.operands]
            if any(k is None for k in keys):
                return None
            if op.name == "affine.apply":
                return self._intern(str(op.attributes["map"]), *keys)
            return self.combined(op.name, keys)
        return None

    def _dim(self, tensor: ir.Value, dim: int, depth: int) -> Key | None:
        static = ir.RankedTensorType(tensor.type).shape[dim]
        if static != ir.ShapedType.get_dynamic_size():
            return self._intern("constant", static)
        argument = entry_block_argument(tensor)
        if argument is not None:
            return self._intern("dim", argument, dim)
        op = defining_op(tensor)
        if op is None:
            return None
        if op.name.startswith("linalg."):
            init = linalg_init(op, ir.OpResult(tensor).result_number)
            return None if init is None else self.dim(init, dim, depth + 1)
        rule = _DIM_RULES.get(op.name)
        return None if rule is None else rule(self, op, ir.OpResult(tensor).result_number, dim, depth + 1)

    def combined(self, name: str, keys: list[Key]) -> Key:
        """The key of arithmetic `name` on sizes of `keys` (in any order where it commutes)."""
        return self._intern(name, *(sorted(keys) if name in _COMMUTATIVE else keys))


def same_size(a: Key | None, b: Key | None) -> bool:
    return a is not None and a == b


def _dynamic_operand(op: ir.Operation, shape: list[int], dim: int, first: int) -> ir.Value:
    """The size operand for `?` dim `dim` of `shape`, the op's sizes starting at operand `first`."""
    return op.operands[first + sum(1 for s in shape[:dim] if s == ir.ShapedType.get_dynamic_size())]


def _empty_dim(keys: SizeKeys, op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    return keys.size(_dynamic_operand(op, ir.RankedTensorType(op.results[0].type).shape, dim, 0), depth)


def _expand_dim(keys: SizeKeys, op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    return keys.size(_dynamic_operand(op, ir.RankedTensorType(op.results[0].type).shape, dim, 1), depth)


def _collapse_dim(keys: SizeKeys, op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    groups = [list(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.attributes["reassociation"])]
    found = [keys.dim(op.operands[0], ir.IntegerAttr(d).value, depth) for d in groups[dim]]
    if any(k is None for k in found):
        return None
    return found[0] if len(found) == 1 else keys.combined("arith.muli", found)


def _slice_dim(keys: SizeKeys, op: ir.Operation, _result: int, dim: int, depth: int) -> Key | None:
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    dropped = len(sizes) - ir.RankedTensorType(op.results[0].type).rank
    if dropped:
        # rank-reducing: unambiguous where its unit sizes are exactly the dims it drops
        units = [i for i, s in enumerate(sizes) if s == 1]
        if len(units) != dropped:
            return None
        dim = [i for i in range(len(sizes)) if i not in units][dim]
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    dynamic = ir.ShapedType.get_dynamic_size()
    first = 1 + sum(1 for o in offsets if o == dynamic)
    return keys.size(op.operands[first + sum(1 for s in sizes[:dim] if s == dynamic)], depth)


def _call_dim(keys: SizeKeys, op: ir.Operation, result: int, dim: int, depth: int) -> Key | None:
    found = call_result_dim(op, result, dim)
    if found is None or isinstance(found, int):
        return found
    argument, argument_dim = found
    return keys.dim(op.operands[argument], argument_dim, depth)


_DIM_RULES: dict[str, Callable[[SizeKeys, ir.Operation, int, int, int], Key | None]] = {
    "tensor.empty": _empty_dim,
    "tensor.expand_shape": _expand_dim,
    "tensor.collapse_shape": _collapse_dim,
    "tensor.extract_slice": _slice_dim,
    "func.call": _call_dim,
}

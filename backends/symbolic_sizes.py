"""The `?` sizes of a host entry's values as expressions of the graph's symbols.

A symbolic graph's host wrapper for every size (backends/symbolic_wrapper.py)
allocates and views buffers whose sizes are only known per call.  Each `?` dim of a
value in the entry -- an argument's, a kernel result's, a reshape's -- is worked out
here once, at build time, as a SymInt of Dynamo's shape environment (`s0 * 16`,
`(s1 - 2) // 2 + 1`), which the wrapper prints as Python and evaluates per call.

Kernel results take their sizes from the kernels' bodies: in a copy of the module
every `?` dim of an entry value is asked for with `tensor.dim`, the kernels are
inlined, and MLIR's own shape reification (`resolve-ranked-shaped-type-result-dims`,
scf's loop-result folding, `lower-affine`, canonicalization) rewrites each question
into index arithmetic on the entry's arguments, which is then evaluated on SymInts.
A size that does not resolve so, or index arithmetic outside INDEX_OPS, raises
UnsupportedOpError: the caller then binds each size instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from mlir import ir, passmanager
from mlir.dialects import arith, func, tensor

from mlirc.dialects.attributes import ENTRY_ATTR, PREPARE_ATTR
from mlirc.errors import UnsupportedOpError

Size = int | torch.SymInt

# A copy of the module in which every kernel is inlined into the entry and each
# `tensor.dim` of a kernel's result becomes arithmetic on the entry's arguments.
_REIFY = (
    "builtin.module(inline,func.func(resolve-ranked-shaped-type-result-dims,scf-for-loop-canonicalization,"
    "resolve-ranked-shaped-type-result-dims,canonicalize,cse),lower-affine,canonicalize,cse)"
)


def _trunc_div(a: Size, b: Size) -> Size:
    _nonnegative(a, b)
    return a // b


def _trunc_rem(a: Size, b: Size) -> Size:
    _nonnegative(a, b)
    return a % b


def _nonnegative(a: Size, b: Size) -> None:
    """Truncating and flooring division agree where both operands are >= 0 (and the
    divisor > 0): sizes are, where the shape environment's ranges show it."""
    if not (isinstance(b, int) and b > 0 and (not isinstance(a, int) or a >= 0)) or (
        isinstance(a, torch.SymInt) and not bool(a >= 0)
    ):
        raise UnsupportedOpError("arith.divsi", "a truncating division of sizes not known to be >= 0")


# index arithmetic -> its value on sizes (ints or SymInts)
INDEX_OPS: dict[str, Callable[..., Size]] = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.floordivsi": lambda a, b: a // b,
    "arith.ceildivsi": lambda a, b: -((-a) // b),
    "arith.divsi": _trunc_div,
    "arith.divui": _trunc_div,
    "arith.remsi": _trunc_rem,
    "arith.remui": _trunc_rem,
    "arith.maxsi": torch.sym_max,
    "arith.minsi": torch.sym_min,
    "arith.index_cast": lambda a: a,
    "arith.index_castui": lambda a: a,
}


def _owner(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if hasattr(owner, "operation") else owner


def _entry(module: ir.Operation) -> func.FuncOp:
    return next(op for op in module.regions[0].blocks[0].operations if ENTRY_ATTR in op.attributes)


class SymbolicSizes:
    """Sizes of the entry's values: `arguments` gives, per entry argument, its dims
    (a tensor's, ints and SymInts) or its value (an `index` argument's SymInt)."""

    def __init__(self, module: ir.Module, arguments: list[list[Size] | Size]) -> None:
        self.entry = _entry(module.operation)
        self.arguments = arguments
        self.shapes: dict[ir.Value, list[Size]] = {}
        self.indices: dict[ir.Value, Size] = {}
        for arg, given in zip(self.entry.entry_block.arguments, arguments, strict=True):
            if isinstance(arg.type, ir.RankedTensorType):
                self.shapes[arg] = list(given)  # type: ignore[arg-type]
            else:
                self.indices[arg] = given  # type: ignore[assignment]
        self._reify(module)

    def shape(self, value: ir.Value) -> list[Size]:
        if value in self.shapes:
            return self.shapes[value]
        t = ir.RankedTensorType(value.type)
        if any(t.is_dynamic_dim(d) for d in range(t.rank)):
            raise UnsupportedOpError(str(_owner(value).name if _owner(value) else value), "a `?` size not worked out")
        return list(t.shape)

    def index(self, value: ir.Value) -> Size:
        """The value of an index SSA value of the entry (evaluated once, then kept)."""
        if value not in self.indices:
            self.indices[value] = self._evaluate(value, self.shape)
        return self.indices[value]

    def _evaluate(self, value: ir.Value, shape_of: Callable[[ir.Value], list[Size]]) -> Size:
        op = _owner(value)
        if op is None:
            if value in self.indices:
                return self.indices[value]
            raise UnsupportedOpError("block argument", "an index value that is not an entry argument")
        if op.name == "arith.constant":
            return ir.IntegerAttr(op.attributes["value"]).value
        if op.name == "tensor.dim":
            dim = self._evaluate(op.operands[1], shape_of)
            if not isinstance(dim, int):
                raise UnsupportedOpError(op.name, "a dim chosen at run time")
            return self._dim(op.operands[0], dim, shape_of)
        rule = INDEX_OPS.get(op.name)
        if rule is None:
            raise UnsupportedOpError(op.name, "index arithmetic the wrapper for every size cannot evaluate")
        return rule(*(self._evaluate(v, shape_of) for v in op.operands))

    def _dim(self, value: ir.Value, dim: int, shape_of: Callable[[ir.Value], list[Size]]) -> Size:
        """A `?` dim of `value`; of a reshape or an empty tensor the reification left
        (MLIR folds no dim of an expand_shape), from its operands."""
        op = _owner(value)
        t = ir.RankedTensorType(value.type)
        if not t.is_dynamic_dim(dim):
            return t.shape[dim]
        if op is not None and op.name in ("tensor.expand_shape", "tensor.empty"):
            sizes = list(op.operands)[1:] if op.name == "tensor.expand_shape" else list(op.operands)
            position = sum(t.is_dynamic_dim(d) for d in range(dim))
            return self._evaluate(sizes[position], shape_of)
        if op is not None and op.name == "tensor.collapse_shape":
            group = list(ir.ArrayAttr(op.attributes["reassociation"])[dim])
            return math.prod(self._dim(op.operands[0], ir.IntegerAttr(d).value, shape_of) for d in group)
        return shape_of(value)[dim]

    def _reify(self, module: ir.Module) -> None:
        """Every `?` dim of every op result in the entry, through a copy of the
        module where they are asked for and resolved (see the module docstring)."""
        copy = ir.Module.parse(str(module), module.context)
        entry = _entry(copy.operation)
        block = entry.entry_block
        ops = list(block.operations)
        ret = ops[-1]
        asked: list[tuple[int, int, int]] = []  # (op position, result, dim) per returned dim
        dims: list[ir.Value] = []
        with copy.context, ir.Location.unknown(), ir.InsertionPoint(ret):
            for position, op in enumerate(ops[:-1]):
                for r, result in enumerate(op.results):
                    if not isinstance(result.type, ir.RankedTensorType):
                        continue
                    t = ir.RankedTensorType(result.type)
                    for d in range(t.rank):
                        if t.is_dynamic_dim(d):
                            asked.append((position, r, d))
                            dims.append(tensor.DimOp(result, arith.ConstantOp(ir.IndexType.get(), d).result).result)
            if not asked:
                return
            func.ReturnOp([*ret.operands, *dims])
            kept = len(ret.operands)
            ret.erase()
            signature = ir.FunctionType(entry.attributes["function_type"].value)
            entry.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(signature.inputs, [*signature.results, *[ir.IndexType.get()] * len(dims)])
            )
            for op in copy.body.operations:
                if isinstance(op.opview, func.FuncOp) and ENTRY_ATTR not in op.attributes:
                    if PREPARE_ATTR in op.attributes:
                        op.operation.erase()
                    else:
                        op.attributes["sym_visibility"] = ir.StringAttr.get("private")
            try:
                passmanager.PassManager.parse(_REIFY).run(copy.operation)
            except ir.MLIRError as err:
                raise UnsupportedOpError("mlirc-host-wrapper", f"reifying the entry's sizes failed: {err}") from err
        resolved_ret = list(_entry(copy.operation).entry_block.operations)[-1]
        resolved = list(resolved_ret.operands)[kept:]
        pairs = list(zip(_entry(copy.operation).entry_block.arguments, self.entry.entry_block.arguments, strict=True))
        arg_shapes = {a: self.shapes[b] for a, b in pairs if b in self.shapes}
        saved = self.indices
        self.indices = {a: saved[b] for a, b in pairs if b in saved}

        def arg_shape(value: ir.Value) -> list[Size]:
            if value not in arg_shapes:
                raise UnsupportedOpError("tensor.dim", "a kernel result's size that does not resolve to the arguments'")
            return arg_shapes[value]

        try:
            values = [self._evaluate(v, arg_shape) for v in resolved]
        finally:
            self.indices = saved
        originals = list(self.entry.entry_block.operations)
        for (position, r, d), size in zip(asked, values, strict=True):
            result = originals[position].results[r]
            if result not in self.shapes:
                self.shapes[result] = list(ir.RankedTensorType(result.type).shape)
            self.shapes[result][d] = size

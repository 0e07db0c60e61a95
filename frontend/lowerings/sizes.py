"""Dynamo's symbolic sizes as `index` values in the imported function.

A symbolic graph's sizes are sympy expressions in Dynamo's symbols (`s0`, `2*s1`,
`s0//2`).  Each symbol is bound once, at the top of the function, to where it can
be read at run time: a dim of a tensor argument (`tensor.dim`) or an `index`
argument (a SymInt the graph takes); any size is then arithmetic on those.  The
sized ops (reshape, broadcast, iota) take the results as operands; every other
`?` dim follows from its op's operands (mlirc.dialects.dims).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy
import torch
from mlir import ir
from mlir.dialects import arith, tensor
from torch.utils._sympy import functions as torch_sympy

from mlirc.errors import UnsupportedOpError


def _index_constant(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _floor_div(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.floordivsi(a, b)


def _python_mod(a: ir.Value, b: ir.Value) -> ir.Value:
    """Python's a % b (the sign of b): remsi's, corrected where the signs differ."""
    rem = arith.remsi(a, b)
    zero = _index_constant(0)
    differ = arith.xori(arith.cmpi(arith.CmpIPredicate.slt, rem, zero), arith.cmpi(arith.CmpIPredicate.slt, b, zero))
    fix = arith.andi(differ, arith.cmpi(arith.CmpIPredicate.ne, rem, zero))
    return arith.select(fix, arith.addi(rem, b), rem)


# sympy function -> how its (two) arguments combine
_BINARY: dict[type, Callable[[ir.Value, ir.Value], ir.Value]] = {
    torch_sympy.FloorDiv: _floor_div,
    torch_sympy.CleanDiv: _floor_div,
    torch_sympy.PythonMod: _python_mod,
    torch_sympy.Mod: _python_mod,
    sympy.Mod: _python_mod,
    torch_sympy.Max: arith.maxsi,
    torch_sympy.Min: arith.minsi,
}


class SymbolicSizes:
    """The `index` value of each of Dynamo's symbols in one function, and of any size
    built from them (each expression emitted once, where first asked for)."""

    def __init__(self) -> None:
        self.symbols: dict[sympy.Symbol, ir.Value] = {}
        self.emitted: dict[sympy.Expr, ir.Value] = {}

    def bind_tensor(self, value: ir.Value, shape: Sequence[int | torch.SymInt]) -> None:
        """A tensor argument's dims that are a bare symbol bind it (the first one seen)."""
        for d, size in enumerate(shape):
            if isinstance(size, torch.SymInt) and isinstance(size.node.expr, sympy.Symbol):
                if size.node.expr not in self.symbols:
                    self.symbols[size.node.expr] = tensor.dim(value, _index_constant(d))

    def bind_value(self, size: torch.SymInt, value: ir.Value) -> None:
        if isinstance(size.node.expr, sympy.Symbol):
            self.symbols.setdefault(size.node.expr, value)

    def dim(self, size: int | torch.SymInt) -> int | ir.Value:
        """A size as a static dim (an int) or, where symbolic, its `index` value."""
        if isinstance(size, torch.SymInt):
            expr = size.node.expr
            return int(expr) if expr.is_number else self.value(expr)
        return int(size)

    def mixed(self, shape: Sequence[int | torch.SymInt]) -> list[int | ir.Value]:
        return [self.dim(d) for d in shape]

    def value(self, expr: sympy.Expr) -> ir.Value:
        if expr not in self.emitted:
            self.emitted[expr] = self._emit(expr)
        return self.emitted[expr]

    def _emit(self, expr: sympy.Expr) -> ir.Value:
        if expr.is_Integer:
            return _index_constant(int(expr))
        if isinstance(expr, sympy.Symbol):
            if expr not in self.symbols:
                raise UnsupportedOpError(str(expr), "a symbolic size that no argument binds")
            return self.symbols[expr]
        if isinstance(expr, (sympy.Add, sympy.Mul)):
            combine = arith.addi if isinstance(expr, sympy.Add) else arith.muli
            terms = [self.value(t) for t in expr.args]
            result = terms[0]
            for term in terms[1:]:
                result = combine(result, term)
            return result
        if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) > 0:
            base = self.value(expr.base)
            result = base
            for _ in range(int(expr.exp) - 1):
                result = arith.muli(result, base)
            return result
        combine2 = _BINARY.get(type(expr))
        if combine2 is not None:  # Max and Min may take more than two
            args = [self.value(a) for a in expr.args]
            result = args[0]
            for arg in args[1:]:
                result = combine2(result, arg)
            return result
        raise UnsupportedOpError(str(expr), f"a symbolic size of form {type(expr).__name__}")

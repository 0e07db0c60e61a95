"""The sizes of a Triton kernel's tensors when some are `?`: sympy expressions of the
kernel's size arguments (used by mlirc-gpu-lower-to-tt).

A kernel formed on `?` dims (a symbolic graph's kernels, compiled once for every
size) takes, after its pointers, every `?` dim of its buffers as an i64, in the CPU
kernels' order (passes/cpu/size_args.py size_arguments: inputs, then results).
Size argument i is the symbol `n<i>`; every other `?` size in the kernel (an empty
tensor's, a reshape's) is worked out from them: a generic's operands agree on each
loop dim, a reshape's groups multiply out.  linalg requires those equalities of any
call, so the kernel may rely on them: two arguments' sizes that one loop dim reads
become one symbol, and a range that equals a static size becomes that constant.
"""

from __future__ import annotations

import itertools
import math

import sympy
from mlir import ir
from torch.utils._sympy.functions import FloorDiv

from mlirc.errors import PipelineError
from mlirc.passes.base.linalg_utils import RESHAPES

PASS = "mlirc-gpu-lower-to-tt"
Size = int | sympy.Expr
# index arithmetic of sizes (>= 0: truncating division is floor division)
_INDEX_OPS = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": FloorDiv,
    "arith.divui": FloorDiv,
    "arith.floordivsi": FloorDiv,
}


def is_static(size: Size) -> bool:
    return isinstance(size, int) or bool(sympy.sympify(size).is_number)


def static_value(size: Size) -> int | None:
    return int(size) if is_static(size) else None


def known(size: Size, value: int) -> bool:
    """Is `size` the number `value` for every call?"""
    return is_static(size) and int(size) == value


def divides(block: int, size: Size) -> bool:
    """Does `block` divide `size` for every call (then no lane is out of bounds)?"""
    return sympy.Mod(sympy.sympify(size), block) == 0


def _tensor_shape(value: ir.Value) -> list[int | None]:
    if not isinstance(value.type, ir.RankedTensorType):
        return []
    t = ir.RankedTensorType(value.type)
    return [None if t.is_dynamic_dim(d) else t.shape[d] for d in range(t.rank)]


class KernelSizes:
    """Every tensor's sizes in one kernel, as expressions of its size arguments."""

    def __init__(self, kernel: str, memory: list[ir.Value], ops: list[ir.Operation]) -> None:
        self.kernel = kernel
        self.arguments: list[tuple[int, int]] = []  # (memory value, dim) of each size argument
        self.symbols: list[sympy.Symbol] = []
        self._fresh = itertools.count()
        self._subs: dict[sympy.Symbol, sympy.Expr] = {}
        self._shapes: dict[ir.Value, list[sympy.Expr]] = {}
        for k, value in enumerate(memory):
            self._shapes[value] = self._new_shape(value, k)
        for op in ops:
            for result in op.results:
                if result not in self._shapes and isinstance(result.type, ir.RankedTensorType):
                    self._shapes[result] = self._new_shape(result, None)
        if self._fresh_count or self.arguments:
            # each round solves for at least one symbol until nothing changes
            for _ in range(len(self.symbols) + self._fresh_count + 1):
                if not any([self._relate(op) for op in ops]):
                    break

    @property
    def _fresh_count(self) -> int:
        return len(
            [s for shape in self._shapes.values() for s in shape if isinstance(s, sympy.Symbol) and s.name[0] == "t"]
        )

    @property
    def dynamic(self) -> bool:
        return bool(self.arguments)

    def _new_shape(self, value: ir.Value, memory_index: int | None) -> list[sympy.Expr]:
        shape: list[sympy.Expr] = []
        for d, size in enumerate(_tensor_shape(value)):
            if size is not None:
                shape.append(sympy.Integer(size))
            elif memory_index is not None:
                symbol = sympy.Symbol(f"n{len(self.symbols)}", integer=True, nonnegative=True)
                self.symbols.append(symbol)
                self.arguments.append((memory_index, d))
                shape.append(symbol)
            else:  # worked out from the arguments' sizes below
                shape.append(sympy.Symbol(f"t{next(self._fresh)}", integer=True, nonnegative=True))
        return shape

    # -- what the ops say about sizes ---------------------------------------------------------

    def _relate(self, op: ir.Operation) -> bool:
        if op.name == "linalg.generic":
            return self._relate_generic(op)
        if op.name in RESHAPES:
            return self._relate_reshape(op)
        if op.name == "linalg.fill" and op.results[0] in self._shapes:
            return self._equate_shapes(self._shapes[op.operands[1]], self._shapes[op.results[0]])
        if op.name == "tensor.empty":
            dynamic = [d for d, n in enumerate(_tensor_shape(op.results[0])) if n is None]
            return self._equate_sizes(op.results[0], dynamic, list(op.operands))
        if op.name == "tensor.extract_slice":
            return self._relate_slice(op)
        return False

    def _relate_slice(self, op: ir.Operation) -> bool:
        """A slice's `?` sizes are its size operands (after its `?` offsets)."""
        marker = ir.ShapedType.get_dynamic_size()
        offsets, sizes = (list(ir.DenseI64ArrayAttr(op.attributes[k])) for k in ("static_offsets", "static_sizes"))
        if len(sizes) != len(_tensor_shape(op.results[0])):
            return False  # rank-reducing: its unit sizes are static
        operands = list(op.operands)[1 + offsets.count(marker) :]
        dynamic = [d for d, n in enumerate(sizes) if n == marker]
        return self._equate_sizes(op.results[0], dynamic, operands[: len(dynamic)])

    def _equate_sizes(self, value: ir.Value, dims: list[int], operands: list[ir.Value]) -> bool:
        changed = False
        for d, operand in zip(dims, operands, strict=True):
            size = self._index(operand)
            if size is not None:
                changed |= self._equate(self._shapes[value][d], size)
        return changed

    def _index(self, value: ir.Value) -> sympy.Expr | None:
        """An index value of the kernel's size arithmetic, where it is one."""
        op = value.owner
        if not isinstance(op, ir.OpView):
            return None  # an index argument: a value the host passes, no size of the kernel's
        op = op.operation
        if op.name == "arith.constant":
            return sympy.Integer(ir.IntegerAttr(op.attributes["value"]).value)
        if op.name == "tensor.dim":
            dim = self._index(op.operands[1])
            shape = self._shapes.get(op.operands[0])
            return shape[int(dim)] if dim is not None and shape is not None else None
        operands = [self._index(v) for v in op.operands]
        if op.name not in _INDEX_OPS or any(x is None for x in operands):
            return None
        return _INDEX_OPS[op.name](*operands)

    def _relate_generic(self, op: ir.Operation) -> bool:
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        values = list(op.operands)
        outs = len(op.results)
        pairs = list(zip(values, maps, strict=True)) + list(zip(op.results, maps[-outs:], strict=True))
        by_dim: dict[int, list[sympy.Expr]] = {}
        for value, amap in pairs:
            if value not in self._shapes:  # a scalar
                continue
            for expr, size in zip(amap.results, self._shapes[value], strict=True):
                if isinstance(expr, ir.AffineDimExpr):
                    by_dim.setdefault(ir.AffineDimExpr(expr).position, []).append(size)
        changed = False
        for sizes in by_dim.values():
            for other in sizes[1:]:
                changed |= self._equate(sizes[0], other)
        return changed

    def _relate_reshape(self, op: ir.Operation) -> bool:
        groups = [[ir.IntegerAttr(i).value for i in g] for g in ir.ArrayAttr(op.attributes["reassociation"])]
        source, result = self._shapes[op.operands[0]], self._shapes[op.results[0]]
        wide, narrow = (result, source) if op.name == "tensor.expand_shape" else (source, result)
        changed = False
        if op.name == "tensor.expand_shape":  # its `?` output sizes are operands
            dynamic = [d for d, n in enumerate(_tensor_shape(op.results[0])) if n is None]
            changed |= self._equate_sizes(op.results[0], dynamic, list(op.operands)[1:])
        for d, group in enumerate(groups):
            changed |= self._equate(narrow[d], sympy.Mul(*[wide[i] for i in group]))
        return changed

    def _equate_shapes(self, a: list, b: list) -> bool:
        return any([self._equate(x, y) for x, y in zip(a, b, strict=True)])

    def _equate(self, a: sympy.Expr, b: sympy.Expr) -> bool:
        """Record a == b by solving it for one symbol (an internal one first)."""
        a, b = self._canonical(a), self._canonical(b)
        if sympy.expand(a - b) == 0:
            return False
        # the internal symbols go first, then the later arguments' (results' sizes
        # become their inputs')
        order = lambda s: (not s.name.startswith("t"), -int(s.name[1:]))  # noqa: E731
        candidates = [(symbol, x, y) for x, y in ((a, b), (b, a)) for symbol in x.free_symbols]
        for symbol, x, y in sorted(candidates, key=lambda c: order(c[0])):
            solved = self._solve(x, symbol, y)
            if solved is not None:
                self._subs = {s: e.xreplace({symbol: solved}) for s, e in self._subs.items()}
                self._subs[symbol] = solved
                return True
        if a.is_number and b.is_number:
            raise PipelineError(PASS, f"kernel @{self.kernel}: sizes {a} and {b} of one loop dim differ")
        return False  # an equation it cannot solve: each side keeps its own expression

    @staticmethod
    def _solve(x: sympy.Expr, symbol: sympy.Symbol, y: sympy.Expr) -> sympy.Expr | None:
        """symbol from x == y, where x is symbol times a positive constant."""
        if symbol in y.free_symbols:
            return None
        coefficient, rest = x.as_coeff_Mul()
        if rest != symbol or not coefficient.is_positive or not coefficient.is_integer:
            return None
        return y if coefficient == 1 else FloorDiv(y, coefficient)

    def _canonical(self, expr: sympy.Expr) -> sympy.Expr:
        return sympy.sympify(expr).xreplace(self._subs)

    # -- answers ------------------------------------------------------------------------------

    def shape(self, value: ir.Value) -> list[Size]:
        """Sizes of `value`: ints where static, else expressions of the size arguments."""
        if value not in self._shapes:
            return list(_tensor_shape(value))  # type: ignore[arg-type]
        shape: list[Size] = []
        for size in self._shapes[value]:
            expr = self._canonical(size)
            unknown = [s for s in expr.free_symbols if s.name.startswith("t")]
            if unknown:
                raise PipelineError(PASS, f"kernel @{self.kernel}: a size no argument gives ({expr})")
            shape.append(int(expr) if expr.is_number else expr)
        return shape

    def numel(self, value: ir.Value) -> Size:
        return math.prod(self.shape(value)) if self.shape(value) else 1

"""What an mlirc op's `?` result dims are at run time, one rule per op family.

`shapes.py` says which dims are static; this says how to compute the others from
the operands (`tensor.dim`) and, for the sized ops (reshape, broadcast, iota), from
their `index` size operands.  Lowering to linalg asks here for the sizes of the
tensors it creates (`tensor.empty`).  A rule returns one entry per result dim: an
int where the dim is static, an `index` value where it is `?`.

Two operands with `?` at one position of an elementwise op have one size: torch's
broadcasting of two symbolic sizes asks whether they are equal or one of them is 1, a
guard the symbolic import refuses (frontend/dynamic.py no_new_guards) unless the
answer is known without one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, tensor

from mlirc.dialects import shapes
from mlirc.dialects.mlirc_dialect import BINARY_OPS, OPS, REDUCTION_OPS, UNARY_OPS
from mlirc.errors import UnsupportedOpError

Dim = int | ir.Value
Rule = Callable[[ir.Operation, list[ir.Value], list[ir.Value]], list[Dim]]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def wrap(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return wrap


def index_constant(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def dim_of(value: ir.Value, d: int) -> Dim:
    """Dim `d` of a tensor: its static size, or a `tensor.dim` of it."""
    size = shapes.shape_of(value)[d]
    return tensor.dim(value, index_constant(d)) if size is None else size


def as_index(dim: Dim) -> ir.Value:
    return index_constant(dim) if isinstance(dim, int) else dim


def add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return arith.addi(as_index(a), as_index(b))


def result_dims(op: ir.Operation, tensors: Sequence[ir.Value]) -> list[Dim]:
    """The result dims of `op`, computed from `tensors` (its tensor operands, or what
    stands for them, of the same shapes) and its size operands.  The static dims
    are the result type's; the rule is asked only where one is `?`."""
    out = shapes.shape_of(op.results[0])
    if None not in out:
        return list(out)
    name = op.name.removeprefix("mlirc.")
    if name not in RULES:
        raise UnsupportedOpError(op.name, "symbolic sizes")
    sizes = [v for v in op.operands if isinstance(v.type, ir.IndexType)]
    found = RULES[name](op, list(tensors), sizes)
    return [found_dim if d is None else d for d, found_dim in zip(out, found, strict=True)]


def _ints(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


@rule(*UNARY_OPS, *BINARY_OPS, "select", "fma", "convert")
def _elementwise(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    """A broadcast dim is the size of any operand whose dim there is not 1."""
    rank = len(shapes.shape_of(op.results[0]))
    dims: list[Dim] = []
    for d in range(rank):
        lead = rank - d
        sized = [t for t in tensors if len(shapes.shape_of(t)) >= lead and shapes.shape_of(t)[-lead] != 1]
        # a static size where an operand has one: it needs no tensor.dim
        sized.sort(key=lambda t: shapes.shape_of(t)[-lead] is None)
        dims.append(dim_of(sized[0], len(shapes.shape_of(sized[0])) - lead) if sized else 1)
    return dims


@rule(*(name for name, sig in OPS.items() if sig.sized))
def _given(op: ir.Operation, _tensors: list[ir.Value], sizes: list[ir.Value]) -> list[Dim]:
    given = iter(sizes)
    return [next(given) if d is None else d for d in shapes.shape_of(op.results[0])]


@rule(*REDUCTION_OPS)
def _reduction(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    rank = len(shapes.shape_of(tensors[0]))
    reduced = set(_ints(op, "dims"))
    keepdim = ir.BoolAttr(op.attributes["keepdim"]).value
    return [1 if d in reduced else dim_of(tensors[0], d) for d in range(rank) if keepdim or d not in reduced]


@rule("permute")
def _permute(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    return [dim_of(tensors[0], p) for p in _ints(op, "perm")]


@rule("concat")
def _concat(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    lhs, rhs = tensors
    along = ir.IntegerAttr(op.attributes["dim"]).value
    dims: list[Dim] = []
    for d in range(len(shapes.shape_of(lhs))):
        if d == along:
            dims.append(add(dim_of(lhs, d), dim_of(rhs, d)))
        else:
            dims.append(dim_of(lhs if shapes.shape_of(lhs)[d] is None else rhs, d))
    return dims


@rule("pad")
def _pad(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    low, high = _ints(op, "low"), _ints(op, "high")
    return [add(dim_of(tensors[0], d), lo + hi) for d, (lo, hi) in enumerate(zip(low, high, strict=True))]


@rule("gather")
def _gather(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    return [dim_of(tensors[1], d) for d in range(len(shapes.shape_of(tensors[1])))]


@rule("index_select")
def _index_select(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    x, index = tensors
    along = ir.IntegerAttr(op.attributes["dim"]).value
    return [dim_of(index, 0) if d == along else dim_of(x, d) for d in range(len(shapes.shape_of(x)))]


@rule("matmul", "batch_matmul")
def _matmul(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    lhs, rhs = tensors
    batch = [dim_of(lhs if shapes.shape_of(lhs)[0] is None else rhs, 0)] if len(shapes.shape_of(lhs)) == 3 else []
    return [*batch, dim_of(lhs, -2 % len(shapes.shape_of(lhs))), dim_of(rhs, len(shapes.shape_of(rhs)) - 1)]


def _window(size: Dim, kernel: int, stride: int, pad: int, dilation: int) -> Dim:
    """(size + 2 pad - dilation (kernel - 1) - 1) // stride + 1 (shapes.conv_output_size)."""
    if isinstance(size, int):
        return shapes.conv_output_size(size, kernel, stride, pad, pad, dilation)
    span = index_constant(2 * pad - dilation * (kernel - 1) - 1)
    return arith.addi(arith.floordivsi(arith.addi(size, span), index_constant(stride)), index_constant(1))


@rule("conv2d", "max_pool2d")
def _windowed(op: ir.Operation, tensors: list[ir.Value], _sizes: list[ir.Value]) -> list[Dim]:
    x = tensors[0]
    if op.name.endswith("conv2d"):
        kernel = list(shapes.shape_of(tensors[1])[2:])
        channels: Dim = shapes.shape_of(tensors[1])[0]
    else:
        kernel, channels = _ints(op, "kernel"), dim_of(x, 1)
    if None in kernel:
        raise UnsupportedOpError(op.name, "a window of symbolic size")
    stride, padding, dilation = (_ints(op, a) for a in ("stride", "padding", "dilation"))
    spatial = [_window(dim_of(x, 2 + i), kernel[i], stride[i], padding[i], dilation[i]) for i in range(2)]
    return [dim_of(x, 0), channels, *spatial]

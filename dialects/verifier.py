"""The mlirc dialect's verifier: what IRDL cannot say about an op.

IRDL checks that each op has its operands (builtin tensors), its one result and its
attributes; it cannot constrain a tensor's element type, nor
say that a reduction's dims are in range and distinct, that a permutation is one,
or that a convolution has two strides.  Those rules are here, one small
function per op family, keyed by op name like the lowering tables; `verify_ops`
returns one located message per broken op (mlirc-opt prints them as errors and
exits 1; the compile driver raises VerificationError).  Passes may then rely on
well-formed attributes instead of dying with an internal error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from mlir import ir

from mlirc.dialects import shapes
from mlirc.dialects.mlirc_dialect import (
    BINARY_OPS,
    FLOAT_OPS,
    INTEGER_OPS,
    OPS,
    PREDICATE_OPS,
    REDUCTION_OPS,
    UNARY_OPS,
)
from mlirc.errors import VerificationError

Rule = Callable[[ir.Operation], str | None]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def wrap(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return wrap


def _ints(op: ir.Operation, name: str) -> list[int]:
    """An array attribute as a list; VerificationError names it when it is not one."""
    attr = op.attributes[name]
    if not isinstance(attr, ir.DenseI64ArrayAttr):
        raise VerificationError(f"attribute '{name}' must be an array<i64: ...>, not {attr}")
    return list(attr)


def _int(op: ir.Operation, name: str) -> int:
    attr = op.attributes[name]
    if not isinstance(attr, ir.IntegerAttr) or isinstance(attr, ir.BoolAttr):
        raise VerificationError(f"attribute '{name}' must be an integer, not {attr}")
    return ir.IntegerAttr(attr).value


def _ranked(value: ir.Value) -> tuple[int | None, ...]:
    if not isinstance(value.type, ir.RankedTensorType):
        raise VerificationError(f"expects ranked tensors, got {value.type}")
    return shapes.shape_of(value)


def _in_range(dims: list[int], rank: int, what: str) -> str | None:
    if any(not 0 <= d < max(rank, 1) for d in dims):
        return f"{what} {dims} out of range for rank {rank}"
    if len(set(dims)) != len(dims):
        return f"{what} {dims} repeat a dim"
    return None


def _same_shape(expected: tuple[int | None, ...], op: ir.Operation) -> str | None:
    got = _ranked(op.results[0])
    same = len(got) == len(expected) and all(
        a is None or b is None or a == b for a, b in zip(got, expected, strict=True)
    )
    return None if same else f"result shape {list(got)} but the operands give {list(expected)}"


@rule(*UNARY_OPS, *BINARY_OPS, "select", "fma", "convert")
def _elementwise(op: ir.Operation) -> str | None:
    try:
        expected = shapes.broadcast_shapes(*(_ranked(v) for v in op.operands))
    except VerificationError as err:
        return str(err)
    return _same_shape(expected, op)


@rule(*REDUCTION_OPS)
def _reduction(op: ir.Operation) -> str | None:
    shape = _ranked(op.operands[0])
    dims = _ints(op, "dims")
    if not isinstance(op.attributes["keepdim"], ir.BoolAttr):
        return "attribute 'keepdim' must be true or false"
    problem = _in_range(dims, len(shape), "dims")
    if problem:
        return problem
    if op.name.endswith(("argmax", "argmin")) and len(dims) > 1:
        return "argmax/argmin reduce one dim"
    keepdim = ir.BoolAttr(op.attributes["keepdim"]).value
    return _same_shape(shapes.reduced_shape(shape, dims, keepdim) if shape else (), op)


@rule("permute")
def _permute(op: ir.Operation) -> str | None:
    shape, perm = _ranked(op.operands[0]), _ints(op, "perm")
    if sorted(perm) != list(range(len(shape))):
        return f"perm {perm} is not a permutation of {len(shape)} dims"
    return _same_shape(tuple(shape[p] for p in perm), op)


@rule("slice")
def _slice(op: ir.Operation) -> str | None:
    shape, out = _ranked(op.operands[0]), _ranked(op.results[0])
    starts, steps = _ints(op, "starts"), _ints(op, "steps")
    if not len(starts) == len(steps) == len(shape) == len(out):
        return f"starts and steps need {len(shape)} entries each (the rank), got {len(starts)} and {len(steps)}"
    for d, (size, start, step, n) in enumerate(zip(shape, starts, steps, out, strict=True)):
        if step < 1 or start < 0:
            return f"dim {d}: start {start} and step {step} must be >= 0 and >= 1"
        if size is not None and n is not None and n and start + (n - 1) * step >= size:
            return f"dim {d}: {n} elements from {start} every {step} run past its size {size}"
    return None


@rule("concat")
def _concat(op: ir.Operation) -> str | None:
    lhs, rhs, out = (_ranked(v) for v in (*op.operands, op.results[0]))
    dim = _int(op, "dim")
    problem = _in_range([dim], len(out), "dim")
    if problem or not len(lhs) == len(rhs) == len(out):
        return problem or "operands and result must have one rank"
    for d, (a, c, o) in enumerate(zip(lhs, rhs, out, strict=True)):
        if None in (a, c, o):
            continue
        if (d == dim and a + c != o) or (d != dim and not a == c == o):  # type: ignore[operator]
            return f"shapes {list(lhs)} and {list(rhs)} do not concatenate to {list(out)} along dim {dim}"
    return None


@rule("pad")
def _pad(op: ir.Operation) -> str | None:
    shape = _ranked(op.operands[0])
    low, high = _ints(op, "low"), _ints(op, "high")
    if not len(low) == len(high) == len(shape):
        return f"low and high need {len(shape)} entries each (the rank)"
    if any(p < 0 for p in low + high):
        return "padding must be >= 0"
    grown = tuple(None if s is None else s + lo + hi for s, lo, hi in zip(shape, low, high, strict=True))
    return _same_shape(grown, op)


@rule("gather", "index_select", "iota")
def _dim_in_range(op: ir.Operation) -> str | None:
    value = op.results[0] if op.name.endswith("iota") else op.operands[0]
    return _in_range([_int(op, "dim")], len(_ranked(value)), "dim")


@rule("scatter_add")
def _scatter_add(op: ir.Operation) -> str | None:
    x, index, src = (_ranked(v) for v in op.operands)
    if len(x) != 2 or len(index) != 1 or len(src) != 2:
        return "expects x [T, R], index [K] and src [K, R]"
    if not isinstance(shapes.elem_of(op.operands[1]), ir.IntegerType):
        return "index must be an integer tensor"
    if shapes.elem_of(op.operands[0]) != shapes.elem_of(op.operands[2]):
        return "x and src element types differ"
    if not _fits(index[0], src[0]) or not _fits(x[1], src[1]):
        return f"src {list(src)} does not match index {list(index)} and x {list(x)}"
    return _same_shape(x, op)


def _fits(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


@rule("matmul", "batch_matmul")
def _matmul(op: ir.Operation) -> str | None:
    rank = 2 if op.name.endswith(".matmul") else 3
    lhs, rhs = _ranked(op.operands[0]), _ranked(op.operands[1])
    if len(lhs) != rank or len(rhs) != rank:
        return f"expects rank-{rank} operands"
    if None not in (lhs[-1], rhs[-2]) and lhs[-1] != rhs[-2]:
        return f"inner dims differ: {list(lhs)} @ {list(rhs)}"
    return _same_shape((*lhs[:-1], rhs[-1]), op)


def _window_attrs(op: ir.Operation, names: tuple[str, ...]) -> str | None:
    for name in names:
        values = _ints(op, name)
        if len(values) != 2:
            return f"attribute '{name}' needs 2 entries (height, width), got {values}"
        if any(v < (0 if name == "padding" else 1) for v in values):
            return f"attribute '{name}' {values} must be {'>= 0' if name == 'padding' else '>= 1'}"
    return None


@rule("conv2d")
def _conv2d(op: ir.Operation) -> str | None:
    x, w = _ranked(op.operands[0]), _ranked(op.operands[1])
    if len(x) != 4 or len(w) != 4:
        return "expects NCHW input and OIHW weight"
    groups = _int(op, "groups")
    if groups < 1 or (x[1] is not None and w[1] is not None and x[1] != w[1] * groups):
        return f"groups {groups} with {x[1]} input channels and weight {list(w)}"
    return _window_attrs(op, ("stride", "padding", "dilation"))


@rule("max_pool2d")
def _max_pool2d(op: ir.Operation) -> str | None:
    if len(_ranked(op.operands[0])) != 4:
        return "expects an NCHW input"
    return _window_attrs(op, ("kernel", "stride", "padding", "dilation"))


def _sizes_match(op: ir.Operation) -> str | None:
    """A sized op has one `index` size per `?` dim of its result, after its tensors."""
    sizes = [v for v in op.operands if isinstance(v.type, ir.IndexType)]
    dynamic = sum(d is None for d in _ranked(op.results[0]))
    if len(sizes) != dynamic:
        return f"has {len(sizes)} size operands for {dynamic} dynamic result dims"
    return None


@rule("reshape")
def _reshape(op: ir.Operation) -> str | None:
    source, out = _ranked(op.operands[0]), _ranked(op.results[0])
    if None not in source and None not in out and math.prod(source) != math.prod(out):
        return f"reshapes {list(source)} ({math.prod(source)} elements) to {list(out)}"
    return None


@rule("broadcast")
def _broadcast(op: ir.Operation) -> str | None:
    source, out = _ranked(op.operands[0]), _ranked(op.results[0])
    lead = len(out) - len(source)
    bad = lead < 0 or any(s not in (1, None) and s != out[lead + i] for i, s in enumerate(source))
    return f"cannot broadcast {list(source)} to {list(out)}" if bad else None


@rule("constant")
def _constant(op: ir.Operation) -> str | None:
    value = op.attributes["value"]
    if not isinstance(value, ir.DenseElementsAttr) or value.type != op.results[0].type:
        return f"value must be dense elements of the result type {op.results[0].type}"
    return None


def _element_types(name: str, op: ir.Operation) -> str | None:
    """The element types FLOAT_OPS, INTEGER_OPS and PREDICATE_OPS take and give."""
    inputs = [shapes.elem_of(v) for v in op.operands if isinstance(v.type, ir.ShapedType)]
    result = shapes.elem_of(op.results[0])
    if name in FLOAT_OPS and not all(shapes.is_float(t) for t in [*inputs, result]):
        return f"takes and gives floats, not {', '.join(map(str, inputs))} -> {result}"
    if name in INTEGER_OPS and not all(isinstance(t, ir.IntegerType) for t in [*inputs, result]):
        return f"takes and gives integers or bools, not {', '.join(map(str, inputs))} -> {result}"
    if name in PREDICATE_OPS and not shapes.is_bool(result):
        return f"gives bools (i1), not {result}"
    return None


def _problem(op: ir.Operation) -> str | None:
    name = op.name.removeprefix("mlirc.")
    sized = name in OPS and OPS[name].sized
    try:
        tensors = [v for v in [*op.operands, *op.results] if not isinstance(v.type, ir.IndexType)]
        if any(not isinstance(v.type, ir.ShapedType) for v in tensors):
            return None  # IRDL's diagnostic (builtin tensors only) is the one to show
        return (
            (_sizes_match(op) if sized else None)
            or _element_types(name, op)
            or (RULES[name](op) if name in RULES else None)
        )
    except VerificationError as err:
        return str(err)


def _walk(op: ir.Operation) -> Iterator[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk(inner.operation)


def verify_ops(root: ir.Operation) -> list[str]:
    """'<location>: error: '<op>' op <problem>' for each ill-formed mlirc op under `root`."""
    found = []
    for op in _walk(root):
        if op.name.startswith("mlirc.") and (problem := _problem(op)) is not None:
            found.append(f"{op.location}: error: '{op.name}' op {problem}")
    return found

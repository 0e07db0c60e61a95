"""mlirc-split-reductions: long floating-point sums as a cascade of short ones.

A vectorized sum keeps a few dozen partial sums, each of which adds up K / lanes
values one after the other: its rounding error grows with that chain.  Over 2^24
float32 values the result was off by 2.5e-3 (eager's cascade sum: 5e-7).  Here a
sum over a dim longer than a few chunks becomes a sum of chunk sums: the dim
splits into [K // C, C], the chunks are summed, then their sums (recursively,
while they are still many), and the K % C left over are one more short sum added
at the end.  Every chain is then short whatever K is, the order is fixed (the
same result from call to call), and the chunk loop is a parallel dim that
threads share, where a whole-tensor sum used to run on one.

It works on the mlirc dialect, before lowering, with limits the backend chooses (its
options; the defaults are the CPU's, mlirc.backends.gpu.PASS_OPTIONS the GPU's).  A
sum over several dims is taken one dim at a time (runs of adjacent dims merged first).
A dim whose later dims are all 1 is the contiguous, vectorized one: its chunks are
long; a chunk of any other dim is one sequential add per step in every lane, so
its chunks are short.  On a GPU a program reduces a whole tile as a tree, so chains
are short anyway: there a split is for long sums of few rows, which one program per
row would walk alone, and rows a row group keeps whole stay unsplit (a softmax or an
RMS norm over 4096 is one kernel, not four).

Whether a sum over `?` values splits depends on its length.  By default it waits for
the sizes (passes/base/ir_utils.py defer).  With `assume-short-sums` it is compiled
unsplit, under a `cf.assert` that no split is due (the negation of `_splits` on its
length): a symbolic graph then forms its kernels once for every size that keeps the
assertion (a softmax over a sequence of up to 2048 on the CPU), and mlirc-bind-sizes refuses a
size that breaks it (frontend/compile.py SymbolicRegion lowers the graph again,
deferring).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, cf

from mlirc.dialects import builders as b
from mlirc.dialects import dims as size_of
from mlirc.dialects import shapes
from mlirc.passes.base.ir_utils import defer, erase_op, nested_ops, resume_deferred
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-split-reductions"


@dataclass(frozen=True)
class Limits:
    """(chunk, split when longer than) for a contiguous dim and for any other; and
    `long_rows`, (longest, fewest rows): a contiguous sum up to that long stays whole
    when there are at least that many rows of it (static sizes)."""

    contiguous: tuple[int, int]
    strided: tuple[int, int]
    long_rows: tuple[int, int] | None = None

    def of(self, contiguous: bool) -> tuple[int, int]:
        return self.contiguous if contiguous else self.strided


@dataclass(frozen=True)
class SplitReductionsOptions:
    assume_short_sums: bool = False
    # A contiguous dim's chunk is 16 steps of a 32-lane vector block (AVX-512 f32,
    # unrolled 4 x 16, is 64 lanes: 8 steps); a step of any other dim adds one value to
    # every lane: its chunks are short (eager's cascade sum adds 16 values per level on
    # such columns).  (chunk, split when longer than): Limits.
    contiguous_chunk: tuple[int, ...] = (512, 2048)
    strided_chunk: tuple[int, ...] = (16, 128)
    long_rows: tuple[int, ...] | None = None

    @property
    def limits(self) -> Limits:
        return Limits(self.contiguous_chunk, self.strided_chunk, self.long_rows)  # type: ignore[arg-type]


def _split_dim(x: ir.Value, dim: int, limits: Limits) -> ir.Value:
    """The sum of `x` over `dim`, kept as a size-1 dim, as a cascade of short sums."""
    shape = list(shapes.shape_of(x))
    size = shape[dim]
    if not _splits(shape, dim, limits):
        return b.reduce("reduce_sum", x, [dim], True)
    chunk, _ = limits.of(all(d == 1 for d in shape[dim + 1 :]))
    count, rest = divmod(size, chunk)
    head = _slice(x, dim, 0, count * chunk)
    head = b.reshape(head, [*shape[:dim], count, chunk, *shape[dim + 1 :]])
    total = _split_dim(b.reduce("reduce_sum", head, [dim + 1], False), dim, limits)
    if rest:
        tail = b.reduce("reduce_sum", _slice(x, dim, count * chunk, size), [dim], True)
        total = b.elementwise("add", total, tail)
    return total


def _slice(x: ir.Value, dim: int, start: int, stop: int) -> ir.Value:
    shape = list(shapes.shape_of(x))
    if (start, stop) == (0, shape[dim]):
        return x
    rank = len(shape)
    starts = [0] * rank
    starts[dim] = start
    shape[dim] = stop - start
    return b.create("slice", [x], shapes.tensor_type(shape, shapes.elem_of(x)), starts=starts, steps=[1] * rank)


def _merged(shape: list[int], dims: list[int], cut_for: Limits | None = None) -> tuple[list[int], list[int]]:
    """The shape with each run of adjacent reduced dims collapsed into one, and the
    reduced dims in it.  With `cut_for`, a run that splits is cut between its own dims
    where its inner dims alone make a chunk (at most the chunk, at least an eighth of
    it): summed over those first, then over the outer ones.  A chunk that cuts across
    the run's dims (1600 = 40 x 40 in chunks of 256) needs a tail slice and a reshape
    that no elementwise producer fuses through (the x * x before a sum over H x W was a
    kernel of its own); one at a boundary is a plain sum over the input's own dims."""
    merged: list[int] = []
    reduced: list[int] = []
    for d, size in enumerate(shape):
        if d in dims and d - 1 in dims:
            continue
        run = [size]
        while d in dims and d + len(run) in dims:
            run.append(shape[d + len(run)])
        cut = _boundary(run, shape[d + len(run) :], cut_for) if d in dims and cut_for else None
        for part in [run] if cut is None else [run[:cut], run[cut:]]:
            if d in dims:
                reduced.append(len(merged))
            merged.append(math.prod(part))
    return merged, reduced


def _boundary(run: list[int], later: list[int], limits: Limits) -> int | None:
    """Where to cut a run of reduced dims that splits: the outermost cut whose inner
    dims make a chunk."""
    chunk, _ = limits.of(all(s == 1 for s in later))
    if not _splits([math.prod(run), *later], 0, limits):
        return None
    for cut in range(1, len(run)):
        if max(2, chunk // 8) <= math.prod(run[cut:]) <= chunk:
            return cut
    return None


def _long_rows_stay_whole(shape: list, dims: list[int], limits: Limits) -> bool:
    """A sum over the contiguous end of many rows that the target walks whole
    (Limits.long_rows)?"""
    if limits.long_rows is None or any(not isinstance(d, int) or d < 0 for d in shape):
        return False
    longest, fewest_rows = limits.long_rows
    merged, reduced = _merged(shape, dims)
    length, rows = merged[-1], math.prod(merged[:-1])
    return reduced == [len(merged) - 1] and length <= longest and rows >= fewest_rows


def _splits(shape: list[int], dim: int, limits: Limits) -> bool:
    _, longest = limits.of(all(d == 1 for d in shape[dim + 1 :]))
    return shape[dim] > longest


def _long_float_sum(op: ir.Operation, assume_short: bool, limits: Limits) -> bool:
    """Is `op` a float sum to split?  One whose split depends on symbolic sizes is
    compiled unsplit under an assertion (`assume_short`) or marked deferred instead
    (False either way), and split once they are bound."""
    if op.name != "mlirc.reduce_sum" or not shapes.is_float(shapes.elem_of(op.results[0])):
        return False
    x = op.operands[0]
    shape = list(shapes.shape_of(x))
    dims = sorted(ir.DenseI64ArrayAttr(op.attributes["dims"]))
    if not dims or _long_rows_stay_whole(shape, dims, limits):
        return False
    # How a sum splits depends on its length and on the dims after it (a derived `?`
    # dim, s0 - 1, may be 1), and the cascade's reshapes and slices take static shapes.
    short = _short(shape[dims[0] :], [d - dims[0] for d in dims], limits)
    if short is True or (short is False and None not in shape):
        return not short
    if short is None and assume_short:
        with ir.InsertionPoint(op), op.location:
            sizes = [size_of.dim_of(x, d) for d in range(dims[0], len(shape))]
            message = (
                f"{NAME}: a sum of symbolic length was compiled unsplit, for lengths up to"
                f" {limits.contiguous[1]} (contiguous) or {limits.strided[1]} (strided)"
            )
            cf.assert_(_short(sizes, [d - dims[0] for d in dims], limits), message)
        return False
    _defer_with_broadcast(op)
    return False


# A size or a condition: known now (int, bool), read at run time (`index` or i1 value,
# computed in the IR), or unknown (None: a `?` size, when deciding without the IR).
Size = int | ir.Value | None
Bit = bool | ir.Value | None


def _short(sizes: list[Size], dims: list[int], limits: Limits) -> Bit:
    """Does a sum over `dims` of a tensor of `sizes` need no split (_splits on its
    merged shape)?  `dims` start at 0: the sizes before the first are not needed."""
    runs: list[list[Size]] = []  # the merged shape
    reduced: list[int] = []
    for d, size in enumerate(sizes):
        if d in dims and d - 1 in dims:
            runs[-1].append(size)
            continue
        if d in dims:
            reduced.append(len(runs))
        runs.append([size])
    short: Bit = True
    for r in reduced:
        length = _product(runs[r])
        later = _product([size for run in runs[r + 1 :] for size in run])
        if isinstance(later, int):
            _, longest = limits.of(later == 1)
            short = _and(short, _at_most(length, longest))
        else:
            contiguous_short = _and(_equals(later, 1), _at_most(length, limits.contiguous[1]))
            short = _and(short, _or(_at_most(length, limits.strided[1]), contiguous_short))
    return short


def _product(sizes: list[Size]) -> Size:
    if any(size is None for size in sizes):
        return None
    total: Size = 1
    for i, size in enumerate(sizes):
        if isinstance(total, int) and isinstance(size, int):
            total *= size
        else:
            total = size if i == 0 else arith.muli(size_of.as_index(total), size_of.as_index(size))
    return total


def _compare(predicate: arith.CmpIPredicate, size: Size, bound: int) -> Bit:
    if size is None:
        return None
    if isinstance(size, int):
        return size <= bound if predicate == arith.CmpIPredicate.ule else size == bound
    return arith.cmpi(predicate, size, size_of.index_constant(bound))


def _at_most(size: Size, bound: int) -> Bit:
    return _compare(arith.CmpIPredicate.ule, size, bound)


def _equals(size: Size, value: int) -> Bit:
    return _compare(arith.CmpIPredicate.eq, size, value)


def _logical(a: Bit, b: Bit, absorbing: bool, build: Callable[[ir.Value, ir.Value], ir.Value]) -> Bit:
    """a AND b (`absorbing` False) or a OR b (True), with None unknown: decided where
    the known side decides, computed in the IR where both are values."""
    if a is absorbing or b is absorbing:
        return absorbing
    if a is (not absorbing) or b is (not absorbing):
        return b if a is (not absorbing) else a
    return None if a is None or b is None else build(a, b)


def _and(a: Bit, b: Bit) -> Bit:
    return _logical(a, b, False, arith.andi)


def _or(a: Bit, b: Bit) -> Bit:
    return _logical(a, b, True, arith.ori)


def _defer_with_broadcast(op: ir.Operation) -> None:
    """A broadcast that the sum reads waits too: the cascade's slices of it become
    broadcasts of slices (mlirc-slice-broadcasts), not slices of a materialized one."""
    defer(op, NAME)
    owner = op.operands[0].owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "mlirc.broadcast":
        defer(owner.operation, NAME)


def _cascade(op: ir.Operation, limits: Limits) -> ir.Value:
    dims = sorted(ir.DenseI64ArrayAttr(op.attributes["dims"]))
    shape, dims = _merged(list(shapes.shape_of(op.operands[0])), dims, cut_for=limits)
    x = b.reshape(op.operands[0], shape)
    elem = shapes.elem_of(x)
    half = isinstance(elem, (ir.BF16Type, ir.F16Type))
    if half:  # eager sums halves in float32 and rounds once: the partial sums stay f32
        x = b.convert(x, ir.F32Type.get())
    for dim in reversed(dims):  # innermost first: its sums are the contiguous ones
        x = _split_dim(x, dim, limits)
    x = b.convert(x, elem) if half else x
    return b.reshape(x, shapes.shape_of(op.results[0]))


@register_pass(NAME, "Long floating-point sums as a cascade of short, fixed-order sums", SplitReductionsOptions)
def split_reductions(module: ir.Operation, options: SplitReductionsOptions) -> None:
    resume_deferred(module, NAME)
    limits = options.limits
    for op in [op for op in nested_ops(module) if _long_float_sum(op, options.assume_short_sums, limits)]:
        with ir.InsertionPoint(op), op.location:
            total = _cascade(op, limits)
        op.results[0].replace_all_uses_with(total)
        erase_op(op)
